package argocd

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// Argo CD applies what a tenant deploys to the service's cluster with the credentials of the
// cluster entry the Application names. The in-cluster entry is Argo CD's own identity, which
// may do anything anywhere; so each tenant gets its own entry instead: the same API server,
// told apart by a query parameter (as managed environments are, see ClusterServerURL), with
// the token of a ServiceAccount in the tenant's namespace and only that namespace watched.
// Kubernetes then refuses for the service what it would refuse that ServiceAccount.
const (
	// TenantDeployerName is the ServiceAccount, and its RoleBinding, that the service keeps in
	// a tenant's namespace to deploy there.
	TenantDeployerName = "gitops-service-deployer"
	// LabelTenantCluster marks a tenant's cluster Secret with its tenant id. It has no
	// LabelManagedBy: the sweeps keep to objects that have a row, and this one has none.
	LabelTenantCluster = "managed-gitops.redhat.com/tenant-cluster"
	// AnnotationTokenRenewAfter on a tenant's cluster Secret is when its token is due for
	// renewal (RFC 3339).
	AnnotationTokenRenewAfter = "managed-gitops.redhat.com/token-renew-after"

	tenantServerQuery = "?tenant="
)

// TenantClusterSecretName is the cluster Secret of a tenant's namespace.
func TenantClusterSecretName(tenantID string) string { return "tenant-" + tenantID }

// TenantServer is the `server` of a tenant's cluster Secret, for the service's cluster
// reached at apiURL.
func TenantServer(apiURL, tenantID string) string {
	return NormalizeAPIURL(apiURL) + tenantServerQuery + tenantID
}

// IsTenantServer says whether server is a tenant's cluster entry (see TenantServer).
func IsTenantServer(server string) bool { return strings.Contains(server, tenantServerQuery) }

// TenantClusterSecret is the cluster Secret, in namespace, by which Argo CD deploys into the
// tenant's namespace with token, a token of TenantDeployerName there to be renewed after
// renewAfter. Argo CD watches only that namespace and no cluster-scoped kind through it.
func TenantClusterSecret(namespace, tenantID, apiURL, tenantNamespace string, tls argov1alpha1.TLSClientConfig,
	token string, renewAfter time.Time) (*corev1.Secret, error) {
	sec, err := clusterSecret(namespace, TenantClusterSecretName(tenantID), TenantServer(apiURL, tenantID),
		argov1alpha1.ClusterConfig{BearerToken: token, TLSClientConfig: tls},
		map[string][]byte{"namespaces": []byte(tenantNamespace), "clusterResources": []byte("false")},
		map[string]string{LabelTenantCluster: tenantID})
	if err != nil {
		return nil, err
	}
	sec.Annotations[AnnotationTokenRenewAfter] = renewAfter.UTC().Format(time.RFC3339)
	return sec, nil
}

// TokenRenewAfter is when the token of a tenant's cluster Secret is due for renewal; the zero
// time (due now) when the Secret does not say.
func TokenRenewAfter(sec *corev1.Secret) time.Time {
	t, err := time.Parse(time.RFC3339, sec.Annotations[AnnotationTokenRenewAfter])
	if err != nil {
		return time.Time{}
	}
	return t
}
