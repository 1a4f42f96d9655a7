/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Provisioner is the name of a provisioner of DeploymentTargets.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
type Provisioner string

// ProvisionerDevsandbox provisions a namespace on an AppStudio cluster (through a
// SpaceRequest). It is the only provisioner supported so far.
const ProvisionerDevsandbox Provisioner = "appstudio.redhat.com/devsandbox"

// ReclaimPolicy says what happens to a DeploymentTarget when its claim is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

const (
	// ReclaimPolicyRetain: the DeploymentTarget is kept and released, so that another claim
	// can bind to it later.
	ReclaimPolicyRetain ReclaimPolicy = "Retain"
	// ReclaimPolicyDelete: the DeploymentTarget (and its external resources) is deleted.
	ReclaimPolicyDelete ReclaimPolicy = "Delete"
)

// DeploymentTargetClassSpec says who provisions the DeploymentTargets of a class, and how.
type DeploymentTargetClassSpec struct {
	// Provisioner is the name of the provisioner of this class, for example
	// "appstudio.redhat.com/devsandbox".
	// +required
	Provisioner Provisioner `json:"provisioner"`

	// Parameters are passed to the provisioner. No parameters are supported yet.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Parameters *runtime.RawExtension `json:"parameters,omitempty"`

	// ReclaimPolicy is what happens to a DeploymentTarget when its claim is deleted: Retain
	// (release it for another claim) or Delete.
	// +required
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy"`
}

// DeploymentTargetClass is a kind of DeploymentTarget and the provisioner that provides it, as
// a StorageClass is for PersistentVolumes. It is cluster-scoped.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=dtcls,categories=appstudio
// +kubebuilder:printcolumn:name="Provisioner",type=string,JSONPath=`.spec.provisioner`
// +kubebuilder:printcolumn:name="Reclaim Policy",type=string,JSONPath=`.spec.reclaimPolicy`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeploymentTargetClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the class.
	// +required
	Spec DeploymentTargetClassSpec `json:"spec"`
}

// DeploymentTargetClassList is a list of DeploymentTargetClasses.
//
// +kubebuilder:object:root=true
type DeploymentTargetClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the DeploymentTargetClasses.
	Items []DeploymentTargetClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DeploymentTargetClass{}, &DeploymentTargetClassList{})
}
