package argocd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// Argo CD's labels that make a Secret a cluster or repository definition.
const (
	LabelSecretType           = "argocd.argoproj.io/secret-type" //nolint:gosec // a label name, not a credential
	SecretTypeCluster         = "cluster"
	SecretTypeRepository      = "repository"
	LabelManagedEnvironmentID = "managed-gitops.redhat.com/managed-environment-id"
	LabelRepositoryCredID     = "managed-gitops.redhat.com/repository-credential-id"
	// AnnotationDataHash holds DataHash of the data the service wrote, so that the sweep can
	// tell a Secret edited by hand without reading the credentials from the database.
	AnnotationDataHash = "managed-gitops.redhat.com/data-hash"
)

// DataHash is a SHA-256 of a Secret's data (keys sorted).
func DataHash(data map[string][]byte) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		// Length-prefixed, so that no two different maps hash alike by concatenation.
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(data[k]))
		h.Write(data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NormalizeAPIURL is the form in which API URLs are compared: without trailing slashes,
// which do not change the server a client reaches (spec.apiURL is stored as given). The backend (choosing the
// kubeconfig context of spec.apiURL) and the cluster-agent (finding the kubeconfig cluster
// of the stored API URL) both compare with it, so that they always agree.
func NormalizeAPIURL(apiURL string) string {
	return strings.TrimRight(apiURL, "/")
}

// SameAPIURL says whether two API URLs name the same server (see NormalizeAPIURL).
func SameAPIURL(a, b string) bool {
	return NormalizeAPIURL(a) == NormalizeAPIURL(b)
}

// Cluster is what a cluster Secret says about a managed environment. Argo CD authenticates
// with the bearer token, else the client certificate and key, else the username and
// password.
type Cluster struct {
	ManagedEnvironmentID string
	TenantID             string
	APIURL               string
	BearerToken          string
	// CertData and KeyData are a PEM client certificate and its key.
	CertData []byte
	KeyData  []byte
	Username string
	Password string
	CAData   []byte
	Insecure bool
	// ServerName is the name the cluster's certificate is verified against, when not the
	// API URL's host (the kubeconfig's tls-server-name).
	ServerName string
	// Namespaces limits Argo CD to these namespaces; empty means cluster-wide.
	Namespaces       []string
	ClusterResources bool
}

// ClusterSecret is the Argo CD cluster Secret of a managed environment.
func ClusterSecret(namespace string, c Cluster) (*corev1.Secret, error) {
	data := map[string][]byte{
		// Scoping the cluster to the tenant's project keeps other tenants' Applications off it.
		"project": []byte(RemoteAppProjectName(c.TenantID)),
	}
	if len(c.Namespaces) > 0 {
		data["namespaces"] = []byte(strings.Join(c.Namespaces, ","))
		data["clusterResources"] = []byte(strconv.FormatBool(c.ClusterResources))
	}
	return clusterSecret(namespace, ClusterSecretName(c.ManagedEnvironmentID), ClusterServerURL(c.APIURL, c.ManagedEnvironmentID),
		argov1alpha1.ClusterConfig{
			BearerToken: c.BearerToken,
			Username:    c.Username,
			Password:    c.Password,
			TLSClientConfig: argov1alpha1.TLSClientConfig{
				Insecure:   c.Insecure,
				ServerName: c.ServerName,
				CAData:     c.CAData,
				CertData:   c.CertData,
				KeyData:    c.KeyData,
			},
		}, data, map[string]string{
			LabelManagedBy:            ManagedByValue,
			LabelTenantID:             c.TenantID,
			LabelManagedEnvironmentID: c.ManagedEnvironmentID,
		})
}

// clusterSecret is an Argo CD cluster Secret called name for server, with data and labels
// besides the ones every cluster Secret has, and the hash of its data.
func clusterSecret(namespace, name, server string, config argov1alpha1.ClusterConfig, data map[string][]byte,
	labels map[string]string) (*corev1.Secret, error) {
	raw, err := json.Marshal(config) //nolint:gosec // Argo CD reads the credentials from this Secret
	if err != nil {
		return nil, err
	}
	data["name"], data["server"], data["config"] = []byte(name), []byte(server), raw
	labels[LabelSecretType] = SecretTypeCluster
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   namespace,
			Labels:      labels,
			Annotations: map[string]string{AnnotationDataHash: DataHash(data)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}, nil
}

// Drifted says whether a Secret's data differs from the hash the service wrote with it
// (false for a Secret without that hash).
func Drifted(sec *corev1.Secret) bool {
	want, ok := sec.Annotations[AnnotationDataHash]
	return ok && DataHash(sec.Data) != want
}

// Repository is what a repository Secret says about a repository credential.
type Repository struct {
	RepositoryCredentialID string
	TenantID               string
	URL                    string
	Username               string
	Password               string
	SSHPrivateKey          string
}

// RepositorySecrets are the Argo CD repository Secrets of a repository credential, one per
// AppProject of the tenant: Argo CD hands a project-scoped repository Secret only to the
// Applications of that project, which keeps other tenants from using it.
func RepositorySecrets(namespace string, r Repository) []*corev1.Secret {
	return []*corev1.Secret{
		repositorySecret(namespace, RepositorySecretName(r.RepositoryCredentialID), AppProjectName(r.TenantID), r),
		repositorySecret(namespace, RemoteRepositorySecretName(r.RepositoryCredentialID), RemoteAppProjectName(r.TenantID), r),
	}
}

func repositorySecret(namespace, name, project string, r Repository) *corev1.Secret {
	data := map[string][]byte{
		"type":    []byte("git"),
		"url":     []byte(r.URL),
		"project": []byte(project),
	}
	if r.SSHPrivateKey != "" {
		data["sshPrivateKey"] = []byte(r.SSHPrivateKey)
	} else {
		data["username"] = []byte(r.Username)
		data["password"] = []byte(r.Password)
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels: map[string]string{
				LabelSecretType:       SecretTypeRepository,
				LabelManagedBy:        ManagedByValue,
				LabelTenantID:         r.TenantID,
				LabelRepositoryCredID: r.RepositoryCredentialID,
			},
			Annotations: map[string]string{AnnotationDataHash: DataHash(data)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}
