/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperationSpec points at a row of the Operation table of the GitOps Service's database.
type OperationSpec struct {
	// OperationID is the id of the Operation row that says what to do.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	OperationID string `json:"operationID"`
}

// OperationStatusState is the state of an Operation.
// +kubebuilder:validation:Enum=Waiting;In_Progress;Completed;Failed
type OperationStatusState string

const (
	// OperationStateWaiting: the operation has not been picked up yet.
	OperationStateWaiting OperationStatusState = "Waiting"
	// OperationStateInProgress: the cluster-agent is carrying out the operation.
	OperationStateInProgress OperationStatusState = "In_Progress"
	// OperationStateCompleted: the operation succeeded.
	OperationStateCompleted OperationStatusState = "Completed"
	// OperationStateFailed: the operation failed; Message says why.
	OperationStateFailed OperationStatusState = "Failed"
)

// OperationStatus mirrors the state of the Operation row, for people inspecting the cluster.
// The database row remains the source of truth.
type OperationStatus struct {
	// ObservedGeneration is the metadata.generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// State is Waiting, In_Progress, Completed or Failed.
	// +optional
	State OperationStatusState `json:"state,omitempty"`

	// Message gives details, typically why the operation failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// Operation is an internal resource of the GitOps Service, not for end users: the backend
// creates one in the namespace of a GitOps engine (Argo CD) instance to tell that instance's
// cluster-agent that the database row it names needs to be acted on.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitopsop
// +kubebuilder:printcolumn:name="Operation ID",type=string,JSONPath=`.spec.operationID`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Operation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the Operation row.
	// +required
	Spec OperationSpec `json:"spec"`

	// Status mirrors the state of the Operation row.
	// +optional
	Status OperationStatus `json:"status,omitempty"`
}

// OperationList is a list of Operations.
//
// +kubebuilder:object:root=true
type OperationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Operations.
	Items []Operation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Operation{}, &OperationList{})
}

// OperationName is the name of the Operation CR that signals row operationID: the backend
// creates it by this name and the cluster-agent finds the row by it.
func OperationName(operationID string) string { return "operation-" + operationID }
