/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FinalizerResourcesFinalizer, when present on a GitOpsDeployment, makes Kubernetes keep the
// GitOpsDeployment until every resource it deployed has been deleted from the target. Without
// it the GitOpsDeployment goes away at once and its resources are removed in the background.
// It behaves like Argo CD's resources-finalizer.argocd.argoproj.io.
const FinalizerResourcesFinalizer = "resources-finalizer.managed-gitops.redhat.com"

// RefreshAnnotation on a GitOpsDeployment asks for a refresh: any new value (a timestamp,
// say) makes Argo CD fetch the repository and compare the deployment now instead of at its
// next poll. status.lastHandledRefresh records the last value acted on.
const RefreshAnnotation = "managed-gitops.redhat.com/refresh"

// GitOpsDeploymentSpecType says when the GitOps Service deploys the contents of the repository.
// +kubebuilder:validation:Enum=automated;manual
type GitOpsDeploymentSpecType string

const (
	// GitOpsDeploymentSpecTypeAutomated deploys every change of the repository as soon as it
	// is seen, and puts the target back in line with the repository when it drifts.
	GitOpsDeploymentSpecTypeAutomated GitOpsDeploymentSpecType = "automated"

	// GitOpsDeploymentSpecTypeManual deploys only when a GitOpsDeploymentSyncRun asks for it.
	GitOpsDeploymentSpecTypeManual GitOpsDeploymentSpecType = "manual"
)

// SyncOption is one option of spec.syncPolicy.syncOptions.
// +kubebuilder:validation:Enum="CreateNamespace=true";"CreateNamespace=false"
type SyncOption string

const (
	// SyncOptionCreateNamespaceTrue makes the GitOps Service create the destination namespace
	// (spec.destination.namespace) before it deploys into it.
	SyncOptionCreateNamespaceTrue SyncOption = "CreateNamespace=true"

	// SyncOptionCreateNamespaceFalse requires the destination namespace to exist already. This
	// is also the behaviour when no CreateNamespace option is given.
	SyncOptionCreateNamespaceFalse SyncOption = "CreateNamespace=false"
)

// GitOpsDeploymentSpec is what a user asks for: deploy a path of a Git repository to a
// namespace of a cluster.
type GitOpsDeploymentSpec struct {
	// Source is the Git repository (and path and revision within it) to deploy from.
	// +required
	Source ApplicationSource `json:"source"`

	// Destination is where the resources are deployed. When it is empty, they are deployed to
	// the namespace of this GitOpsDeployment, on the cluster where it is defined.
	// +optional
	Destination ApplicationDestination `json:"destination,omitempty"`

	// SyncPolicy controls how deployments are carried out.
	// +optional
	SyncPolicy *SyncPolicy `json:"syncPolicy,omitempty"`

	// Type is either "automated" (every change of the repository is deployed as soon as it is
	// seen) or "manual" (a deployment happens only when a GitOpsDeploymentSyncRun asks for it).
	// +required
	Type GitOpsDeploymentSpecType `json:"type"`
}

// ApplicationSource is a path within a Git repository, at a revision.
type ApplicationSource struct {
	// RepoURL is the URL of the Git repository that holds the Kubernetes resources to deploy,
	// for example https://github.com/org/repo.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	RepoURL string `json:"repoURL"`

	// Path is the directory within the repository to deploy from (plain manifests or a
	// kustomization).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Path string `json:"path,omitempty"`

	// TargetRevision is the branch, tag or commit to deploy. When empty, the default branch
	// (HEAD) is deployed.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	TargetRevision string `json:"targetRevision,omitempty"`
}

