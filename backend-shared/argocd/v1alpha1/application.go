package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Application is Argo CD's Application: what to deploy from where to where, and what Argo
// CD last found and did.
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ApplicationSpec   `json:"spec"`
	Status            ApplicationStatus `json:"status,omitempty"`
	// Operation asks Argo CD's application controller to sync; it removes it when it starts.
	Operation *Operation `json:"operation,omitempty"`
}

// +kubebuilder:object:root=true

// ApplicationList is a list of Applications.
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Application `json:"items"`
}

// ApplicationSpec is the desired deployment.
type ApplicationSpec struct {
	Source      *ApplicationSource     `json:"source,omitempty"`
	Destination ApplicationDestination `json:"destination"`
	Project     string                 `json:"project"`
	SyncPolicy  *SyncPolicy            `json:"syncPolicy,omitempty"`
	// Info is free-form information Argo CD shows beside the Application.
	Info []Info `json:"info,omitempty"`
}

// ApplicationSource is the Git repository, revision and path to deploy.
type ApplicationSource struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
}

// ApplicationDestination is a cluster (by API server URL or Argo CD cluster name) and a
// namespace.
type ApplicationDestination struct {
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// SyncPolicy says whether and how Argo CD syncs on its own.
type SyncPolicy struct {
	Automated   *SyncPolicyAutomated `json:"automated,omitempty"`
	SyncOptions SyncOptions          `json:"syncOptions,omitempty"`
	Retry       *RetryStrategy       `json:"retry,omitempty"`
}

// SyncPolicyAutomated turns on automated sync.
type SyncPolicyAutomated struct {
	Prune      bool  `json:"prune,omitempty"`
	SelfHeal   bool  `json:"selfHeal,omitempty"`
	AllowEmpty bool  `json:"allowEmpty,omitempty"`
	Enabled    *bool `json:"enabled,omitempty"`
}

// SyncOptions are Argo CD's sync options, "Name=value" each.
type SyncOptions []string

// RetryStrategy says how often and how fast a failed sync is retried.
type RetryStrategy struct {
	Limit   int64    `json:"limit,omitempty"`
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is the delay between sync retries.
type Backoff struct {
	Duration    string `json:"duration,omitempty"`
	Factor      *int64 `json:"factor,omitempty"`
	MaxDuration string `json:"maxDuration,omitempty"`
}

// Info is a name and a value.
type Info struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Operation is a sync Argo CD is asked to run.
type Operation struct {
	Sync        *SyncOperation     `json:"sync,omitempty"`
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
	Info        []*Info            `json:"info,omitempty"`
	Retry       RetryStrategy      `json:"retry,omitempty"`
}

// SyncOperation is what to sync.
type SyncOperation struct {
	Revision    string      `json:"revision,omitempty"`
	Prune       bool        `json:"prune,omitempty"`
	DryRun      bool        `json:"dryRun,omitempty"`
	SyncOptions SyncOptions `json:"syncOptions,omitempty"`
}

// OperationInitiator says who asked for an operation.
type OperationInitiator struct {
	Username  string `json:"username,omitempty"`
	Automated bool   `json:"automated,omitempty"`
}
