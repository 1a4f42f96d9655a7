/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-service/gitops-service/api/internal/register"
)

var (
	// GroupVersion is the API group and version of the core GitOps Service API.
	GroupVersion = schema.GroupVersion{Group: "managed-gitops.redhat.com", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &register.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
