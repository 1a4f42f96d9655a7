package managedenv

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

const fuzzSecretName = "cluster-credentials"

// fuzzKubeconfig is a well-formed kubeconfig for the seeds.
func fuzzKubeconfig(server, user string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: target
  cluster:
    server: %s
    insecure-skip-tls-verify: true
- name: other
  cluster:
    server: https://other.example.com:6443
contexts:
- name: target-ctx
  context:
    cluster: target
    user: target-user
    namespace: default
- name: other-ctx
  context:
    cluster: other
    user: target-user
current-context: other-ctx
users:
- name: target-user
  user:
%s
`, server, user))
}

// credentialReasons are the reasons Resolve may report.
var credentialReasons = map[v1.ManagedEnvironmentConditionReason]bool{
	v1.ManagedEnvironmentReasonUnsupportedAPIURL:           true,
	v1.ManagedEnvironmentReasonInvalidNamespaceList:        true,
	v1.ManagedEnvironmentReasonInvalidSecretType:           true,
	v1.ManagedEnvironmentReasonMissingKubeConfigField:      true,
	v1.ManagedEnvironmentReasonUnableToParseKubeconfigData: true,
	v1.ManagedEnvironmentReasonUnableToLocateContext:       true,
	v1.ManagedEnvironmentReasonUnableToCreateClient:        true,
}

// FuzzResolve feeds arbitrary kubeconfig bytes and spec.apiURL values to Resolve. Besides not
// panicking, it checks that a success is the context whose cluster's server is spec.apiURL,
// with inline credentials and no file the service would read; that a failure is a
// user error with a known reason; and that no credential of the kubeconfig reaches an
// error message: the credentials of every parsable input are replaced with unique markers,
// and Resolve is run again on the rewritten kubeconfig.
func FuzzResolve(f *testing.F) {
	const server = "https://api.cluster.example.com:6443"
	f.Add(fuzzKubeconfig(server, "    token: sha256~abcdefghijklmnop"), server, "", false)
	f.Add(fuzzKubeconfig(server, "    token: sha256~abcdefghijklmnop"), server+"/", "team-a", true)
	f.Add(fuzzKubeconfig(server+"/", "    token: sha256~abcdefghijklmnop"), server, "", false)
	f.Add(fuzzKubeconfig(server, "    token: sha256~abcdefghijklmnop"), server+"?x=1", "", false)
	f.Add(fuzzKubeconfig(server, "    token: sha256~abcdefghijklmnop"), "https://elsewhere.example.com", "", false)
	f.Add(fuzzKubeconfig(server, "    token: sha256~abcdefghijklmnop"), server, "Not_A_Namespace", false)
	f.Add(fuzzKubeconfig(server, "    username: admin\n    password: s3cr3t-passw0rd"), server, "", false)
	f.Add(fuzzKubeconfig(server, "    client-certificate-data: Y2VydA==\n    client-key-data: a2V5a2V5a2V5"), server, "", false)
	f.Add(fuzzKubeconfig(server, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/true"), server, "", false)
	f.Add(fuzzKubeconfig(server, "    auth-provider:\n      name: oidc"), server, "", false)
	// Files of the service's own filesystem must never be read (a tokenFile would send the
	// service's token to spec.apiURL).
	f.Add(fuzzKubeconfig(server, "    tokenFile: /etc/hosts"), server, "", false)
	f.Add(fuzzKubeconfig(server, "    client-certificate: /etc/hosts\n    client-key: /etc/hosts"), server, "", false)
	// A context without a user has no credential.
	f.Add(fuzzKubeconfig(server, "    {}"), server, "", false)
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://a\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"), "https://a", "", false)
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://b"}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],"users":[{"name":"u","user":{"token":"tok-1234567890"}}]}`), "https://b/", "", false)
	f.Add([]byte("not: [a kubeconfig"), server, "", false)
	f.Add([]byte{}, server, "", false)
	f.Add([]byte("\x00\xff"), "", "", false)

	f.Fuzz(func(t *testing.T, kubeconfig []byte, apiURL, namespace string, insecure bool) {
		checkResolve(t, kubeconfig, apiURL, namespace, insecure, nil)

		cfg, err := clientcmd.Load(kubeconfig)
		if err != nil || len(cfg.AuthInfos) == 0 {
			return
		}
		// The same document with every credential replaced by a marker that occurs nowhere else.
		var markers []string
		for name, user := range cfg.AuthInfos {
			if user == nil {
				continue
			}
			m := func(field string) string {
				s := fmt.Sprintf("MARKER%d%sZQXJ", len(markers), field)
				markers = append(markers, s)
				return s
			}
			u := user.DeepCopy()
			if u.Token != "" {
				u.Token = m("token")
			}
			if u.Password != "" {
				u.Password = m("password")
			}
			if len(u.ClientKeyData) > 0 {
				u.ClientKeyData = []byte(m("key"))
			}
			cfg.AuthInfos[name] = u
		}
		rewritten, err := clientcmd.Write(*cfg)
		if err != nil {
			return
		}
		public := apiURL + "\n" + namespace + "\n" + fuzzSecretName
		for name := range cfg.Contexts {
			public += "\n" + name
		}
		for _, s := range markers {
			if strings.Contains(public, s) || strings.Contains(string(kubeconfig), s) {
				return // the fuzzer wrote a marker itself
			}
		}
		checkResolve(t, rewritten, apiURL, namespace, insecure, markers)
	})
}

