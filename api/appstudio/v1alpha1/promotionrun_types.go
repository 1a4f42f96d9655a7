/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionRunSpec asks for a Snapshot of an Application to be promoted, either to one
// Environment (manualPromotion) or along the Environment graph (automatedPromotion). Exactly
// one of the two must be set, and the spec cannot be changed once created.
//
// +kubebuilder:validation:XValidation:rule="has(self.manualPromotion) != has(self.automatedPromotion)",message="exactly one of spec.manualPromotion and spec.automatedPromotion must be set"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create a new PromotionRun instead"
type PromotionRunSpec struct {
	// Snapshot is the name of the Snapshot, in the same namespace, to promote.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Snapshot string `json:"snapshot"`

	// Application is the name of the Application, in the same namespace, to promote.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Application string `json:"application"`

	// ManualPromotion promotes to a single Environment. Set either this or AutomatedPromotion.
	// +optional
	ManualPromotion *ManualPromotionConfiguration `json:"manualPromotion,omitempty"`

	// AutomatedPromotion promotes along the Environment graph, starting at an Environment.
	// Set either this or ManualPromotion. Not supported yet: such a PromotionRun is reported
	// as an error in its status.
	// +optional
	AutomatedPromotion *AutomatedPromotionConfiguration `json:"automatedPromotion,omitempty"`
}

// ManualPromotionConfiguration is the Environment a manual promotion promotes to.
type ManualPromotionConfiguration struct {
	// TargetEnvironment is the name of the Environment, in the same namespace, to promote to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	TargetEnvironment string `json:"targetEnvironment"`
}

// AutomatedPromotionConfiguration is the Environment an automated promotion starts at.
type AutomatedPromotionConfiguration struct {
	// InitialEnvironment is the name of the Environment, in the same namespace, where the
	// walk through the Environment graph begins.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	InitialEnvironment string `json:"initialEnvironment"`
}

// PromotionRunState is the state of a PromotionRun: Waiting, Active or Complete.
//
// The API documentation's example describes the final state as "Completed (either
// successfully/unsuccessfully)" in a comment; the value written (as in the original
// application-api) is "Complete", with the outcome in status.completionResult.
// +kubebuilder:validation:Enum=Waiting;Active;Complete
type PromotionRunState string

const (
	// PromotionRunStateWaiting: the promotion has not started yet.
	PromotionRunStateWaiting PromotionRunState = "Waiting"
	// PromotionRunStateActive: the promotion is in progress.
	PromotionRunStateActive PromotionRunState = "Active"
	// PromotionRunStateComplete: the promotion has ended, successfully or not (see
	// status.completionResult).
	PromotionRunStateComplete PromotionRunState = "Complete"
)

// PromotionRunCompleteResult is the outcome of a completed PromotionRun.
// +kubebuilder:validation:Enum=Success;Failure
type PromotionRunCompleteResult string

const (
	// PromotionRunCompleteResultSuccess: every component was deployed (synced and healthy).
	PromotionRunCompleteResultSuccess PromotionRunCompleteResult = "Success"
	// PromotionRunCompleteResultFailure: the promotion failed or timed out.
	PromotionRunCompleteResultFailure PromotionRunCompleteResult = "Failure"
)

// PromotionRunStatus is the progress of a PromotionRun.
type PromotionRunStatus struct {
	// ObservedGeneration is the metadata.generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// State is Waiting (not started), Active (in progress) or Complete (ended, successfully or
	// not).
	// +optional
	State PromotionRunState `json:"state,omitempty"`

	// CompletionResult is Success or Failure, once State is Complete.
	// +optional
	CompletionResult PromotionRunCompleteResult `json:"completionResult,omitempty"`

	// EnvironmentStatus lists the steps of the promotion, one per Environment promoted to (a
	// manual promotion has a single step).
	// +optional
	EnvironmentStatus []PromotionRunEnvironmentStatus `json:"environmentStatus,omitempty"`

	// ActiveBindings are the SnapshotEnvironmentBindings currently being promoted (one for a
	// manual promotion).
	// +optional
	ActiveBindings []string `json:"activeBindings,omitempty"`

	// PromotionStartTime is when the promotion started.
	// +optional
	PromotionStartTime *metav1.Time `json:"promotionStartTime,omitempty"`

	// Conditions report errors of the promotion (type ErrorOccurred) and, as kstatus reads
	// them, whether it succeeded (Ready), is running or waits its turn (Reconciling) or
	// failed (Stalled).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []PromotionRunCondition `json:"conditions,omitempty"`
}

