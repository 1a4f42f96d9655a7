/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ManagedEnvironmentSecretType is the type of the Secret referenced by
	// spec.credentialsSecret. The Secret holds a kubeconfig under the key "kubeconfig".
	ManagedEnvironmentSecretType corev1.SecretType = "managed-gitops.redhat.com/managed-environment"

	// ManagedEnvironmentSecretKubeconfigKey is the key of the kubeconfig in that Secret.
	ManagedEnvironmentSecretKubeconfigKey = "kubeconfig"
)

// GitOpsDeploymentManagedEnvironmentSpec is a target cluster and the credentials to reach it.
type GitOpsDeploymentManagedEnvironmentSpec struct {
	// APIURL is the URL of the cluster's Kubernetes API, for example
	// https://api.my-cluster.example.com:6443. It must be an https:// URL and must equal the
	// server of a cluster of the kubeconfig in the credentials Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://')",message="spec.apiURL must be an https:// URL"
	APIURL string `json:"apiURL"`

	// ClusterCredentialsSecret is the name of a Secret, in the same namespace, of type
	// managed-gitops.redhat.com/managed-environment, whose "kubeconfig" key holds a kubeconfig
	// for the cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClusterCredentialsSecret string `json:"credentialsSecret"`

	// AllowInsecureSkipTLSVerify lets the GitOps Service connect to the cluster even when its
	// TLS certificate is invalid or self-signed. Defaults to false.
	// +optional
	AllowInsecureSkipTLSVerify bool `json:"allowInsecureSkipTLSVerify,omitempty"`

	// CreateNewServiceAccount, when true, makes the GitOps Service use the given credentials
	// to create a ServiceAccount (with a ClusterRole and ClusterRoleBinding) on the cluster,
	// and deploy with that ServiceAccount from then on. When false (the default), the given
	// credentials are used as they are.
	// +optional
	CreateNewServiceAccount bool `json:"createNewServiceAccount,omitempty"`

	// Namespaces lists the namespaces that the credentials give access to. When empty, the
	// credentials are assumed to have read/write access to the whole cluster. Same meaning as
	// the field of the same name in an Argo CD cluster Secret.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// ClusterResources says whether cluster-scoped resources may be managed when Namespaces is
	// not empty (it is ignored otherwise). Defaults to false. Same meaning as the field of the
	// same name in an Argo CD cluster Secret.
	// +optional
	ClusterResources bool `json:"clusterResources,omitempty"`
}

