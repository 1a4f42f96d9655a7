/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType is the type of a SpaceRequest condition.
type ConditionType string

// ConditionStatus is True, False or Unknown.
// +kubebuilder:validation:Enum=True;False;Unknown
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// ConditionReady is the condition type that says whether the requested space (namespaces
// and their credentials) is provisioned.
const ConditionReady ConditionType = "Ready"

// Reasons of the Ready condition that the sandbox service uses while a SpaceRequest is
// still being worked on (any other reason with Ready=False is a failure).
const (
	ReasonProvisioning = "Provisioning"
	ReasonUpdating     = "Updating"
	ReasonProvisioned  = "Provisioned"
)

// Condition is an observation of a SpaceRequest (the sandbox's condition shape, not
// metav1.Condition: reason, message and times are optional).
type Condition struct {
	// Type of the condition, for example Ready.
	// +required
	Type ConditionType `json:"type"`
	// Status of the condition: True, False or Unknown.
	// +required
	Status ConditionStatus `json:"status"`
	// LastTransitionTime is when the condition last changed status.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a CamelCase reason for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable explanation.
	// +optional
	Message string `json:"message,omitempty"`
	// LastUpdatedTime is when the condition was last written.
	// +optional
	LastUpdatedTime *metav1.Time `json:"lastUpdatedTime,omitempty"`
}

// SpaceRequestSpec asks for a space (a set of namespaces) of a tier.
type SpaceRequestSpec struct {
	// TierName is the name of the NSTemplateTier that the space is provisioned from.
	// +required
	// +kubebuilder:validation:MinLength=1
	TierName string `json:"tierName"`

	// TargetClusterRoles are cluster roles (labels of member clusters) that the space must be
	// provisioned on.
	// +optional
	// +listType=atomic
	TargetClusterRoles []string `json:"targetClusterRoles,omitempty"`
}

// NamespaceAccess is a provisioned namespace and the Secret (in the SpaceRequest's namespace)
// with a kubeconfig that has access to it.
type NamespaceAccess struct {
	// Name of the provisioned namespace.
	// +required
	Name string `json:"name"`
	// SecretRef is the name of the Secret, in the SpaceRequest's namespace, that holds a
	// kubeconfig (key "kubeconfig") for the namespace.
	// +optional
	SecretRef string `json:"secretRef,omitempty"`
}

// SpaceRequestStatus is what the sandbox service provisioned.
type SpaceRequestStatus struct {
	// TargetClusterURL is the API URL of the cluster the space is provisioned on.
	// +optional
	TargetClusterURL string `json:"targetClusterURL,omitempty"`

	// NamespaceAccess lists the provisioned namespaces and their credentials.
	// +optional
	// +listType=atomic
	NamespaceAccess []NamespaceAccess `json:"namespaceAccess,omitempty"`

	// Conditions are the observations of the request; Ready=True once provisioned.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// SpaceRequest asks the Developer Sandbox for a space: namespaces on a member cluster, with
// credentials. The GitOps Service's appstudio.redhat.com/devsandbox provisioner creates one
// per DeploymentTargetClaim it provisions.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Tier",type=string,JSONPath=`.spec.tierName`
// +kubebuilder:printcolumn:name="Target Cluster",type=string,JSONPath=`.status.targetClusterURL`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SpaceRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the request.
	// +required
	Spec SpaceRequestSpec `json:"spec"`

	// Status is what was provisioned.
	// +optional
	Status SpaceRequestStatus `json:"status,omitempty"`
}

// SpaceRequestList is a list of SpaceRequests.
//
// +kubebuilder:object:root=true
type SpaceRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the SpaceRequests.
	Items []SpaceRequest `json:"items"`
}

// FindCondition returns the condition of type t, or nil.
func (s *SpaceRequestStatus) FindCondition(t ConditionType) *Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

func init() {
	SchemeBuilder.Register(&SpaceRequest{}, &SpaceRequestList{})
}
