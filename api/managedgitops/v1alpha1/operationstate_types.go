/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The types of this file mirror the operationState field of an Argo CD Application
// (argoproj.io/v1alpha1), which the GitOps Service copies into GitOpsDeployment's
// status.operationState. They are our own copies so that this module does not depend on
// Argo CD; field names and JSON names follow Argo CD's. The values are Argo CD's, so they
// are not restricted to an enum here.

// OperationState describes the last (or current) deployment operation of a GitOpsDeployment.
type OperationState struct {
	// Operation is the operation that was requested.
	// +optional
	Operation ApplicationOperation `json:"operation,omitempty"`

	// Phase is the phase of the operation: Running, Terminating, Failed, Error or Succeeded.
	// +optional
	Phase OperationPhase `json:"phase,omitempty"`

	// Message gives details of the operation, typically an error.
	// +optional
	Message string `json:"message,omitempty"`

	// SyncResult is the result of a sync operation.
	// +optional
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`

	// StartedAt is when the operation started.
	// +optional
	StartedAt metav1.Time `json:"startedAt,omitempty"`

	// FinishedAt is when the operation finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// RetryCount is how many times the operation has been retried.
	// +optional
	RetryCount int64 `json:"retryCount,omitempty"`
}

// OperationPhase is the phase of a deployment operation.
type OperationPhase string

const (
	// OperationPhaseRunning: the operation is in progress.
	OperationPhaseRunning OperationPhase = "Running"
	// OperationPhaseTerminating: the operation is being cancelled.
	OperationPhaseTerminating OperationPhase = "Terminating"
	// OperationPhaseFailed: the operation failed.
	OperationPhaseFailed OperationPhase = "Failed"
	// OperationPhaseError: the operation could not be carried out.
	OperationPhaseError OperationPhase = "Error"
	// OperationPhaseSucceeded: the operation succeeded.
	OperationPhaseSucceeded OperationPhase = "Succeeded"
)

// ApplicationOperation is a requested operation.
type ApplicationOperation struct {
	// Sync holds the parameters of a sync operation.
	// +optional
	Sync *SyncOperation `json:"sync,omitempty"`

	// InitiatedBy says who started the operation.
	// +optional
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`

	// Info is a list of informational items about the operation.
	// +optional
	Info []OperationInfo `json:"info,omitempty"`

	// Retry is the strategy applied when the operation fails.
	// +optional
	Retry RetryStrategy `json:"retry,omitempty"`
}

// OperationInfo is a name/value item of information about an operation.
type OperationInfo struct {
	// Name of the item.
	Name string `json:"name"`
	// Value of the item.
	Value string `json:"value"`
}

// OperationInitiator says who started an operation.
type OperationInitiator struct {
	// Username is the name of the user who started the operation.
	// +optional
	Username string `json:"username,omitempty"`

	// Automated is true when the operation was started automatically (automated GitOpsDeployments).
	// +optional
	Automated bool `json:"automated,omitempty"`
}

