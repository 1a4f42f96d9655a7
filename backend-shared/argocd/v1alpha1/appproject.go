package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +kubebuilder:object:root=true

// AppProject is Argo CD's AppProject: which repositories, destinations and kinds its
// Applications may use.
type AppProject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              AppProjectSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// AppProjectList is a list of AppProjects.
type AppProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []AppProject `json:"items"`
}

// AppProjectSpec is what an AppProject allows.
type AppProjectSpec struct {
	SourceRepos                []string                 `json:"sourceRepos,omitempty"`
	Destinations               []ApplicationDestination `json:"destinations,omitempty"`
	Description                string                   `json:"description,omitempty"`
	ClusterResourceWhitelist   []metav1.GroupKind       `json:"clusterResourceWhitelist,omitempty"`
	NamespaceResourceBlacklist []metav1.GroupKind       `json:"namespaceResourceBlacklist,omitempty"`
	NamespaceResourceWhitelist []metav1.GroupKind       `json:"namespaceResourceWhitelist,omitempty"`
	ClusterResourceBlacklist   []metav1.GroupKind       `json:"clusterResourceBlacklist,omitempty"`
	SourceNamespaces           []string                 `json:"sourceNamespaces,omitempty"`

	// The rest of Argo CD's AppProjectSpec, which the service never sets: kept as JSON so
	// that a project someone edited by hand differs from the one the service wants, and
	// writing the service's spec over it removes the edit.
	Roles                           []runtime.RawExtension `json:"roles,omitempty"`
	SyncWindows                     []runtime.RawExtension `json:"syncWindows,omitempty"`
	OrphanedResources               *runtime.RawExtension  `json:"orphanedResources,omitempty"`
	SignatureKeys                   []runtime.RawExtension `json:"signatureKeys,omitempty"`
	PermitOnlyProjectScopedClusters bool                   `json:"permitOnlyProjectScopedClusters,omitempty"`
	DestinationServiceAccounts      []runtime.RawExtension `json:"destinationServiceAccounts,omitempty"`
}