// checkResolve runs Resolve and checks its result; no error message may contain a secret.
func checkResolve(t *testing.T, kubeconfig []byte, apiURL, namespace string, insecure bool, secrets []string) {
	t.Helper()
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: "tenant"},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL:                     apiURL,
			ClusterCredentialsSecret:   fuzzSecretName,
			AllowInsecureSkipTLSVerify: insecure,
		},
	}
	if namespace != "" {
		env.Spec.Namespaces = []string{namespace}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fuzzSecretName, Namespace: "tenant"},
		Type:       v1.ManagedEnvironmentSecretType,
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}
	conn, err := Resolve(env, secret)

	// Deterministic: the same input resolves the same way.
	conn2, err2 := Resolve(env.DeepCopy(), secret.DeepCopy())
	if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) ||
		(conn != nil && (conn.ContextName != conn2.ContextName || conn.Config.Host != conn2.Config.Host)) {
		t.Fatalf("Resolve is not deterministic: (%v, %v) then (%v, %v)", conn, err, conn2, err2)
	}

	if err != nil {
		ce := outcome.As(err)
		if ce == nil || !outcome.IsUser(err) {
			t.Fatalf("error %v (%T) is not a user error: it would not be shown to the user", err, err)
		}
		if !credentialReasons[v1.ManagedEnvironmentConditionReason(ce.Reason)] {
			t.Fatalf("unexpected reason %q (%v)", ce.Reason, err)
		}
		if ce.Message == "" {
			t.Fatalf("empty message for reason %q", ce.Reason)
		}
		if strings.ContainsAny(apiURL, "?&#") && ce.Reason != string(v1.ManagedEnvironmentReasonUnsupportedAPIURL) {
			t.Fatalf("apiURL %q has a query but the reason is %q", apiURL, ce.Reason)
		}
		for _, s := range secrets {
			if strings.Contains(ce.Message, s) {
				t.Fatalf("error message quotes credential %q: %s", s, ce.Message)
			}
		}
		if ce.Reason == string(v1.ManagedEnvironmentReasonUnableToParseKubeconfigData) && len(kubeconfig) >= 8 &&
			strings.Contains(ce.Message, string(kubeconfig)) {
			t.Fatalf("error message quotes the kubeconfig: %s", ce.Message)
		}
		return
	}

	if conn == nil || conn.Config == nil {
		t.Fatalf("Resolve succeeded without a connection")
	}
	checkAcceptedAPIURL(t, apiURL)
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatalf("Resolve accepted a kubeconfig that does not load: %v", err)
	}
	kctx := cfg.Contexts[conn.ContextName]
	if kctx == nil {
		t.Fatalf("context %q is not in the kubeconfig", conn.ContextName)
	}
	cluster := cfg.Clusters[kctx.Cluster]
	if cluster == nil {
		t.Fatalf("cluster %q of context %q is not in the kubeconfig", kctx.Cluster, conn.ContextName)
	}
	if strings.TrimSuffix(cluster.Server, "/") != strings.TrimSuffix(apiURL, "/") {
		t.Fatalf("context %q uses server %q, not spec.apiURL %q", conn.ContextName, cluster.Server, apiURL)
	}
	if conn.Config.Host != cluster.Server {
		t.Fatalf("client host %q is not the cluster's server %q", conn.Config.Host, cluster.Server)
	}
	if conn.Config.ExecProvider != nil || conn.Config.AuthProvider != nil {
		t.Fatalf("context %q with a plugin was accepted", conn.ContextName)
	}
	c := conn.Config
	if c.BearerToken == "" && (len(c.CertData) == 0 || len(c.KeyData) == 0) && (c.Username == "" || c.Password == "") {
		t.Fatalf("context %q was accepted without a credential", conn.ContextName)
	}
	if c.BearerTokenFile != "" || c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" {
		t.Fatalf("context %q makes the service read local files: token %q cert %q key %q CA %q",
			conn.ContextName, c.BearerTokenFile, c.CertFile, c.KeyFile, c.CAFile)
	}
	if insecure && (!c.Insecure || len(c.CAData) > 0) {
		t.Fatalf("allowInsecureSkipTLSVerify is not applied: insecure=%v, %d bytes of CA", c.Insecure, len(c.CAData))
	}
	if !insecure && !c.Insecure && !cluster.InsecureSkipTLSVerify && len(c.CAData) != len(cluster.CertificateAuthorityData) {
		t.Fatalf("CA of the cluster is not used")
	}
}

