package credsecret

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

const apiURL = "https://api.example.com:6443"

func kubeconfigDoc(t *testing.T, mutate func(*clientcmdapi.Config)) db.Secret {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other.example.com", CertificateAuthorityData: []byte("other-ca")}
	cfg.Clusters["target"] = &clientcmdapi.Cluster{Server: apiURL, CertificateAuthorityData: []byte("target-ca")}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "admin-token"}
	cfg.AuthInfos["viewer"] = &clientcmdapi.AuthInfo{Token: "viewer-token"}
	cfg.AuthInfos["cert"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c"), ClientKeyData: []byte("k")}
	cfg.AuthInfos["basic"] = &clientcmdapi.AuthInfo{Username: "u", Password: "p"}
	cfg.AuthInfos["empty"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["a-admin"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "admin"}
	cfg.Contexts["b-viewer"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "viewer"}
	cfg.Contexts["c-cert"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "cert"}
	cfg.Contexts["d-basic"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "basic"}
	cfg.Contexts["e-empty"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "empty"}
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "admin"}
	cfg.CurrentContext = "other"
	if mutate != nil {
		mutate(cfg)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return db.Secret(data)
}

func TestClusterFromCredentials(t *testing.T) {
	tests := []struct {
		name      string
		creds     db.ClusterCredentials
		wantToken string
		wantCert  string
		wantKey   string
		wantUser  string
		wantPass  string
		wantCA    string
		// insecure is spec.allowInsecureSkipTLSVerify; wantServerName the certificate's name.
		insecure       bool
		wantServerName string
		problem        string
	}{
		// TLS as the backend's check verified it.
		{name: "allowInsecureSkipTLSVerify: no CA to verify with", wantToken: "admin-token", insecure: true,
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, nil)}},
		{name: "the kubeconfig's tls-server-name", wantToken: "admin-token", wantCA: "target-ca", wantServerName: "api.internal",
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, func(c *clientcmdapi.Config) { c.Clusters["target"].TLSServerName = "api.internal" })}},
		{name: "stored bearer token wins", wantToken: "sa-token", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, BearerToken: "sa-token", Kubeconfig: kubeconfigDoc(t, nil)}},
		{name: "bearer token without kubeconfig", wantToken: "sa-token",
			creds: db.ClusterCredentials{Host: apiURL, BearerToken: "sa-token"}},
		{name: "named context", wantToken: "viewer-token", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, nil), KubeconfigContext: "b-viewer"}},
		{name: "current context when it uses the cluster", wantToken: "viewer-token", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, func(c *clientcmdapi.Config) { c.CurrentContext = "b-viewer" })}},
		{name: "first context of the cluster by name", wantToken: "admin-token", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, nil)}},
		{name: "named context of another cluster is ignored", wantToken: "admin-token", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, nil), KubeconfigContext: "other"}},
		{name: "client certificate", wantCert: "c", wantKey: "k", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, nil), KubeconfigContext: "c-cert"}},
		{name: "username and password", wantUser: "u", wantPass: "p", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, nil), KubeconfigContext: "d-basic"}},
		{name: "stored bearer token wins over a client certificate", wantToken: "sa-token", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, BearerToken: "sa-token", Kubeconfig: kubeconfigDoc(t, nil), KubeconfigContext: "c-cert"}},
		{name: "API URL with a trailing slash", wantToken: "admin-token", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL + "/", Kubeconfig: kubeconfigDoc(t, nil)}},
		{name: "kubeconfig server with a trailing slash", wantToken: "admin-token", wantCA: "target-ca",
			creds: db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, func(c *clientcmdapi.Config) { c.Clusters["target"].Server = apiURL + "/" })}},
		{name: "no credentials",
			creds:   db.ClusterCredentials{Host: apiURL, Kubeconfig: kubeconfigDoc(t, nil), KubeconfigContext: "e-empty"},
			problem: "the managed environment's credentials have no bearer token, client certificate and key, or username and password: use a kubeconfig whose user has one of them inline, or createNewServiceAccount: true"},
		{name: "no cluster with the API URL",
			creds:   db.ClusterCredentials{Host: "https://nowhere.example.com", Kubeconfig: kubeconfigDoc(t, nil)},
			problem: "the managed environment's kubeconfig has no cluster whose server is https://nowhere.example.com"},
		{name: "unparseable kubeconfig",
			creds:   db.ClusterCredentials{Host: apiURL, Kubeconfig: "token: secret-value\n\t: ["},
			problem: "the managed environment's kubeconfig cannot be parsed"},
		{name: "no API URL", creds: db.ClusterCredentials{BearerToken: "t"}, problem: "the managed environment has no API URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.creds.Namespaces = []string{"a", "b"}
			tt.creds.AllowInsecureSkipTLSVerify = tt.insecure
			cluster, problem := ClusterFromCredentials("env-1", "tenant-1", &tt.creds)
			g.Expect(problem).To(Equal(tt.problem))
			g.Expect(problem).NotTo(ContainSubstring("secret-value"))
			if tt.problem != "" {
				return
			}
			g.Expect(cluster.ManagedEnvironmentID).To(Equal("env-1"))
			g.Expect(cluster.TenantID).To(Equal("tenant-1"))
			g.Expect(cluster.APIURL).To(Equal(tt.creds.Host))
			g.Expect(cluster.BearerToken).To(Equal(tt.wantToken))
			g.Expect(string(cluster.CertData)).To(Equal(tt.wantCert))
			g.Expect(string(cluster.KeyData)).To(Equal(tt.wantKey))
			g.Expect(cluster.Username).To(Equal(tt.wantUser))
			g.Expect(cluster.Password).To(Equal(tt.wantPass))
			g.Expect(string(cluster.CAData)).To(Equal(tt.wantCA))
			g.Expect(cluster.Insecure).To(Equal(tt.insecure))
			g.Expect(cluster.ServerName).To(Equal(tt.wantServerName))
			g.Expect(cluster.Namespaces).To(Equal([]string{"a", "b"}))
		})
	}
}