// GitOpsDeploymentManagedEnvironmentStatus reports whether the cluster could be reached.
type GitOpsDeploymentManagedEnvironmentStatus struct {
	// ObservedGeneration is the metadata.generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: ConnectionInitializationSucceeded says whether the GitOps Service could
	// connect to the cluster with the given credentials, and if not, why; Ready, Reconciling
	// and Stalled say the same as kstatus reads them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ManagedEnvironmentConditionConnectionInitializationSucceeded is True when the GitOps
// Service connected to the cluster with the given credentials; when False, its reason and
// message say what is wrong.
const ManagedEnvironmentConditionConnectionInitializationSucceeded = "ConnectionInitializationSucceeded"

// ManagedEnvironmentConditionReason is a reason of the ConnectionInitializationSucceeded condition.
type ManagedEnvironmentConditionReason string

const (
	// ManagedEnvironmentReasonSucceeded: the connection succeeded.
	ManagedEnvironmentReasonSucceeded ManagedEnvironmentConditionReason = "Succeeded"
	// ManagedEnvironmentReasonUnsupportedAPIURL: spec.apiURL is not supported (for example it
	// has a query string).
	ManagedEnvironmentReasonUnsupportedAPIURL ManagedEnvironmentConditionReason = "UnsupportedAPIURL"
	// ManagedEnvironmentReasonInvalidSecretType: the credentials Secret is not of type
	// managed-gitops.redhat.com/managed-environment.
	ManagedEnvironmentReasonInvalidSecretType ManagedEnvironmentConditionReason = "InvalidSecretType"
	// ManagedEnvironmentReasonMissingKubeConfigField: the credentials Secret has no "kubeconfig" key.
	ManagedEnvironmentReasonMissingKubeConfigField ManagedEnvironmentConditionReason = "MissingKubeConfigField"
	// ManagedEnvironmentReasonUnableToParseKubeconfigData: the kubeconfig cannot be parsed.
	ManagedEnvironmentReasonUnableToParseKubeconfigData ManagedEnvironmentConditionReason = "UnableToParseKubeconfigData"
	// ManagedEnvironmentReasonUnableToLocateContext: the kubeconfig has no cluster whose server
	// is spec.apiURL (or no context using it).
	ManagedEnvironmentReasonUnableToLocateContext ManagedEnvironmentConditionReason = "UnableToLocateContext"
	// ManagedEnvironmentReasonUnableToCreateClient: no Kubernetes client could be built from
	// the kubeconfig.
	ManagedEnvironmentReasonUnableToCreateClient ManagedEnvironmentConditionReason = "UnableToCreateClient"
	// ManagedEnvironmentReasonUnableToInstallServiceAccount: with createNewServiceAccount, the
	// ServiceAccount (or its role binding or token) could not be created on the cluster.
	ManagedEnvironmentReasonUnableToInstallServiceAccount ManagedEnvironmentConditionReason = "UnableToInstallServiceAccount"
	// ManagedEnvironmentReasonUnableToValidateClusterCredentials: the cluster rejected the
	// credentials, or could not be reached with them.
	ManagedEnvironmentReasonUnableToValidateClusterCredentials ManagedEnvironmentConditionReason = "UnableToValidateClusterCredentials"
	// ManagedEnvironmentReasonInvalidNamespaceList: spec.namespaces is not a valid list of
	// namespace names.
	ManagedEnvironmentReasonInvalidNamespaceList ManagedEnvironmentConditionReason = "InvalidNamespaceList"
	// ManagedEnvironmentReasonUnableToCreateClusterCredentials: the cluster credentials could
	// not be stored.
	ManagedEnvironmentReasonUnableToCreateClusterCredentials ManagedEnvironmentConditionReason = "UnableToCreateClusterCredentials"
	// ManagedEnvironmentReasonUnableToRetrieveRestConfig: no client configuration could be
	// derived from the kubeconfig.
	ManagedEnvironmentReasonUnableToRetrieveRestConfig ManagedEnvironmentConditionReason = "UnableToRetrieveRestConfig"
	// ManagedEnvironmentReasonKubernetesError: reading Kubernetes resources (such as the
	// credentials Secret) failed.
	ManagedEnvironmentReasonKubernetesError ManagedEnvironmentConditionReason = "KubernetesError"
	// ManagedEnvironmentReasonDatabaseError: an internal error of the GitOps Service; it is retried.
	ManagedEnvironmentReasonDatabaseError ManagedEnvironmentConditionReason = "DatabaseError"
	// ManagedEnvironmentReasonUnknownError: an unexpected error; it is retried.
	ManagedEnvironmentReasonUnknownError ManagedEnvironmentConditionReason = "UnknownError"
)

// GitOpsDeploymentManagedEnvironment is a cluster that GitOpsDeployments can deploy to
// (through spec.destination.environment), with a reference to a Secret holding the
// credentials for it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitopsdeplmanagedenv,categories=gitops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="API URL",type=string,JSONPath=`.spec.apiURL`,description="The cluster's Kubernetes API"
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="ConnectionInitializationSucceeded")].status`,description="Whether the cluster could be reached"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="ConnectionInitializationSucceeded")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitOpsDeploymentManagedEnvironment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the cluster and its credentials.
	// +required
	Spec GitOpsDeploymentManagedEnvironmentSpec `json:"spec"`

	// Status reports whether the cluster could be reached.
	// +optional
	Status GitOpsDeploymentManagedEnvironmentStatus `json:"status,omitempty"`
}

// GitOpsDeploymentManagedEnvironmentList is a list of GitOpsDeploymentManagedEnvironments.
//
// +kubebuilder:object:root=true
type GitOpsDeploymentManagedEnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the GitOpsDeploymentManagedEnvironments.
	Items []GitOpsDeploymentManagedEnvironment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitOpsDeploymentManagedEnvironment{}, &GitOpsDeploymentManagedEnvironmentList{})
}
