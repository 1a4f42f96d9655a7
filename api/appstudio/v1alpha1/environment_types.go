/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentStrategyType is the promotion strategy of an Environment.
// +kubebuilder:validation:Enum=AppStudioAutomated;Manual
type DeploymentStrategyType string

const (
	// DeploymentStrategyManual: promotion to the Environment happens only on an explicit user
	// action (for example a PromotionRun).
	DeploymentStrategyManual DeploymentStrategyType = "Manual"

	// DeploymentStrategyAppStudioAutomated: a successful promotion to the parent Environment
	// automatically promotes to this one, and an Environment without a parent is promoted to
	// automatically.
	DeploymentStrategyAppStudioAutomated DeploymentStrategyType = "AppStudioAutomated"
)

// ConfigurationClusterType is the kind of cluster an Environment targets.
// +kubebuilder:validation:Enum=Kubernetes;OpenShift
type ConfigurationClusterType string

const (
	// ConfigurationClusterTypeKubernetes: a generic Kubernetes cluster.
	ConfigurationClusterTypeKubernetes ConfigurationClusterType = "Kubernetes"
	// ConfigurationClusterTypeOpenShift: an OpenShift cluster.
	ConfigurationClusterTypeOpenShift ConfigurationClusterType = "OpenShift"
)

// EnvironmentSpec describes a place to deploy to, and how promotions reach it.
type EnvironmentSpec struct {
	// DisplayName is a user-visible name for the Environment. It has no effect on behaviour.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	DisplayName string `json:"displayName,omitempty"`

	// DeploymentStrategy is how promotions reach this Environment: AppStudioAutomated (after a
	// successful promotion to the parent Environment) or Manual (on a user action).
	// +optional
	DeploymentStrategy DeploymentStrategyType `json:"deploymentStrategy,omitempty"`

	// ParentEnvironment is the name of another Environment in the namespace that promotions
	// come from (for example dev -> staging -> production).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ParentEnvironment string `json:"parentEnvironment,omitempty"`

	// Tags are user-defined tags of the Environment.
	// +optional
	Tags []string `json:"tags,omitempty"`

	// Configuration holds environment-specific settings used when deploying to this
	// Environment, such as environment variables, and the DeploymentTargetClaim to deploy to.
	// +optional
	Configuration EnvironmentConfiguration `json:"configuration,omitempty"`

	// UnstableConfigurationFields holds the credentials of a remote cluster to deploy to.
	// These fields are expected to change in later versions of the API.
	// +optional
	UnstableConfigurationFields *UnstableEnvironmentConfiguration `json:"unstableConfigurationFields,omitempty"`
}

// EnvironmentConfiguration holds environment-specific settings.
type EnvironmentConfiguration struct {
	// Env lists environment variables given to the components deployed to this Environment.
	// +optional
	Env []EnvVarPair `json:"env,omitempty"`

	// Target references the DeploymentTargetClaim whose bound DeploymentTarget (a cluster and
	// namespace, with credentials) this Environment deploys to.
	// +optional
	Target *EnvironmentTarget `json:"target,omitempty"`
}

// EnvironmentTarget references the DeploymentTargetClaim an Environment deploys to.
type EnvironmentTarget struct {
	// DeploymentTargetClaim names the claim.
	// +required
	DeploymentTargetClaim DeploymentTargetClaimConfig `json:"deploymentTargetClaim"`
}

// DeploymentTargetClaimConfig names a DeploymentTargetClaim.
type DeploymentTargetClaimConfig struct {
	// ClaimName is the name of a DeploymentTargetClaim in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`
}

// EnvVarPair is an environment variable.
type EnvVarPair struct {
	// Name of the variable.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Value of the variable.
	// +optional
	Value string `json:"value,omitempty"`
}

