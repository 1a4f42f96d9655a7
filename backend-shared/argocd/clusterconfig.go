package argocd

import (
	"encoding/json"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// ClusterRESTConfig is the client configuration an Argo CD cluster Secret describes: its
// server (without the query that tells managed environments apart) and the credentials
// (bearer token, client certificate or basic auth) and TLS settings of its config. Errors never quote the credentials.
func ClusterRESTConfig(sec *corev1.Secret) (*rest.Config, error) {
	server, err := url.Parse(string(sec.Data["server"]))
	if err != nil || server.Host == "" {
		return nil, fmt.Errorf("cluster Secret %s has no valid server", sec.Name)
	}
	server.RawQuery = ""
	var cfg argov1alpha1.ClusterConfig
	if err := json.Unmarshal(sec.Data["config"], &cfg); err != nil {
		return nil, fmt.Errorf("cluster Secret %s has a config that is not valid JSON", sec.Name)
	}
	return &rest.Config{
		Host:        server.String(),
		BearerToken: cfg.BearerToken,
		Username:    cfg.Username,
		Password:    cfg.Password,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cfg.Insecure,
			ServerName: cfg.ServerName,
			CAData:     cfg.CAData,
			CertData:   cfg.CertData,
			KeyData:    cfg.KeyData,
		},
	}, nil
}