// ApplicationDestination is a target cluster and namespace.
type ApplicationDestination struct {
	// Environment is the name of a GitOpsDeploymentManagedEnvironment, in the same namespace as
	// this GitOpsDeployment, that holds the credentials of the target cluster. When empty, the
	// resources are deployed to the cluster where this GitOpsDeployment is defined.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Environment string `json:"environment,omitempty"`

	// Namespace is the namespace to deploy to. It applies only to resources of the repository
	// that do not set metadata.namespace themselves. When empty, the namespace of this
	// GitOpsDeployment is used.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// SyncPolicy controls how deployments are carried out.
type SyncPolicy struct {
	// SyncOptions are options of every deployment. Supported: "CreateNamespace=true" and
	// "CreateNamespace=false".
	// +optional
	SyncOptions []SyncOption `json:"syncOptions,omitempty"`
}

// SyncStatusCode says whether the deployed resources match the repository.
// +kubebuilder:validation:Enum=Synced;OutOfSync;Unknown;""
type SyncStatusCode string

const (
	// SyncStatusCodeSynced: the live resources match the repository.
	SyncStatusCodeSynced SyncStatusCode = "Synced"
	// SyncStatusCodeOutOfSync: the live resources differ from the repository.
	SyncStatusCodeOutOfSync SyncStatusCode = "OutOfSync"
	// SyncStatusCodeUnknown: the comparison could not be made.
	SyncStatusCodeUnknown SyncStatusCode = "Unknown"
)

// HealthStatusCode is the health of a deployment or of one of its resources, as Argo CD
// judges it.
// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Suspended;Missing;Unknown;""
type HealthStatusCode string

const (
	// HealthStatusCodeHealthy: the resources are healthy.
	HealthStatusCodeHealthy HealthStatusCode = "Healthy"
	// HealthStatusCodeProgressing: the resources are not healthy yet but may become so.
	HealthStatusCodeProgressing HealthStatusCode = "Progressing"
	// HealthStatusCodeDegraded: the resources failed or cannot become healthy.
	HealthStatusCodeDegraded HealthStatusCode = "Degraded"
	// HealthStatusCodeSuspended: the resources are paused or waiting (for example a suspended CronJob).
	HealthStatusCodeSuspended HealthStatusCode = "Suspended"
	// HealthStatusCodeMissing: the resources do not exist on the target.
	HealthStatusCodeMissing HealthStatusCode = "Missing"
	// HealthStatusCodeUnknown: the health could not be assessed.
	HealthStatusCodeUnknown HealthStatusCode = "Unknown"
)

// GitOpsDeploymentStatus is what the GitOps Service observed of a GitOpsDeployment.
type GitOpsDeploymentStatus struct {
	// ObservedGeneration is the last metadata.generation fully processed: Argo CD has
	// compared it (or it has an error a user must fix).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions report errors met while deploying (types ErrorOccurred, SyncError and
	// ComparisonError) and, as kstatus reads them, whether the deployment is Ready (Argo
	// CD compared the current spec, and it is Synced and Healthy), Reconciling or Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []GitOpsDeploymentCondition `json:"conditions,omitempty"`

	// Sync says whether the live resources match the repository.
	// +optional
	Sync SyncStatus `json:"sync,omitempty"`

	// Health is the overall health of the deployed resources.
	// +optional
	Health HealthStatus `json:"health,omitempty"`

	// Resources lists the resources deployed by this GitOpsDeployment, each with its own sync
	// and health status.
	// +optional
	Resources []ResourceStatus `json:"resources,omitempty"`

	// ReconciledState is the source and destination that were last deployed. Compare it with
	// .spec to know whether a change of the spec has been acted on yet.
	// +optional
	ReconciledState ReconciledState `json:"reconciledState,omitempty"`

	// OperationState describes the last (or current) deployment operation, as Argo CD reports it.
	// +optional
	OperationState *OperationState `json:"operationState,omitempty"`

	// LastHandledRefresh is the value of the managed-gitops.redhat.com/refresh annotation
	// that was last passed on to Argo CD.
	// +optional
	LastHandledRefresh string `json:"lastHandledRefresh,omitempty"`
}

// SyncStatus says whether the live resources match the repository.
type SyncStatus struct {
	// Status is Synced, OutOfSync or Unknown.
	// +optional
	Status SyncStatusCode `json:"status,omitempty"`

	// Revision is the Git commit the live resources were compared with.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// HealthStatus is the health of a deployment or of one of its resources.
type HealthStatus struct {
	// Status is Healthy, Progressing, Degraded, Suspended, Missing or Unknown.
	// +optional
	Status HealthStatusCode `json:"status,omitempty"`

	// Message explains the health status, when there is something to say.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceStatus is the sync and health status of one deployed resource.
type ResourceStatus struct {
	// Group is the API group of the resource ("" for the core group).
	// +optional
	Group string `json:"group,omitempty"`
	// Version is the API version of the resource.
	// +optional
	Version string `json:"version,omitempty"`
	// Kind is the kind of the resource.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Namespace is the namespace of the resource (empty for cluster-scoped resources).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is the name of the resource.
	// +optional
	Name string `json:"name,omitempty"`
	// Status says whether the live resource matches the repository.
	// +optional
	Status SyncStatusCode `json:"status,omitempty"`
	// Health is the health of the resource.
	// +optional
	Health *HealthStatus `json:"health,omitempty"`
}

// ReconciledState is the source and destination that were last deployed.
type ReconciledState struct {
	// Source is the repository and path last deployed.
	// +optional
	Source GitOpsDeploymentSource `json:"source,omitempty"`

	// Destination is the target last deployed to.
	// +optional
	Destination GitOpsDeploymentDestination `json:"destination,omitempty"`
}

// GitOpsDeploymentSource is the repository, path and branch that were last deployed.
type GitOpsDeploymentSource struct {
	// Path is the directory within the repository.
	// +optional
	Path string `json:"path,omitempty"`
	// RepoURL is the URL of the repository.
	// +optional
	RepoURL string `json:"repoURL,omitempty"`
	// Branch is the branch, tag or commit (the target revision).
	// +optional
	Branch string `json:"branch,omitempty"`
}

// GitOpsDeploymentDestination is the target that was last deployed to.
type GitOpsDeploymentDestination struct {
	// Name is the name of the GitOpsDeploymentManagedEnvironment (empty for the local cluster).
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace is the destination namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// GitOpsDeploymentConditionType is the type of a GitOpsDeploymentCondition.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=316
type GitOpsDeploymentConditionType string

const (
	// GitOpsDeploymentConditionErrorOccurred is True while the GitOps Service cannot process
	// the GitOpsDeployment (for example because it references a missing
	// GitOpsDeploymentManagedEnvironment); its message says why.
	GitOpsDeploymentConditionErrorOccurred GitOpsDeploymentConditionType = "ErrorOccurred"

	// GitOpsDeploymentConditionSyncError is True while the last deployment (sync operation)
	// failed; its message is Argo CD's explanation.
	GitOpsDeploymentConditionSyncError GitOpsDeploymentConditionType = "SyncError"

	// GitOpsDeploymentConditionComparisonError is True while the repository could not be
	// compared with the live resources (for example an unreachable repository or invalid
	// manifests); its message is Argo CD's explanation.
	GitOpsDeploymentConditionComparisonError GitOpsDeploymentConditionType = "ComparisonError"
)

// GitOpsDeploymentReasonType is the reason of a GitOpsDeploymentCondition.
type GitOpsDeploymentReasonType string

const (
	// GitOpsDeploymentReasonErrorOccurred: an error occurred (ErrorOccurred is True).
	GitOpsDeploymentReasonErrorOccurred GitOpsDeploymentReasonType = "ErrorOccurred"
	// GitOpsDeploymentReasonErrorOccurredResolved: the earlier error is gone (ErrorOccurred is False).
	GitOpsDeploymentReasonErrorOccurredResolved GitOpsDeploymentReasonType = "ErrorOccurredResolved"
	// GitOpsDeploymentReasonSyncError: the last deployment failed (SyncError is True).
	GitOpsDeploymentReasonSyncError GitOpsDeploymentReasonType = "SyncError"
	// GitOpsDeploymentReasonSyncErrorResolved: the deployment error is gone (SyncError is False).
	GitOpsDeploymentReasonSyncErrorResolved GitOpsDeploymentReasonType = "SyncErrorResolved"
	// GitOpsDeploymentReasonComparisonError: the comparison failed (ComparisonError is True).
	GitOpsDeploymentReasonComparisonError GitOpsDeploymentReasonType = "ComparisonError"
	// GitOpsDeploymentReasonComparisonErrorResolved: the comparison error is gone (ComparisonError is False).
	GitOpsDeploymentReasonComparisonErrorResolved GitOpsDeploymentReasonType = "ComparisonErrorResolved"
)

// GitOpsConditionStatus is the status of a condition: True, False or Unknown.
// +kubebuilder:validation:Enum=True;False;Unknown
type GitOpsConditionStatus string

const (
	// GitOpsConditionStatusTrue: the condition holds.
	GitOpsConditionStatusTrue GitOpsConditionStatus = "True"
	// GitOpsConditionStatusFalse: the condition does not hold.
	GitOpsConditionStatusFalse GitOpsConditionStatus = "False"
	// GitOpsConditionStatusUnknown: it is not known whether the condition holds.
	GitOpsConditionStatusUnknown GitOpsConditionStatus = "Unknown"
)

// GitOpsDeploymentCondition is one condition of a GitOpsDeployment or of a
// GitOpsDeploymentSyncRun: usually an error, or the news that an earlier error is resolved.
//
// Its shape is the one documented for the GitOps Service (type, reason, status, message,
// lastProbeTime, lastTransitionTime); it is deliberately not metav1.Condition.
type GitOpsDeploymentCondition struct {
	// Type is the kind of condition, such as ErrorOccurred, SyncError or ComparisonError.
	// +required
	Type GitOpsDeploymentConditionType `json:"type"`

	// Message is a human-readable explanation of the condition.
	// +optional
	Message string `json:"message"`

	// LastProbeTime is when the condition was last observed.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`

	// LastTransitionTime is when the status of the condition last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`

	// Status is True, False or Unknown.
	// +required
	Status GitOpsConditionStatus `json:"status"`

	// Reason is a one-word, CamelCase reason for the last transition, such as ErrorOccurred
	// or ErrorOccurredResolved.
	// +optional
	Reason GitOpsDeploymentReasonType `json:"reason"`
}

// GitOpsDeployment deploys a path of a Git repository to a namespace of a cluster, and keeps
// it deployed. It is carried out by an Argo CD Application that the GitOps Service manages on
// the user's behalf.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitopsdepl,categories=gitops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether Argo CD compared the current spec and it is Synced and Healthy"
// +kubebuilder:printcolumn:name="Sync Status",type=string,JSONPath=`.status.sync.status`,description="Whether the live resources match the repository"
// +kubebuilder:printcolumn:name="Health Status",type=string,JSONPath=`.status.health.status`,description="Health of the deployed resources"
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.sync.revision`,priority=1,description="The Git commit the live resources were compared with"
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitOpsDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired deployment.
	// +required
	Spec GitOpsDeploymentSpec `json:"spec"`

	// Status is the observed state of the deployment. A new GitOpsDeployment reads as
	// Reconciling, not yet Ready, from its creation on: the API server fills in this
	// default until the GitOps Service writes a status, so that kstatus and kubectl wait
	// see it in progress without a status write of its own.
	// +optional
	// +kubebuilder:default={conditions: {{type: Ready, status: "False", reason: Progressing, message: "Waiting for Argo CD to compare the current spec"}, {type: Reconciling, status: "True", reason: Progressing, message: "Waiting for Argo CD to compare the current spec"}}}
	Status GitOpsDeploymentStatus `json:"status,omitempty"`
}

// GitOpsDeploymentList is a list of GitOpsDeployments.
//
// +kubebuilder:object:root=true
type GitOpsDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the GitOpsDeployments.
	Items []GitOpsDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitOpsDeployment{}, &GitOpsDeploymentList{})
}
