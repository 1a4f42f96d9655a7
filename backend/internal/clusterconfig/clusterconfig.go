// Package clusterconfig turns stored cluster credentials back into a client configuration:
// for the engine clusters the backend signals, and for the clusters of managed
// environments whose installed ServiceAccount it removes.
package clusterconfig

import (
	"errors"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// FromCredentials is the client configuration of stored cluster credentials: the
// kubeconfig's context KubeconfigContext (else its current one), or Host with the bearer
// token. Errors never quote the kubeconfig.
func FromCredentials(creds *db.ClusterCredentials) (*rest.Config, error) {
	if creds.Kubeconfig == "" {
		return &rest.Config{Host: creds.Host, BearerToken: string(creds.BearerToken),
			TLSClientConfig: rest.TLSClientConfig{Insecure: creds.AllowInsecureSkipTLSVerify}}, nil
	}
	raw, err := clientcmd.Load([]byte(creds.Kubeconfig))
	if err != nil {
		return nil, errors.New("the stored kubeconfig cannot be parsed")
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, creds.KubeconfigContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, errors.New("no client can be built from the stored kubeconfig")
	}
	return cfg, nil
}
