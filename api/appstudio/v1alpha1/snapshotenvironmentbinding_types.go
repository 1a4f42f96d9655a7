/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotEnvironmentBindingSpec binds an Application, an Environment and a Snapshot: the
// Snapshot's images of the Application's components are deployed to the Environment.
type SnapshotEnvironmentBindingSpec struct {
	// Application is the name of the Application, in the same namespace, to deploy. It cannot
	// be changed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.application is immutable"
	Application string `json:"application"`

	// Environment is the name of the Environment, in the same namespace, to deploy to. It
	// cannot be changed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.environment is immutable"
	Environment string `json:"environment"`

	// Snapshot is the name of the Snapshot, in the same namespace, whose images are deployed.
	// Change it to deploy another version of the Application (this is what a promotion does).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Snapshot string `json:"snapshot"`

	// Components holds component-specific configuration for this Environment, used when the
	// GitOps repository resources are generated.
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []BindingComponent `json:"components,omitempty"`
}

// BindingComponent is the configuration of one component in the bound Environment.
type BindingComponent struct {
	// Name is the name of a Component of the Application.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Configuration overrides the Application's, Component's and Environment's settings for
	// this component in this Environment.
	// +optional
	Configuration BindingComponentConfiguration `json:"configuration,omitempty"`
}

