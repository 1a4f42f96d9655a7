/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

// Package v1alpha1 holds the SpaceRequest type of the Developer Sandbox (toolchain) API,
// group toolchain.dev.openshift.com, as far as the GitOps Service's
// appstudio.redhat.com/devsandbox DeploymentTarget provisioner uses it. It is compatible with
// the sandbox's own SpaceRequest: the provisioner creates SpaceRequests and reads their
// status; the sandbox service (or, in tests and installs without it, whoever plays it) fills
// the status.
//
// Its CRD (manifests/crd/toolchain) is not part of the GitOps Service's install: on a cluster
// with the sandbox service the sandbox installs it.
//
// +kubebuilder:object:generate=true
// +groupName=toolchain.dev.openshift.com
package v1alpha1
