/*
Copyright The GitOps Service Authors. Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// RepositoryCredentialSecretType is the type of the Secret referenced by spec.secret.
	RepositoryCredentialSecretType corev1.SecretType = "managed-gitops.redhat.com/repository-credential"

	// RepositoryCredentialSecretUsernameKey is the key of the Git user name in that Secret
	// (used with RepositoryCredentialSecretPasswordKey).
	RepositoryCredentialSecretUsernameKey = "username"
	// RepositoryCredentialSecretPasswordKey is the key of the Git password or access token.
	RepositoryCredentialSecretPasswordKey = "password"
	// RepositoryCredentialSecretSSHPrivateKeyKey is the key of an SSH private key (instead of
	// a user name and password).
	RepositoryCredentialSecretSSHPrivateKeyKey = "sshPrivateKey"
	// RepositoryCredentialSecretURLKey is the optional key repeating the repository URL.
	RepositoryCredentialSecretURLKey = "url"
)

// GitOpsDeploymentRepositoryCredentialSpec names a private Git repository and the Secret
// holding the credentials to read it.
//
// spec.repository is required by a rule rather than by the schema, so that a spec written
// with the older spelling spec.url gets both messages (the schema's "Required value" would
// stop the rules from running).
//
// +kubebuilder:validation:XValidation:rule="has(self.repository)",message="spec.repository is required: the URL of the private Git repository",fieldPath=".repository",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.url)",message="spec.url is the spelling of older documents: write the repository URL in spec.repository",fieldPath=".url",reason=FieldValueForbidden
type GitOpsDeploymentRepositoryCredentialSpec struct {
	// Repository is the URL of the private Git repository: an https:// URL (used with a user
	// name and password or token) or an ssh:// URL (used with an SSH private key). Required.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('ssh://')",message="spec.repository must begin with https:// or ssh://"
	Repository string `json:"repository"`

	// Secret is the name of a Secret, in the same namespace, holding either "username" and
	// "password" (a password or access token) or "sshPrivateKey".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Secret string `json:"secret"`

	// DeprecatedURL (url) is the spelling of older documents for repository. It is refused
	// with a message naming spec.repository; it is in the schema only so that the API server
	// does not drop it silently.
	// +optional
	DeprecatedURL string `json:"url,omitempty"`
}

// GitOpsDeploymentRepositoryCredentialStatus reports whether the repository and credentials
// are valid.
type GitOpsDeploymentRepositoryCredentialStatus struct {
	// ObservedGeneration is the metadata.generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: ValidRepositoryUrl says whether spec.repository is a usable URL,
	// ValidRepositoryCredential whether the credentials give access to it, and ErrorOccurred
	// reports any other error; Ready, Reconciling and Stalled say the same as kstatus reads
	// them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of a GitOpsDeploymentRepositoryCredential.
const (
	// RepositoryCredentialConditionErrorOccurred is True while the credential cannot be
	// processed (for example the Secret is missing or of the wrong type).
	RepositoryCredentialConditionErrorOccurred = "ErrorOccurred"
	// RepositoryCredentialConditionValidRepositoryUrl is True when spec.repository is a usable URL.
	RepositoryCredentialConditionValidRepositoryUrl = "ValidRepositoryUrl"
	// RepositoryCredentialConditionValidRepositoryCredential is True when the credentials
	// give access to the repository.
	RepositoryCredentialConditionValidRepositoryCredential = "ValidRepositoryCredential"
)

// Condition reasons of a GitOpsDeploymentRepositoryCredential.
const (
	// RepositoryCredentialReasonErrorOccurred: an error occurred (ErrorOccurred is True).
	RepositoryCredentialReasonErrorOccurred = "ErrorOccurred"
	// RepositoryCredentialReasonErrorOccurredResolved: the earlier error is gone (ErrorOccurred is False).
	RepositoryCredentialReasonErrorOccurredResolved = "ErrorOccurredResolved"
	// RepositoryCredentialReasonSecretNotFound: the Secret named by spec.secret does not exist.
	RepositoryCredentialReasonSecretNotFound = "SecretNotFound"
	// RepositoryCredentialReasonSecretInvalidType: the Secret is not of type
	// managed-gitops.redhat.com/repository-credential, or lacks the expected keys.
	RepositoryCredentialReasonSecretInvalidType = "SecretInvalidType"
	// RepositoryCredentialReasonValidRepositoryUrl: spec.repository is usable (ValidRepositoryUrl is True).
	RepositoryCredentialReasonValidRepositoryUrl = "ValidRepositoryUrl"
	// RepositoryCredentialReasonInvalidRepositoryUrl: spec.repository is not usable (ValidRepositoryUrl is False).
	RepositoryCredentialReasonInvalidRepositoryUrl = "InvalidRepositoryUrl"
	// RepositoryCredentialReasonValidCredentials: the credentials give access (ValidRepositoryCredential is True).
	RepositoryCredentialReasonValidCredentials = "ValidCredentials"
	// RepositoryCredentialReasonInvalidCredentials: the repository refused the credentials
	// (ValidRepositoryCredential is False).
	RepositoryCredentialReasonInvalidCredentials = "InvalidCredentials"
	// RepositoryCredentialReasonCredentialsUpToDate: the credentials in use are the current ones.
	RepositoryCredentialReasonCredentialsUpToDate = "RepositoryCredentialUpToDate"
)

// GitOpsDeploymentRepositoryCredential gives the GitOps Service credentials for a private Git
// repository. Public repositories need none.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitopsdeplrepocred,categories=gitops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secret`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="ValidRepositoryCredential")].status`,description="Whether the credentials give access to the repository"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitOpsDeploymentRepositoryCredential struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the repository and its credentials.
	// +required
	Spec GitOpsDeploymentRepositoryCredentialSpec `json:"spec"`

	// Status reports whether the repository and credentials are valid.
	// +optional
	Status GitOpsDeploymentRepositoryCredentialStatus `json:"status,omitempty"`
}

// GitOpsDeploymentRepositoryCredentialList is a list of GitOpsDeploymentRepositoryCredentials.
//
// +kubebuilder:object:root=true
type GitOpsDeploymentRepositoryCredentialList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the GitOpsDeploymentRepositoryCredentials.
	Items []GitOpsDeploymentRepositoryCredential `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitOpsDeploymentRepositoryCredential{}, &GitOpsDeploymentRepositoryCredentialList{})
}