// BindingComponentConfiguration is the configuration of a component in an Environment.
type BindingComponentConfiguration struct {
	// Env lists environment variables of the component in this Environment.
	// +optional
	Env []EnvVarPair `json:"env,omitempty"`

	// Replicas is the number of replicas of the component in this Environment.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources are the compute resources of the component in this Environment.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// DeploymentSyncStatus is the sync status of a generated GitOpsDeployment, as reported in its
// status: Synced, OutOfSync or Unknown (empty until known).
// +kubebuilder:validation:Enum=Synced;OutOfSync;Unknown;""
type DeploymentSyncStatus string

// DeploymentHealthStatus is the health of a generated GitOpsDeployment, as reported in its
// status: Healthy, Progressing, Degraded, Suspended, Missing or Unknown (empty until known).
// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Suspended;Missing;Unknown;""
type DeploymentHealthStatus string

// SnapshotEnvironmentBindingStatus is the observed state of a SnapshotEnvironmentBinding.
type SnapshotEnvironmentBindingStatus struct {
	// ObservedGeneration is the metadata.generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// GitOpsDeployments lists the GitOpsDeployments that deploy the Application's components
	// to the Environment, one per component, with their sync and health status.
	// +optional
	GitOpsDeployments []BindingStatusGitOpsDeployment `json:"gitopsDeployments,omitempty"`

	// Components describes where each component's resources are in the GitOps repository.
	// It is written by the Application Service.
	// +optional
	Components []BindingComponentStatus `json:"components,omitempty"`

	// GitOpsRepoConditions report on the generation of the GitOps repository resources. They
	// are written by the Application Service.
	// +optional
	// +listType=map
	// +listMapKey=type
	GitOpsRepoConditions []metav1.Condition `json:"gitopsRepoConditions,omitempty"`

	// BindingConditions report errors of the GitOps Service's binding reconciler (type
	// ErrorOccurred).
	// +optional
	// +listType=map
	// +listMapKey=type
	BindingConditions []metav1.Condition `json:"bindingConditions,omitempty"`

	// ComponentDeploymentConditions report how many of the components are deployed (type
	// AllComponentsDeployed, with a message such as "1 of 3 components deployed").
	// +optional
	// +listType=map
	// +listMapKey=type
	ComponentDeploymentConditions []metav1.Condition `json:"componentDeploymentConditions,omitempty"`

	// Conditions say, as kstatus reads them, whether the binding is deployed (Ready: its
	// GitOpsDeployments are generated and every component is Synced and Healthy), is being
	// deployed (Reconciling) or cannot be without a change (Stalled). BindingConditions and
	// ComponentDeploymentConditions keep reporting what the API documents.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BindingStatusGitOpsDeployment is a GitOpsDeployment generated for one component.
type BindingStatusGitOpsDeployment struct {
	// ComponentName is the name of the component.
	// +required
	ComponentName string `json:"componentName"`

	// GitOpsDeployment is the name of the GitOpsDeployment that deploys the component.
	// +optional
	GitOpsDeployment string `json:"gitopsDeployment,omitempty"`

	// SyncStatus is the GitOpsDeployment's sync status: Synced, OutOfSync or Unknown.
	// +optional
	SyncStatus DeploymentSyncStatus `json:"syncStatus,omitempty"`

	// Health is the GitOpsDeployment's health: Healthy, Progressing, Degraded, Suspended,
	// Missing or Unknown.
	// +optional
	Health DeploymentHealthStatus `json:"health,omitempty"`

	// CommitID is the Git commit the GitOpsDeployment last synced.
	// +optional
	CommitID string `json:"commitID,omitempty"`
}

// BindingComponentStatus is where one component's resources are in the GitOps repository.
type BindingComponentStatus struct {
	// Name is the name of the component.
	// +required
	Name string `json:"name"`

	// GitOpsRepository is the repository location of the component's resources.
	// +optional
	GitOpsRepository BindingComponentGitOpsRepository `json:"gitopsRepository,omitempty"`
}

// BindingComponentGitOpsRepository is a location in a GitOps repository (usually a kustomize
// overlay for one component in one Environment).
type BindingComponentGitOpsRepository struct {
	// URL is the URL of the GitOps repository.
	// +optional
	URL string `json:"url,omitempty"`

	// Branch is the branch of the repository.
	// +optional
	Branch string `json:"branch,omitempty"`

	// Path is the directory, holding a kustomization.yaml, of this component in this
	// Environment.
	// +optional
	Path string `json:"path,omitempty"`

	// GeneratedResources lists the files generated in Path.
	// +optional
	GeneratedResources []string `json:"generatedResources,omitempty"`

	// CommitID is the commit in which the resources were last generated.
	// +optional
	CommitID string `json:"commitID,omitempty"`
}

// Condition types and reasons of a SnapshotEnvironmentBinding.
const (
	// BindingConditionErrorOccurred (in status.bindingConditions) is True while the binding
	// cannot be processed; its message says why.
	BindingConditionErrorOccurred = "ErrorOccurred"
	// BindingReasonErrorOccurred: an error occurred (ErrorOccurred is True).
	BindingReasonErrorOccurred = "ErrorOccurred"
	// BindingReasonErrorOccurredResolved: the earlier error is gone (ErrorOccurred is False).
	BindingReasonErrorOccurredResolved = "ErrorOccurredResolved"

	// ComponentDeploymentConditionAllComponentsDeployed (in
	// status.componentDeploymentConditions) is True when every component's GitOpsDeployment
	// is synced; its message reads "N of M components deployed".
	ComponentDeploymentConditionAllComponentsDeployed = "AllComponentsDeployed"
	// ComponentDeploymentReasonCommitsSynced: every component is synced (AllComponentsDeployed is True).
	ComponentDeploymentReasonCommitsSynced = "CommitsSynced"
	// ComponentDeploymentReasonCommitsUnsynced: some components are not synced yet
	// (AllComponentsDeployed is False).
	ComponentDeploymentReasonCommitsUnsynced = "CommitsUnsynced"
	// ComponentDeploymentReasonErrorOccurred: the deployment status could not be determined
	// (AllComponentsDeployed is Unknown).
	ComponentDeploymentReasonErrorOccurred = "ErrorOccurred"

	// GitOpsRepoConditionGitOpsResourcesGenerated (in status.gitopsRepoConditions) is True
	// when the Application Service generated the GitOps repository resources of the binding.
	GitOpsRepoConditionGitOpsResourcesGenerated = "GitOpsResourcesGenerated"
)

// SnapshotEnvironmentBinding deploys a Snapshot of an Application to an Environment. The
// GitOps Service turns it into one GitOpsDeployment per component. There should be at most
// one binding per (Application, Environment) pair in a namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=seb,categories=appstudio
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether every component is deployed"
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshot`
// +kubebuilder:printcolumn:name="Deployed",type=string,JSONPath=`.status.componentDeploymentConditions[?(@.type=="AllComponentsDeployed")].status`,description="Whether every component is Synced and Healthy"
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SnapshotEnvironmentBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the binding.
	// +required
	Spec SnapshotEnvironmentBindingSpec `json:"spec"`

	// Status is the observed state of the deployment.
	// +optional
	Status SnapshotEnvironmentBindingStatus `json:"status,omitempty"`
}

// SnapshotEnvironmentBindingList is a list of SnapshotEnvironmentBindings.
//
// +kubebuilder:object:root=true
type SnapshotEnvironmentBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the SnapshotEnvironmentBindings.
	Items []SnapshotEnvironmentBinding `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SnapshotEnvironmentBinding{}, &SnapshotEnvironmentBindingList{})
}