// PromotionRunEnvironmentStatus is one step of a promotion: the promotion to one Environment.
type PromotionRunEnvironmentStatus struct {
	// Step is the number of the step, starting at 1.
	// +required
	// +kubebuilder:validation:Minimum=1
	Step int `json:"step"`

	// EnvironmentName is the name of the Environment promoted to in this step.
	// +required
	EnvironmentName string `json:"environmentName"`

	// Status is the result of this step. The GitOps Service writes Success, In Progress or
	// Failed; other values are accepted for compatibility with earlier writers (the API
	// documentation shows "success" and "in-progress").
	// +optional
	Status PromotionRunEnvironmentStatusField `json:"status,omitempty"`

	// DisplayStatus is a human-readable description of the step's state.
	// +optional
	DisplayStatus string `json:"displayStatus,omitempty"`
}

// PromotionRunEnvironmentStatusField is the result of one step of a promotion.
type PromotionRunEnvironmentStatusField string

const (
	// PromotionRunEnvironmentStatusSuccess: the Environment was promoted to.
	PromotionRunEnvironmentStatusSuccess PromotionRunEnvironmentStatusField = "Success"
	// PromotionRunEnvironmentStatusInProgress: the promotion to the Environment is in progress.
	PromotionRunEnvironmentStatusInProgress PromotionRunEnvironmentStatusField = "In Progress"
	// PromotionRunEnvironmentStatusFailed: the promotion to the Environment failed.
	PromotionRunEnvironmentStatusFailed PromotionRunEnvironmentStatusField = "Failed"
)

// PromotionRunConditionType is the type of a PromotionRunCondition.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=316
type PromotionRunConditionType string

// PromotionRunReasonType is the reason of a PromotionRunCondition.
type PromotionRunReasonType string

// PromotionRunConditionStatus is the status of a PromotionRunCondition: True, False or Unknown.
// +kubebuilder:validation:Enum=True;False;Unknown
type PromotionRunConditionStatus string

const (
	// PromotionRunConditionErrorOccurred is True while the PromotionRun cannot proceed; its
	// message says why.
	PromotionRunConditionErrorOccurred PromotionRunConditionType = "ErrorOccurred"

	// PromotionRunReasonErrorOccurred: an error occurred (ErrorOccurred is True).
	PromotionRunReasonErrorOccurred PromotionRunReasonType = "ErrorOccurred"
	// PromotionRunReasonErrorOccurredResolved: the earlier error is gone (ErrorOccurred is False).
	PromotionRunReasonErrorOccurredResolved PromotionRunReasonType = "ErrorOccurredResolved"

	// PromotionRunConditionStatusTrue: the condition holds.
	PromotionRunConditionStatusTrue PromotionRunConditionStatus = "True"
	// PromotionRunConditionStatusFalse: the condition does not hold.
	PromotionRunConditionStatusFalse PromotionRunConditionStatus = "False"
	// PromotionRunConditionStatusUnknown: it is not known whether the condition holds.
	PromotionRunConditionStatusUnknown PromotionRunConditionStatus = "Unknown"
)

// PromotionRunCondition is one condition of a PromotionRun, usually an error. It has the same
// shape as the GitOps Service's other conditions (type, reason, status, message,
// lastProbeTime, lastTransitionTime).
type PromotionRunCondition struct {
	// Type is the kind of condition, such as ErrorOccurred.
	// +required
	Type PromotionRunConditionType `json:"type"`

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
	Status PromotionRunConditionStatus `json:"status"`

	// Reason is a one-word, CamelCase reason for the last transition.
	// +optional
	Reason PromotionRunReasonType `json:"reason"`
}

// PromotionRun promotes a Snapshot of an Application to an Environment: it points the
// Application's SnapshotEnvironmentBinding for that Environment at the Snapshot, and
// completes once every component is deployed (or fails after a timeout).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=promotion,categories=appstudio
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the promotion succeeded"
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshot`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.manualPromotion.targetEnvironment`,description="Environment promoted to (manual promotions)"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.completionResult`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PromotionRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the requested promotion.
	// +required
	Spec PromotionRunSpec `json:"spec"`

	// Status is the progress of the promotion.
	// +optional
	Status PromotionRunStatus `json:"status,omitempty"`
}

// PromotionRunList is a list of PromotionRuns.
//
// +kubebuilder:object:root=true
type PromotionRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the PromotionRuns.
	Items []PromotionRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PromotionRun{}, &PromotionRunList{})
}
