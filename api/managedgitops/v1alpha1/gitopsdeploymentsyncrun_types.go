/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitOpsDeploymentSyncRunSpec names the GitOpsDeployment to deploy, and optionally the
// revision to deploy. It cannot be changed once created: create a new
// GitOpsDeploymentSyncRun to deploy again.
//
// +kubebuilder:validation:XValidation:rule="has(self.revisionID) == has(oldSelf.revisionID) && (!has(self.revisionID) || self.revisionID == oldSelf.revisionID)",message="spec.revisionID is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.revisionId) == has(oldSelf.revisionId) && (!has(self.revisionId) || self.revisionId == oldSelf.revisionId)",message="spec.revisionId is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.revisionId) || !has(self.revisionID) || self.revisionId == self.revisionID",message="spec.revisionId is an older spelling of spec.revisionID and names another revision; set only spec.revisionID",fieldPath=".revisionId"
type GitOpsDeploymentSyncRunSpec struct {
	// GitopsDeploymentName is the name of the GitOpsDeployment, in the same namespace, to
	// deploy. It should be of type "manual"; a SyncRun of an automated GitOpsDeployment is
	// reported as an error in the status.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.gitopsDeploymentName is immutable"
	GitopsDeploymentName string `json:"gitopsDeploymentName"`

	// RevisionID is the Git commit (or branch or tag) to deploy. When empty, the
	// GitOpsDeployment's spec.source.targetRevision is deployed.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	RevisionID string `json:"revisionID,omitempty"`

	// DeprecatedRevisionId (revisionId) is the spelling of older documents for revisionID;
	// deprecated, write revisionID. It is used when revisionID is empty; when both are set
	// they must be equal.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	DeprecatedRevisionId string `json:"revisionId,omitempty"`
}

// GitOpsDeploymentSyncRunStatus is the outcome of a GitOpsDeploymentSyncRun.
type GitOpsDeploymentSyncRunStatus struct {
	// ObservedGeneration is the metadata.generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Health is the health of the GitOpsDeployment's resources after the deployment:
	// Healthy, Progressing, Degraded, Suspended, Missing or Unknown.
	// +optional
	Health HealthStatusCode `json:"health,omitempty"`

	// SyncStatus says whether the GitOpsDeployment's resources match the repository after the
	// deployment: Synced, OutOfSync or Unknown.
	// +optional
	SyncStatus SyncStatusCode `json:"syncStatus,omitempty"`

	// Revision is the revision whose sync this SyncRun requested: spec.revisionID (or
	// spec.revisionId), else the GitOpsDeployment's spec.source.targetRevision at that
	// time. Empty until the sync is requested, and when both are empty (the repository's
	// default branch).
	// +optional
	Revision string `json:"revision,omitempty"`

	// Conditions report errors met while carrying out the SyncRun (type ErrorOccurred) and,
	// as kstatus reads them, whether its sync succeeded (Ready), runs (Reconciling) or failed
	// (Stalled).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []GitOpsDeploymentCondition `json:"conditions,omitempty"`
}

const (
	// GitOpsDeploymentSyncRunConditionErrorOccurred is True while the SyncRun cannot be
	// carried out (for example its GitOpsDeployment does not exist or is automated).
	GitOpsDeploymentSyncRunConditionErrorOccurred GitOpsDeploymentConditionType = "ErrorOccurred"

	// GitOpsDeploymentSyncRunReasonErrorOccurred: an error occurred (ErrorOccurred is True).
	GitOpsDeploymentSyncRunReasonErrorOccurred GitOpsDeploymentReasonType = "ErrorOccurred"

	// GitOpsDeploymentSyncRunReasonErrorOccurredResolved: the earlier error is gone
	// (ErrorOccurred is False).
	GitOpsDeploymentSyncRunReasonErrorOccurredResolved GitOpsDeploymentReasonType = "ErrorOccurredResolved"
)

// GitOpsDeploymentSyncRun asks for one deployment of a (manual) GitOpsDeployment: the GitOps
// Service refreshes the repository and deploys its contents, or the given revision.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitopsdeplsyncrun,categories=gitops
// +kubebuilder:printcolumn:name="GitOpsDeployment",type=string,JSONPath=`.spec.gitopsDeploymentName`,description="The GitOpsDeployment deployed"
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`,priority=1,description="The revision whose sync was requested"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the sync succeeded"
// +kubebuilder:printcolumn:name="Sync Status",type=string,JSONPath=`.status.syncStatus`
// +kubebuilder:printcolumn:name="Health Status",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitOpsDeploymentSyncRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the requested deployment.
	// +required
	Spec GitOpsDeploymentSyncRunSpec `json:"spec"`

	// Status is the outcome of the deployment.
	// +optional
	Status GitOpsDeploymentSyncRunStatus `json:"status,omitempty"`
}

// GitOpsDeploymentSyncRunList is a list of GitOpsDeploymentSyncRuns.
//
// +kubebuilder:object:root=true
type GitOpsDeploymentSyncRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the GitOpsDeploymentSyncRuns.
	Items []GitOpsDeploymentSyncRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitOpsDeploymentSyncRun{}, &GitOpsDeploymentSyncRunList{})
}
