/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FinalizerDT is put on DeploymentTargets by the GitOps Service so that the external
// resources of a dynamically provisioned target are cleaned up before it goes away.
const FinalizerDT = "dt.appstudio.redhat.com/finalizer"

// DeploymentTargetSpec is a target (a cluster and namespace) and the credentials to deploy
// to it.
type DeploymentTargetSpec struct {
	// DeploymentTargetClassName is the DeploymentTargetClass that provisioned this target.
	// +required
	DeploymentTargetClassName DeploymentTargetClassName `json:"deploymentTargetClassName"`

	// KubernetesClusterCredentials are the credentials of the target.
	// +required
	KubernetesClusterCredentials DeploymentTargetKubernetesClusterCredentials `json:"kubernetesCredentials"`

	// ClaimRef is the name of the DeploymentTargetClaim, in the same namespace, that this
	// target is bound to (empty while it is not bound).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClaimRef string `json:"claimRef,omitempty"`
}

// DeploymentTargetKubernetesClusterCredentials are the credentials of a ServiceAccount with
// read/write access to a namespace of a cluster.
type DeploymentTargetKubernetesClusterCredentials struct {
	// DefaultNamespace is the namespace the credentials give access to.
	// +required
	// +kubebuilder:validation:MaxLength=63
	DefaultNamespace string `json:"defaultNamespace"`

	// APIURL is the URL of the cluster's Kubernetes API.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	APIURL string `json:"apiURL"`

	// ClusterCredentialsSecret is the name of a Secret, in the same namespace, whose
	// "kubeconfig" key holds a kubeconfig for the cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClusterCredentialsSecret string `json:"clusterCredentialsSecret"`

	// AllowInsecureSkipTLSVerify lets consumers connect to the cluster even when its TLS
	// certificate is invalid or self-signed. Defaults to false.
	// +optional
	AllowInsecureSkipTLSVerify bool `json:"allowInsecureSkipTLSVerify,omitempty"`
}

// DeploymentTargetPhase is the phase of a DeploymentTarget.
// +kubebuilder:validation:Enum=Pending;Available;Bound;Released;Failed
type DeploymentTargetPhase string

const (
	// DeploymentTargetPhasePending: the target is not yet available for binding.
	DeploymentTargetPhasePending DeploymentTargetPhase = "Pending"
	// DeploymentTargetPhaseAvailable: the target waits for a claim to be bound to.
	DeploymentTargetPhaseAvailable DeploymentTargetPhase = "Available"
	// DeploymentTargetPhaseBound: the target is bound to a claim.
	DeploymentTargetPhaseBound DeploymentTargetPhase = "Bound"
	// DeploymentTargetPhaseReleased: the claim was deleted but the target's external
	// resources were kept (reclaim policy Retain).
	DeploymentTargetPhaseReleased DeploymentTargetPhase = "Released"
	// DeploymentTargetPhaseFailed: releasing the target's external resources failed.
	DeploymentTargetPhaseFailed DeploymentTargetPhase = "Failed"
)

// DeploymentTargetStatus is the observed state of a DeploymentTarget.
type DeploymentTargetStatus struct {
	// Phase is Pending, Available, Bound, Released or Failed.
	// +optional
	Phase DeploymentTargetPhase `json:"phase,omitempty"`

	// Conditions say, as kstatus reads them, whether the target is usable (Ready: Available
	// or Bound), is being bound (Reconciling: Pending) or failed (Stalled: Failed). A
	// Released target is not Ready and waits for an administrator.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeploymentTarget is a place to deploy to (a namespace of a cluster, with credentials), as a
// PersistentVolume is a place to store data. A DeploymentTargetClaim binds to it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dt,categories=appstudio
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the target is Available or Bound"
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.deploymentTargetClassName`
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.spec.claimRef`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeploymentTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the target and its credentials.
	// +required
	Spec DeploymentTargetSpec `json:"spec"`

	// Status is the binding state of the target.
	// +optional
	Status DeploymentTargetStatus `json:"status,omitempty"`
}

// DeploymentTargetList is a list of DeploymentTargets.
//
// +kubebuilder:object:root=true
type DeploymentTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the DeploymentTargets.
	Items []DeploymentTarget `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DeploymentTarget{}, &DeploymentTargetList{})
}
