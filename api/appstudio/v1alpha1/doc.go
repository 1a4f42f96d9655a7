/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

// Package v1alpha1 holds the AppStudio environment API (group appstudio.redhat.com) that the
// GitOps Service reconciles: Environment, Snapshot, SnapshotEnvironmentBinding, PromotionRun,
// and the DeploymentTarget / DeploymentTargetClaim / DeploymentTargetClass provisioning API.
//
// The GitOps Service translates these resources into the core API of the
// managed-gitops.redhat.com group (for example a SnapshotEnvironmentBinding becomes one
// GitOpsDeployment per component).
//
// +kubebuilder:object:generate=true
// +groupName=appstudio.redhat.com
package v1alpha1
