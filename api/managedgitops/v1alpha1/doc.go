/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

// Package v1alpha1 holds the core GitOps Service API (group managed-gitops.redhat.com):
// GitOpsDeployment, GitOpsDeploymentSyncRun, GitOpsDeploymentManagedEnvironment,
// GitOpsDeploymentRepositoryCredential, and the internal Operation resource.
//
// These types describe the user-facing contract documented in spec/api.md. They carry no
// logic and import nothing beyond Kubernetes' API machinery, so that any component (and any
// client of the service) can depend on them cheaply.
//
// +kubebuilder:object:generate=true
// +groupName=managed-gitops.redhat.com
package v1alpha1
