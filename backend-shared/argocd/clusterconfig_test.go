package argocd

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestClusterRESTConfigReadsWhatTheClusterSecretsSay(t *testing.T) {
	env, err := ClusterSecret("argocd", Cluster{ManagedEnvironmentID: "env-1", TenantID: "t", APIURL: "https://env.example.com:6443",
		BearerToken: "token", CAData: []byte("ca"), Namespaces: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ClusterRESTConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://env.example.com:6443" || cfg.BearerToken != "token" || string(cfg.CAData) != "ca" {
		t.Errorf("managed environment: host %q, token %q, CA %q", cfg.Host, cfg.BearerToken, cfg.CAData)
	}

	basic, err := ClusterSecret("argocd", Cluster{ManagedEnvironmentID: "env-2", APIURL: "https://env.example.com", Username: "u",
		Password: "p", Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = ClusterRESTConfig(basic); err != nil || cfg.Username != "u" || cfg.Password != "p" || !cfg.Insecure {
		t.Errorf("basic auth: %+v, %v", cfg, err)
	}

	for name, sec := range map[string]*corev1.Secret{
		"no server":         {Data: map[string][]byte{"config": []byte(`{"bearerToken":"secret-token"}`)}},
		"config not JSON":   {Data: map[string][]byte{"server": []byte("https://x"), "config": []byte(`{"bearerToken":"secret-token"`)}},
		"server not an URL": {Data: map[string][]byte{"server": []byte("://x"), "config": []byte(`{}`)}},
	} {
		_, err := ClusterRESTConfig(sec)
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "secret-token") {
			t.Errorf("%s: the error quotes the credentials: %v", name, err)
		}
	}
}
