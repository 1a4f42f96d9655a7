// Package clusterconfig turns stored cluster credentials back into a client configuration:
// for the engine clusters the backend signals, and for the clusters of managed
// environments whose installed ServiceAccount it removes.
package clusterconfig

import (
	"errors"

	"k8s.io/client-go/rest"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/kubeconfig"
)

// FromCredentials is the client configuration of stored cluster credentials: the
// kubeconfig's context KubeconfigContext (else its current one), read by the rules of
// package kubeconfig, or Host with the bearer token. Errors never quote the kubeconfig.
func FromCredentials(creds *db.ClusterCredentials) (*rest.Config, error) {
	if creds.Kubeconfig == "" {
		return &rest.Config{Host: creds.Host, BearerToken: string(creds.BearerToken),
			TLSClientConfig: rest.TLSClientConfig{Insecure: creds.AllowInsecureSkipTLSVerify}}, nil
	}
	c, err := kubeconfig.Parse([]byte(creds.Kubeconfig), kubeconfig.Options{Context: creds.KubeconfigContext})
	if kubeconfig.KindOf(err) == kubeconfig.Unparseable {
		return nil, errors.New("the stored kubeconfig cannot be parsed")
	}
	if err != nil {
		// Not wrapped: the stored kubeconfig's context names are no one's business.
		return nil, errors.New("no client can be built from the stored kubeconfig")
	}
	return c.RESTConfig()
}
