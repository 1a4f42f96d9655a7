package argocd

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// An engine instance may run on another cluster than the service (a second engine
// cluster). Its Argo CD then reaches the tenants' namespaces on the service's cluster
// through a cluster Secret, ServiceClusterSecretName, instead of as "in-cluster". The
// database keeps saying InClusterServer: only the cluster-agent of such an instance
// rewrites it, so that a tenant moved between clusters needs no change to its rows.
const (
	// ServiceClusterSecretName is the cluster Secret of the service's cluster in the Argo CD
	// namespace of an engine instance on another cluster.
	ServiceClusterSecretName = "gitops-service-cluster"
	// LabelServiceCluster marks that Secret. It has no LabelManagedBy: the sweeps keep to
	// objects that have a row, and this one has none.
	LabelServiceCluster = "managed-gitops.redhat.com/service-cluster"
)

// ServiceServer is the server by which an Argo CD instance reaches the service's cluster:
// InClusterServer when it runs there (apiURL empty), else apiURL.
func ServiceServer(apiURL string) string {
	if apiURL == "" {
		return InClusterServer
	}
	return apiURL
}

// OnServiceCluster returns spec with an in-cluster destination pointed at server (see
// ServiceServer); other destinations are left alone.
func OnServiceCluster(spec argov1alpha1.ApplicationSpec, server string) argov1alpha1.ApplicationSpec {
	if spec.Destination.Server == InClusterServer && server != InClusterServer {
		spec.Destination.Server = server
	}
	return spec
}

// ServiceClusterSecret is the cluster Secret, in namespace, by which an Argo CD instance on
// another cluster reaches the service's cluster at apiURL. Not project-scoped: every
// tenant's local AppProject names the server, and each allows only its own namespaces.
func ServiceClusterSecret(namespace, apiURL string, tls argov1alpha1.TLSClientConfig, bearerToken string) (*corev1.Secret, error) {
	if apiURL == "" {
		return nil, fmt.Errorf("the service cluster has no API URL")
	}
	return clusterSecret(namespace, ServiceClusterSecretName, apiURL,
		argov1alpha1.ClusterConfig{BearerToken: bearerToken, TLSClientConfig: tls},
		map[string][]byte{}, map[string]string{LabelServiceCluster: "true"})
}