// UnstableEnvironmentConfiguration holds the credentials of a remote cluster to deploy to.
// These fields are expected to change in later versions of the API.
type UnstableEnvironmentConfiguration struct {
	// ClusterType is Kubernetes or OpenShift.
	// +optional
	ClusterType ConfigurationClusterType `json:"clusterType,omitempty"`

	// KubernetesClusterCredentials are the credentials of the target cluster. They correspond
	// to the fields of a GitOpsDeploymentManagedEnvironment.
	// +optional
	KubernetesClusterCredentials KubernetesClusterCredentials `json:"kubernetesCredentials,omitempty"`
}

// targetNamespace is required (a rule, for a clear message). Environments stored before the
// rule may lack it: the binding controller reports them (MissingTargetNamespace).
// +kubebuilder:validation:XValidation:rule="has(self.targetNamespace) && self.targetNamespace != ''",message="targetNamespace is required with kubernetesCredentials: the namespace of the remote cluster to deploy to"

// KubernetesClusterCredentials are the credentials of a target cluster.
type KubernetesClusterCredentials struct {
	// TargetNamespace is the namespace deployed to, for resources that do not set
	// metadata.namespace themselves. Required.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// APIURL is the https:// URL of the cluster's Kubernetes API; it must equal the server of
	// a cluster of the kubeconfig in ClusterCredentialsSecret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://')",message="apiURL must be an https:// URL"
	APIURL string `json:"apiURL"`

	// IngressDomain is the cluster's ingress domain (for example apps.my-cluster.example.com).
	// +optional
	IngressDomain string `json:"ingressDomain,omitempty"`

	// ClusterCredentialsSecret is the name of a Secret, in the same namespace, of type
	// managed-gitops.redhat.com/managed-environment, whose "kubeconfig" key holds a kubeconfig
	// for the cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClusterCredentialsSecret string `json:"clusterCredentialsSecret"`

	// AllowInsecureSkipTLSVerify lets the GitOps Service connect to the cluster even when its
	// TLS certificate is invalid or self-signed. Defaults to false.
	// +optional
	AllowInsecureSkipTLSVerify bool `json:"allowInsecureSkipTLSVerify,omitempty"`

	// Namespaces lists the namespaces the credentials give access to; empty means the whole
	// cluster. See GitOpsDeploymentManagedEnvironment's field of the same name.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// ClusterResources says whether cluster-scoped resources may be managed when Namespaces
	// is not empty. See GitOpsDeploymentManagedEnvironment's field of the same name.
	// +optional
	ClusterResources bool `json:"clusterResources,omitempty"`
}

// EnvironmentStatus is what the GitOps Service observed of an Environment.
type EnvironmentStatus struct {
	// ObservedGeneration is the metadata.generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions report problems with the Environment (type ErrorOccurred) and, as kstatus
	// reads them, whether it can be deployed to (Ready: its cluster, if any, is connected),
	// is still being set up (Reconciling) or cannot be without a change (Stalled).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

const (
	// EnvironmentConditionErrorOccurred is True while the Environment cannot be turned into
	// a deployment target (for example its DeploymentTargetClaim is not bound, or its
	// credentials Secret is missing); its message says why.
	EnvironmentConditionErrorOccurred = "ErrorOccurred"
	// EnvironmentReasonErrorOccurred: an error occurred (ErrorOccurred is True).
	EnvironmentReasonErrorOccurred = "ErrorOccurred"
	// EnvironmentReasonErrorOccurredResolved: the earlier error is gone (ErrorOccurred is False).
	EnvironmentReasonErrorOccurredResolved = "ErrorOccurredResolved"
)

// Environment is a place that Applications are deployed to (a namespace of this cluster, or
// a remote cluster and namespace), with the configuration specific to it and its position in
// the promotion graph.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=env,categories=appstudio
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the Environment can be deployed to"
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.deploymentStrategy`
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentEnvironment`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Environment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the Environment.
	// +optional
	Spec EnvironmentSpec `json:"spec,omitempty"`

	// Status is what the GitOps Service observed.
	// +optional
	Status EnvironmentStatus `json:"status,omitempty"`
}

// EnvironmentList is a list of Environments.
//
// +kubebuilder:object:root=true
type EnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Environments.
	Items []Environment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Environment{}, &EnvironmentList{})
}
