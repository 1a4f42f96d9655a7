/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// SnapshotSpec is a set of container images, one per component of an Application.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.components) || (has(self.components) && self.components == oldSelf.components)",message="spec.components is immutable once set: create a new Snapshot instead"
type SnapshotSpec struct {
	// Application is the name of the Application, in the same namespace, that the Snapshot is
	// of. It cannot be changed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.application is immutable"
	Application string `json:"application"`

	// DisplayName is a user-visible name for the Snapshot. It has no effect on behaviour.
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// DisplayDescription is a user-visible description of the Snapshot. It has no effect on
	// behaviour.
	// +optional
	DisplayDescription string `json:"displayDescription,omitempty"`

	// Components are the container images of the Application's components. They cannot be
	// changed once set: to deploy other images, create a new Snapshot.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Components []SnapshotComponent `json:"components,omitempty"`

	// Artifacts holds arbitrary, untyped data about the Snapshot (for example links between
	// images and the source commits they were built from). Its form is not settled yet.
	// +optional
	Artifacts SnapshotArtifacts `json:"artifacts,omitempty"`
}

// SnapshotComponent is the container image of one component.
type SnapshotComponent struct {
	// Name is the name of the Component.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// ContainerImage is the image to deploy for the component, for example
	// quay.io/org/component@sha256:....
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	ContainerImage string `json:"containerImage"`

	// Source is where the component was built from.
	// +optional
	Source *ComponentSource `json:"source,omitempty"`
}

// ComponentSource is where a component was built from.
type ComponentSource struct {
	// Git is a Git repository.
	// +optional
	Git *GitSource `json:"git,omitempty"`
}

// GitSource is a location in a Git repository.
type GitSource struct {
	// URL is the URL of the repository.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// Revision is the branch, tag or commit.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Revision string `json:"revision,omitempty"`

	// Context is the directory within the repository that the component was built from.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Context string `json:"context,omitempty"`

	// DockerfileURL is the path or URL of the Dockerfile the image was built with.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	DockerfileURL string `json:"dockerfileUrl,omitempty"`

	// DevfileURL is the path or URL of the devfile of the component.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	DevfileURL string `json:"devfileUrl,omitempty"`
}

// SnapshotArtifacts holds arbitrary data about a Snapshot.
type SnapshotArtifacts struct {
	// UnstableFields is any JSON object. No compatibility is promised for its content.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	UnstableFields *runtime.RawExtension `json:"unstableFields,omitempty"`
}

// SnapshotStatus is the observed state of a Snapshot. The GitOps Service does not use it;
// other AppStudio components (such as integration tests) do.
type SnapshotStatus struct {
	// Conditions are set by other AppStudio components.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Snapshot is a set of container images, one per component of an Application: a version of
// the Application that can be deployed to an Environment (through a
// SnapshotEnvironmentBinding). Its images cannot be changed once set.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=snap,categories=appstudio
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Snapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec lists the images.
	// +required
	Spec SnapshotSpec `json:"spec"`

	// Status is set by other AppStudio components.
	// +optional
	Status SnapshotStatus `json:"status,omitempty"`
}

// SnapshotList is a list of Snapshots.
//
// +kubebuilder:object:root=true
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Snapshots.
	Items []Snapshot `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Snapshot{}, &SnapshotList{})
}
