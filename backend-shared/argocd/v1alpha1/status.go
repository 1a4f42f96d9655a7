package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplicationStatus is what Argo CD last found and did.
type ApplicationStatus struct {
	Resources      []ResourceStatus       `json:"resources,omitempty"`
	Sync           SyncStatus             `json:"sync,omitempty"`
	Health         AppHealthStatus        `json:"health,omitempty"`
	Conditions     []ApplicationCondition `json:"conditions,omitempty"`
	ReconciledAt   *metav1.Time           `json:"reconciledAt,omitempty"`
	OperationState *OperationState        `json:"operationState,omitempty"`
	ObservedAt     *metav1.Time           `json:"observedAt,omitempty"`
}

// SyncStatus is how the live state compares with the desired one.
type SyncStatus struct {
	Status     SyncStatusCode `json:"status"`
	ComparedTo ComparedTo     `json:"comparedTo,omitempty"`
	Revision   string         `json:"revision,omitempty"`
	// Revisions are the revisions of an Application with several sources.
	Revisions []string `json:"revisions,omitempty"`
}

// SyncStatusCode is Synced, OutOfSync or Unknown.
type SyncStatusCode string

// The sync statuses.
const (
	SyncStatusCodeUnknown   SyncStatusCode = "Unknown"
	SyncStatusCodeSynced    SyncStatusCode = "Synced"
	SyncStatusCodeOutOfSync SyncStatusCode = "OutOfSync"
)

// ComparedTo is the source and destination a comparison was made against.
type ComparedTo struct {
	Source      ApplicationSource      `json:"source,omitempty"`
	Destination ApplicationDestination `json:"destination"`
}

// AppHealthStatus is the Application's health.
type AppHealthStatus struct {
	Status             HealthStatusCode `json:"status,omitempty"`
	Message            string           `json:"message,omitempty"`
	LastTransitionTime *metav1.Time     `json:"lastTransitionTime,omitempty"`
}

// HealthStatus is a resource's health.
type HealthStatus struct {
	Status             HealthStatusCode `json:"status,omitempty"`
	Message            string           `json:"message,omitempty"`
	LastTransitionTime *metav1.Time     `json:"lastTransitionTime,omitempty"`
}

// HealthStatusCode is a health as Argo CD's health checks judge it.
type HealthStatusCode string

// The health statuses.
const (
	HealthStatusUnknown     HealthStatusCode = "Unknown"
	HealthStatusProgressing HealthStatusCode = "Progressing"
	HealthStatusHealthy     HealthStatusCode = "Healthy"
	HealthStatusSuspended   HealthStatusCode = "Suspended"
	HealthStatusDegraded    HealthStatusCode = "Degraded"
	HealthStatusMissing     HealthStatusCode = "Missing"
)

// ResourceStatus is one resource Argo CD deploys, with its sync status and health.
type ResourceStatus struct {
	Group           string         `json:"group,omitempty"`
	Version         string         `json:"version,omitempty"`
	Kind            string         `json:"kind,omitempty"`
	Namespace       string         `json:"namespace,omitempty"`
	Name            string         `json:"name,omitempty"`
	Status          SyncStatusCode `json:"status,omitempty"`
	Health          *HealthStatus  `json:"health,omitempty"`
	Hook            bool           `json:"hook,omitempty"`
	RequiresPruning bool           `json:"requiresPruning,omitempty"`
}

// ApplicationCondition is an error or warning Argo CD reports.
type ApplicationCondition struct {
	Type               string       `json:"type"`
	Message            string       `json:"message"`
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// The condition types the service reads.
const (
	ApplicationConditionComparisonError = "ComparisonError"
	ApplicationConditionSyncError       = "SyncError"
)

// OperationState is the state of the current or last operation.
type OperationState struct {
	Operation  Operation            `json:"operation"`
	Phase      OperationPhase       `json:"phase"`
	Message    string               `json:"message,omitempty"`
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
	StartedAt  metav1.Time          `json:"startedAt"`
	FinishedAt *metav1.Time         `json:"finishedAt,omitempty"`
	RetryCount int64                `json:"retryCount,omitempty"`
}

// SyncOperationResult is the result of a sync.
type SyncOperationResult struct {
	Revision string            `json:"revision"`
	Source   ApplicationSource `json:"source,omitempty"`
}

// OperationPhase is where an operation stands.
type OperationPhase string

// The operation phases.
const (
	OperationRunning     OperationPhase = "Running"
	OperationTerminating OperationPhase = "Terminating"
	OperationFailed      OperationPhase = "Failed"
	OperationError       OperationPhase = "Error"
	OperationSucceeded   OperationPhase = "Succeeded"
)

// Completed reports whether the operation has ended, one way or the other.
func (p OperationPhase) Completed() bool {
	switch p {
	case OperationFailed, OperationError, OperationSucceeded:
		return true
	}
	return false
}

// Successful reports whether the operation ended well.
func (p OperationPhase) Successful() bool { return p == OperationSucceeded }
