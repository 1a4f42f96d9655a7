package v1alpha1

// ClusterConfig is the "config" of an Argo CD cluster Secret: how Argo CD authenticates to
// the cluster (JSON).
type ClusterConfig struct {
	Username        string `json:"username,omitempty"`
	Password        string `json:"password,omitempty"`
	BearerToken     string `json:"bearerToken,omitempty"`
	TLSClientConfig `json:"tlsClientConfig"`
}

// TLSClientConfig is the TLS part of a ClusterConfig.
type TLSClientConfig struct {
	Insecure   bool   `json:"insecure"`
	ServerName string `json:"serverName,omitempty"`
	CertData   []byte `json:"certData,omitempty"`
	KeyData    []byte `json:"keyData,omitempty"`
	CAData     []byte `json:"caData,omitempty"`
}

// Well-known names of Argo CD.
const (
	// KubernetesInternalAPIServerAddr is the in-cluster API server Argo CD deploys to by
	// default.
	KubernetesInternalAPIServerAddr = "https://kubernetes.default.svc"
	// AnnotationKeyRefresh on an Application asks Argo CD to refresh it.
	AnnotationKeyRefresh = "argocd.argoproj.io/refresh"
	// RefreshTypeNormal is the value of AnnotationKeyRefresh for a normal refresh.
	RefreshTypeNormal = "normal"
	// BackgroundPropagationPolicyFinalizer makes Argo CD delete an Application's resources
	// before the Application, in the background.
	BackgroundPropagationPolicyFinalizer = "resources-finalizer.argocd.argoproj.io/background"
)