// RetryStrategy is the strategy applied when a sync fails.
type RetryStrategy struct {
	// Limit is the largest number of retries; 0 means no retry and a negative number means
	// no limit.
	// +optional
	Limit int64 `json:"limit,omitempty"`

	// Backoff is the delay between retries.
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is the delay between the retries of a failed sync.
type Backoff struct {
	// Duration is the first delay, as a duration such as "5s" or "2m" (seconds when no unit).
	// +optional
	Duration string `json:"duration,omitempty"`

	// Factor multiplies the delay after each failed retry.
	// +optional
	Factor *int64 `json:"factor,omitempty"`

	// MaxDuration is the longest delay, as a duration such as "3m".
	// +optional
	MaxDuration string `json:"maxDuration,omitempty"`
}

// SyncOperation holds the parameters of a sync operation.
type SyncOperation struct {
	// Revision is the Git revision synced to. When empty, the revision of the spec is used.
	// +optional
	Revision string `json:"revision,omitempty"`

	// Prune deletes live resources that are no longer in the repository.
	// +optional
	Prune bool `json:"prune,omitempty"`

	// DryRun performs the sync without changing anything.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`

	// SyncStrategy says how the resources are applied.
	// +optional
	SyncStrategy *SyncStrategy `json:"syncStrategy,omitempty"`

	// Resources limits the sync to these resources; empty means all of them.
	// +optional
	Resources []SyncOperationResource `json:"resources,omitempty"`

	// Source overrides the source of the spec (set by rollbacks).
	// +optional
	Source *OperationSource `json:"source,omitempty"`

	// Manifests overrides the source with local manifests (a development aid of Argo CD).
	// +optional
	Manifests []string `json:"manifests,omitempty"`

	// SyncOptions are the options of this sync, as Argo CD spells them (for example
	// "PrunePropagationPolicy=background"). Unlike spec.syncPolicy.syncOptions, any value is
	// reported here.
	// +optional
	SyncOptions []string `json:"syncOptions,omitempty"`

	// Sources overrides the sources of a multi-source application.
	// +optional
	Sources []OperationSource `json:"sources,omitempty"`

	// Revisions are the revisions synced to, one per source of a multi-source application.
	// +optional
	Revisions []string `json:"revisions,omitempty"`
}

// SyncStrategy says how the resources of a sync are applied.
type SyncStrategy struct {
	// Apply uses `kubectl apply`.
	// +optional
	Apply *SyncStrategyApply `json:"apply,omitempty"`

	// Hook applies resources through sync hooks (the default), falling back to `kubectl apply`.
	// +optional
	Hook *SyncStrategyHook `json:"hook,omitempty"`
}

// SyncStrategyApply applies resources with `kubectl apply`.
type SyncStrategyApply struct {
	// Force deletes and re-creates a resource when patching it keeps failing.
	// +optional
	Force bool `json:"force,omitempty"`
}

// SyncStrategyHook applies resources through sync hooks.
type SyncStrategyHook struct {
	// SyncStrategyApply holds the `kubectl apply` options that also apply here.
	SyncStrategyApply `json:",inline"`
}

// SyncOperationResource identifies a resource that a sync is limited to.
type SyncOperationResource struct {
	// Group is the API group of the resource.
	// +optional
	Group string `json:"group,omitempty"`
	// Kind is the kind of the resource.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name is the name of the resource.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace is the namespace of the resource.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// OperationSource is the source (repository, path, revision) of an operation, as Argo CD
// records it.
type OperationSource struct {
	// RepoURL is the URL of the repository.
	// +optional
	RepoURL string `json:"repoURL,omitempty"`
	// Path is the directory within the repository.
	// +optional
	Path string `json:"path,omitempty"`
	// TargetRevision is the branch, tag or commit.
	// +optional
	TargetRevision string `json:"targetRevision,omitempty"`
}

// SyncOperationResult is the result of a sync operation.
type SyncOperationResult struct {
	// Resources are the results of the individual resources.
	// +optional
	Resources []ResourceResult `json:"resources,omitempty"`

	// Revision is the Git commit that was synced.
	// +optional
	Revision string `json:"revision,omitempty"`

	// Source is the source that was synced.
	// +optional
	Source OperationSource `json:"source,omitempty"`

	// Sources are the sources that were synced (multi-source applications).
	// +optional
	Sources []OperationSource `json:"sources,omitempty"`

	// Revisions are the commits that were synced, one per source (multi-source applications).
	// +optional
	Revisions []string `json:"revisions,omitempty"`

	// ManagedNamespaceMetadata is the metadata applied to a namespace created by the sync.
	// +optional
	ManagedNamespaceMetadata *ManagedNamespaceMetadata `json:"managedNamespaceMetadata,omitempty"`
}

// ManagedNamespaceMetadata is the metadata applied to a namespace created by a sync.
type ManagedNamespaceMetadata struct {
	// Labels of the namespace.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the namespace.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ResourceResult is the result of a sync for one resource.
type ResourceResult struct {
	// Group is the API group of the resource.
	// +optional
	Group string `json:"group,omitempty"`
	// Version is the API version of the resource.
	// +optional
	Version string `json:"version,omitempty"`
	// Kind is the kind of the resource.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Namespace is the namespace of the resource.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is the name of the resource.
	// +optional
	Name string `json:"name,omitempty"`
	// Status is the outcome for the resource: Synced, SyncFailed, Pruned or PruneSkipped.
	// +optional
	Status ResultCode `json:"status,omitempty"`
	// Message explains the outcome, typically an error.
	// +optional
	Message string `json:"message,omitempty"`
	// HookType is the type of hook, for hook resources: PreSync, Sync, PostSync, SyncFail or Skip.
	// +optional
	HookType HookType `json:"hookType,omitempty"`
	// HookPhase is the phase of the hook or resource operation.
	// +optional
	HookPhase OperationPhase `json:"hookPhase,omitempty"`
	// SyncPhase is the phase of the sync in which this result was obtained.
	// +optional
	SyncPhase SyncPhase `json:"syncPhase,omitempty"`
}

// ResultCode is the outcome of a sync for one resource.
type ResultCode string

const (
	// ResultCodeSynced: the resource was applied.
	ResultCodeSynced ResultCode = "Synced"
	// ResultCodeSyncFailed: applying the resource failed.
	ResultCodeSyncFailed ResultCode = "SyncFailed"
	// ResultCodePruned: the resource was deleted.
	ResultCodePruned ResultCode = "Pruned"
	// ResultCodePruneSkipped: the resource should have been deleted but pruning was off.
	ResultCodePruneSkipped ResultCode = "PruneSkipped"
)

// HookType is the type of a sync hook.
type HookType string

const (
	// HookTypePreSync runs before the resources are applied.
	HookTypePreSync HookType = "PreSync"
	// HookTypeSync runs with the resources.
	HookTypeSync HookType = "Sync"
	// HookTypePostSync runs after the resources are applied and healthy.
	HookTypePostSync HookType = "PostSync"
	// HookTypeSkip marks a resource that is not applied.
	HookTypeSkip HookType = "Skip"
	// HookTypeSyncFail runs when the sync fails.
	HookTypeSyncFail HookType = "SyncFail"
)

// SyncPhase is a phase of a sync.
type SyncPhase string

const (
	// SyncPhasePreSync is the phase before the resources are applied.
	SyncPhasePreSync SyncPhase = "PreSync"
	// SyncPhaseSync is the phase in which the resources are applied.
	SyncPhaseSync SyncPhase = "Sync"
	// SyncPhasePostSync is the phase after the resources are applied.
	SyncPhasePostSync SyncPhase = "PostSync"
	// SyncPhaseSyncFail is the phase run when the sync failed.
	SyncPhaseSyncFail SyncPhase = "SyncFail"
)