// FuzzAPIURL checks the spec.apiURL rule: given a kubeconfig whose cluster's server is the
// same string, Resolve accepts an https:// API URL (the CRD's rule) only when the Argo CD
// cluster's server derived from it is a URL whose only query parameter is the
// managedEnvironment id, from which the API URL is recovered; and rejects any '?' or '&'
// as UnsupportedAPIURL.
func FuzzAPIURL(f *testing.F) {
	for _, u := range []string{
		"https://api.cluster.example.com:6443", "https://api.cluster.example.com:6443/", "https://10.0.0.1",
		"https://[::1]:6443/k8s/clusters/c-1", "https://host/path%20x", "https://host/a?b=c", "https://host/a&b",
		"https://host/#", "https://host/a#frag", "https://", "https://%zz", "https:// host", "https://user:pw@host",
	} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, apiURL string) {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: apiURL}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "sha256~token"}
		cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "x"
		kubeconfig, err := clientcmd.Write(*cfg)
		if err != nil {
			return // not a kubeconfig client-go can write; nothing to check
		}
		env := &v1.GitOpsDeploymentManagedEnvironment{Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: apiURL}}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fuzzSecretName}, Type: v1.ManagedEnvironmentSecretType,
			Data: map[string][]byte{"kubeconfig": kubeconfig}}
		_, err = Resolve(env, secret)
		ce := outcome.As(err)
		rejected := ce != nil && ce.Reason == string(v1.ManagedEnvironmentReasonUnsupportedAPIURL)
		if strings.ContainsAny(apiURL, "?&") && !rejected {
			t.Fatalf("apiURL %q with a query is not rejected as UnsupportedAPIURL: %v", apiURL, err)
		}
		if rejected || !strings.HasPrefix(apiURL, "https://") {
			return
		}
		checkAcceptedAPIURL(t, apiURL)
	})
}

// checkAcceptedAPIURL checks that an accepted apiURL gives a usable Argo CD cluster server.
func checkAcceptedAPIURL(t *testing.T, apiURL string) {
	t.Helper()
	if strings.ContainsAny(apiURL, "?&") {
		t.Fatalf("apiURL %q with a query was accepted", apiURL)
	}
	api, err := url.Parse(apiURL)
	if err != nil || api.Host == "" {
		t.Fatalf("accepted apiURL %q is not a URL with a host: %v", apiURL, err)
	}
	const id = "6f1c2a90-334b-4e8d-9a10-5521770eabcd"
	server := argocd.ClusterServerURL(apiURL, id)
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("cluster server %q of accepted apiURL %q does not parse: %v", server, apiURL, err)
	}
	if u.Scheme != api.Scheme || u.Host != api.Host || u.Path != api.Path || u.Fragment != "" || strings.Count(server, "?") != 1 {
		t.Fatalf("cluster server %q of accepted apiURL %q: scheme %q host %q path %q fragment %q",
			server, apiURL, u.Scheme, u.Host, u.Path, u.Fragment)
	}
	if q := u.Query(); len(q) != 1 || !slices.Equal(q["managedEnvironment"], []string{id}) {
		t.Fatalf("cluster server %q of accepted apiURL %q has query %v, want only managedEnvironment=%s", server, apiURL, q, id)
	}
	if base, ok := strings.CutSuffix(server, "?"+u.RawQuery); !ok || base != apiURL {
		t.Fatalf("apiURL %q is not recovered from cluster server %q", apiURL, server)
	}
}
