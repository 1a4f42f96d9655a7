/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations and finalizers of the DeploymentTarget / DeploymentTargetClaim binding process.
const (
	// AnnBindCompleted on a DeploymentTargetClaim says that the binding controller completed
	// the binding process.
	AnnBindCompleted = "dt.appstudio.redhat.com/bind-complete"

	// AnnBoundByController on a DeploymentTargetClaim says that the binding controller (not
	// the user) bound the claim to a DeploymentTarget, that is, set spec.targetName.
	AnnBoundByController = "dt.appstudio.redhat.com/bound-by-controller"

	// AnnBinderValueTrue is the value of AnnBindCompleted and AnnBoundByController.
	AnnBinderValueTrue = "true"

	// AnnTargetProvisioner on a DeploymentTargetClaim asks the provisioner named in its value
	// (the provisioner of the claim's DeploymentTargetClass) to provision a DeploymentTarget
	// for the claim.
	AnnTargetProvisioner = "provisioner.appstudio.redhat.com/dt-provisioner"

	// AnnDynamicallyProvisioned on a DeploymentTarget names the provisioner that provisioned
	// it; it matches the spec.provisioner of a DeploymentTargetClass.
	AnnDynamicallyProvisioned = "provisioner.appstudio.redhat.com/provisioned-by"

	// FinalizerBinder is put on DeploymentTargetClaims by the binding controller, to release
	// (or delete) the bound DeploymentTarget when the claim is deleted.
	FinalizerBinder = "binder.appstudio.redhat.com/finalizer"
)

// DeploymentTargetClassName is the name of a (cluster-scoped) DeploymentTargetClass.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
type DeploymentTargetClassName string

// DeploymentTargetClaimSpec is a request for a DeploymentTarget of a class.
type DeploymentTargetClaimSpec struct {
	// DeploymentTargetClassName is the DeploymentTargetClass of the DeploymentTarget wanted
	// (the class that provisions it).
	// +required
	DeploymentTargetClassName DeploymentTargetClassName `json:"deploymentTargetClassName"`

	// TargetName is the name of the DeploymentTarget, in the same namespace, that this claim
	// is (or should be) bound to. The binding controller sets it when it binds the claim; a
	// user may set it to ask for a particular DeploymentTarget.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TargetName string `json:"targetName,omitempty"`
}

// DeploymentTargetClaimPhase is the phase of a DeploymentTargetClaim.
// +kubebuilder:validation:Enum=Pending;Bound;Lost
type DeploymentTargetClaimPhase string

const (
	// DeploymentTargetClaimPhasePending: the claim waits to be bound to a DeploymentTarget
	// that satisfies it.
	DeploymentTargetClaimPhasePending DeploymentTargetClaimPhase = "Pending"
	// DeploymentTargetClaimPhaseBound: the claim is bound to a DeploymentTarget.
	DeploymentTargetClaimPhaseBound DeploymentTargetClaimPhase = "Bound"
	// DeploymentTargetClaimPhaseLost: the DeploymentTarget the claim was bound to no longer
	// exists.
	DeploymentTargetClaimPhaseLost DeploymentTargetClaimPhase = "Lost"
)

// DeploymentTargetClaimStatus is the observed state of a DeploymentTargetClaim.
type DeploymentTargetClaimStatus struct {
	// Phase is Pending, Bound or Lost.
	// +optional
	Phase DeploymentTargetClaimPhase `json:"phase,omitempty"`

	// Conditions report the provisioning of a DeploymentTarget for the claim by a dynamic
	// provisioner (type Provisioned; see the user guide for its reasons) and, as kstatus
	// reads them, whether the claim is bound (Ready), waits to be (Reconciling) or lost its
	// target (Stalled).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeploymentTargetClaimConditionProvisioned is the type of the condition with which a
// provisioner reports on a claim whether it provisioned a DeploymentTarget for it.
const DeploymentTargetClaimConditionProvisioned = "Provisioned"

// DeploymentTargetClaim requests a DeploymentTarget, as a PersistentVolumeClaim requests a
// PersistentVolume. An Environment deploys to the DeploymentTarget bound to the claim it
// references.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dtc,categories=appstudio
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the claim is bound"
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.deploymentTargetClassName`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeploymentTargetClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the request.
	// +required
	Spec DeploymentTargetClaimSpec `json:"spec"`

	// Status is the binding state of the claim.
	// +optional
	Status DeploymentTargetClaimStatus `json:"status,omitempty"`
}

// DeploymentTargetClaimList is a list of DeploymentTargetClaims.
//
// +kubebuilder:object:root=true
type DeploymentTargetClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the DeploymentTargetClaims.
	Items []DeploymentTargetClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DeploymentTargetClaim{}, &DeploymentTargetClaimList{})
}
