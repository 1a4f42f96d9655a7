package managedenv

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

const (
	resolveAPIURL = "https://api.cluster.example.com:6443"
	resolveToken  = "sha256~s3cr3t-t0ken-value"
)

// resolveKubeconfig has two contexts: "target" on resolveAPIURL (with a CA) and the current
// one, "other", on another cluster; user is the YAML of the target context's user.
func resolveKubeconfig(server, user string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: target
  cluster:
    server: %s
    certificate-authority-data: Y2EtZGF0YQ==
    tls-server-name: api.internal
- name: other
  cluster:
    server: https://other.example.com:6443
contexts:
- name: target
  context:
    cluster: target
    user: target-user
- name: other
  context:
    cluster: other
    user: other-user
current-context: other
users:
- name: target-user
  user:
%s
- name: other-user
  user:
    token: other-token
`, server, user))
}

func TestResolveReasons(t *testing.T) {
	tokenUser := "    token: " + resolveToken
	tests := []struct {
		name       string
		apiURL     string
		namespaces []string
		secretType corev1.SecretType
		data       map[string][]byte
		wantReason v1.ManagedEnvironmentConditionReason
		// wantMessage is a part of the message the user reads.
		wantMessage string
	}{
		{name: "not a URL", apiURL: "api.cluster.example.com", wantReason: v1.ManagedEnvironmentReasonUnsupportedAPIURL,
			wantMessage: "spec.apiURL is not a URL with a host"},
		{name: "a URL without a host", apiURL: "https://", wantReason: v1.ManagedEnvironmentReasonUnsupportedAPIURL},
		{name: "user information in the URL", apiURL: "https://admin:hunter2@api.cluster.example.com:6443",
			wantReason: v1.ManagedEnvironmentReasonUnsupportedAPIURL, wantMessage: "must not contain user information"},
		// The service adds ?managedEnvironment=<id> to the Argo CD cluster's server.
		{name: "a query", apiURL: resolveAPIURL + "?x=1", wantReason: v1.ManagedEnvironmentReasonUnsupportedAPIURL,
			wantMessage: "must not contain a query or fragment"},
		{name: "an ampersand", apiURL: resolveAPIURL + "/a&b", wantReason: v1.ManagedEnvironmentReasonUnsupportedAPIURL},
		{name: "a fragment", apiURL: resolveAPIURL + "#x", wantReason: v1.ManagedEnvironmentReasonUnsupportedAPIURL},
		{name: "an invalid namespace", namespaces: []string{"team-a", "Team_B"}, wantReason: v1.ManagedEnvironmentReasonInvalidNamespaceList,
			wantMessage: `spec.namespaces: "Team_B" is not a valid namespace name`},
		{name: "an empty namespace", namespaces: []string{""}, wantReason: v1.ManagedEnvironmentReasonInvalidNamespaceList},
		{name: "an Opaque Secret", secretType: corev1.SecretTypeOpaque, wantReason: v1.ManagedEnvironmentReasonInvalidSecretType,
			wantMessage: `Secret "creds" has type "Opaque"; it must be of type "managed-gitops.redhat.com/managed-environment"`},
		{name: "no kubeconfig key", data: map[string][]byte{"config": resolveKubeconfig(resolveAPIURL, tokenUser)},
			wantReason: v1.ManagedEnvironmentReasonMissingKubeConfigField, wantMessage: `Secret "creds" has no 'kubeconfig' key`},
		{name: "an empty kubeconfig", data: map[string][]byte{"kubeconfig": {}}, wantReason: v1.ManagedEnvironmentReasonMissingKubeConfigField},
		{name: "not a kubeconfig", data: map[string][]byte{"kubeconfig": []byte("clusters: [unclosed")},
			wantReason: v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, wantMessage: "is not a valid kubeconfig file"},
		// The current context does not count: only the cluster whose server is spec.apiURL.
		{name: "no context for spec.apiURL", apiURL: "https://another.example.com", wantReason: v1.ManagedEnvironmentReasonUnableToLocateContext,
			wantMessage: "has no context whose cluster's server is https://another.example.com (spec.apiURL)"},
		{name: "an exec plugin", data: map[string][]byte{"kubeconfig": resolveKubeconfig(resolveAPIURL,
			"    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws")},
			wantReason: v1.ManagedEnvironmentReasonUnableToCreateClient, wantMessage: "plugin"},
		// A token file would make the service read, and send, a file of its own.
		{name: "a token file", data: map[string][]byte{"kubeconfig": resolveKubeconfig(resolveAPIURL, "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token")},
			wantReason: v1.ManagedEnvironmentReasonUnableToCreateClient, wantMessage: "local files"},
		{name: "no credentials", data: map[string][]byte{"kubeconfig": resolveKubeconfig(resolveAPIURL, "    {}")},
			wantReason: v1.ManagedEnvironmentReasonUnableToCreateClient, wantMessage: "has no credentials"},
		// Checked in the order of the spec: a bad apiURL is reported before a bad Secret.
		{name: "a bad apiURL and a bad Secret", apiURL: resolveAPIURL + "?x", secretType: corev1.SecretTypeOpaque,
			wantReason: v1.ManagedEnvironmentReasonUnsupportedAPIURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			env := &v1.GitOpsDeploymentManagedEnvironment{
				ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: "jane"},
				Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: resolveAPIURL, ClusterCredentialsSecret: "creds",
					Namespaces: tt.namespaces},
			}
			if tt.apiURL != "" {
				env.Spec.APIURL = tt.apiURL
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "jane"}, Type: v1.ManagedEnvironmentSecretType,
				Data: map[string][]byte{"kubeconfig": resolveKubeconfig(resolveAPIURL, tokenUser)}}
			if tt.secretType != "" {
				secret.Type = tt.secretType
			}
			if tt.data != nil {
				secret.Data = tt.data
			}
			conn, err := Resolve(env, secret)
			g.Expect(conn).To(BeNil())
			e := outcome.As(err)
			g.Expect(e).NotTo(BeNil(), "a problem of the spec or Secret is shown to the user")
			g.Expect(e.Kind).To(Equal(outcome.User), "it is not retried until the user changes something")
			g.Expect(e.Reason).To(Equal(string(tt.wantReason)))
			g.Expect(e.Message).To(ContainSubstring(tt.wantMessage))
			// Never a credential in a condition.
			g.Expect(e.Message).NotTo(ContainSubstring("hunter2"))
			g.Expect(e.Message).NotTo(ContainSubstring(resolveToken))
		})
	}
}

func TestResolveChoosesTheContextOfSpecAPIURL(t *testing.T) {
	tests := []struct {
		name         string
		apiURL       string
		server       string
		insecure     bool
		wantHost     string
		wantInsecure bool
		wantCA       []byte
	}{
		{name: "the same address", apiURL: resolveAPIURL, server: resolveAPIURL, wantHost: resolveAPIURL, wantCA: []byte("ca-data")},
		// Trailing slashes do not make another cluster.
		{name: "a trailing slash in spec.apiURL", apiURL: resolveAPIURL + "/", server: resolveAPIURL, wantHost: resolveAPIURL, wantCA: []byte("ca-data")},
		{name: "a trailing slash in the kubeconfig", apiURL: resolveAPIURL, server: resolveAPIURL + "/", wantHost: resolveAPIURL + "/", wantCA: []byte("ca-data")},
		// allowInsecureSkipTLSVerify drops the CA: client-go refuses both at once.
		{name: "allowInsecureSkipTLSVerify", apiURL: resolveAPIURL, server: resolveAPIURL, insecure: true, wantHost: resolveAPIURL, wantInsecure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			env := &v1.GitOpsDeploymentManagedEnvironment{Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
				APIURL: tt.apiURL, AllowInsecureSkipTLSVerify: tt.insecure, Namespaces: []string{"team-a"}}}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Type: v1.ManagedEnvironmentSecretType,
				Data: map[string][]byte{"kubeconfig": resolveKubeconfig(tt.server, "    token: "+resolveToken)}}
			conn, err := Resolve(env, secret)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(conn.ContextName).To(Equal("target"), "not the current context, which is another cluster's")
			g.Expect(conn.Config.Host).To(Equal(tt.wantHost))
			g.Expect(conn.Config.BearerToken).To(Equal(resolveToken))
			g.Expect(conn.Config.Insecure).To(Equal(tt.wantInsecure))
			g.Expect(conn.Config.CAData).To(Equal(tt.wantCA))
			g.Expect(conn.Config.ServerName).To(Equal("api.internal"))
		})
	}
}

// connectionCondition is ConnectionInitializationSucceeded as the user guide's table has it.
func TestConnectionCondition(t *testing.T) {
	tests := []struct {
		name                  string
		err                   error
		status                metav1.ConditionStatus
		reason, message       string
		messageMustNotContain string
	}{
		{name: "connected", status: metav1.ConditionTrue, reason: "Succeeded", message: "Connected to the cluster; Argo CD can deploy to it."},
		{name: "a user error", err: credErr(v1.ManagedEnvironmentReasonInvalidSecretType, "Secret %q has type %q", "s", "Opaque"),
			status: metav1.ConditionFalse, reason: "InvalidSecretType", message: `Secret "s" has type "Opaque"`},
		{name: "a stalled error", err: permissionsErr([]kind{{Resource: "podtemplates"}}, "team-a"),
			status: metav1.ConditionFalse, reason: "UnableToValidateClusterCredentials"},
		{name: "a transient error", err: outcome.TransientError("UnableToValidateClusterCredentials", 0, "the cluster could not be reached; retrying"),
			status: metav1.ConditionFalse, reason: "UnableToValidateClusterCredentials", message: "the cluster could not be reached; retrying"},
		// The cause of an internal error (a database address, say) stays in the log.
		{name: "an internal error", err: fmt.Errorf("inserting: %w", fmt.Errorf("dial tcp 10.0.0.7:5432: connection refused")),
			status: metav1.ConditionFalse, reason: "UnknownError",
			message:               "An internal error occurred while connecting the environment; the service retries automatically.",
			messageMustNotContain: "10.0.0.7"},
		{name: "an internal outcome error", err: &outcome.Error{Kind: outcome.Internal, Reason: "X", Message: "secret detail"},
			status: metav1.ConditionFalse, reason: "UnknownError", messageMustNotContain: "secret detail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := connectionCondition(tt.err)
			g.Expect(c.Type).To(Equal("ConnectionInitializationSucceeded"))
			g.Expect(c.Status).To(Equal(tt.status))
			g.Expect(c.Reason).To(Equal(tt.reason))
			if tt.message != "" {
				g.Expect(c.Message).To(Equal(tt.message))
			}
			g.Expect(c.Message).NotTo(BeEmpty())
			if tt.messageMustNotContain != "" {
				g.Expect(c.Message).NotTo(ContainSubstring(tt.messageMustNotContain))
			}
		})
	}
}

func TestResolveMessagesNeverQuoteTheUserInformationOfTheURL(t *testing.T) {
	env := &v1.GitOpsDeploymentManagedEnvironment{Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://user:p4ss@host?x"}}
	_, err := Resolve(env, &corev1.Secret{})
	if err == nil || strings.Contains(err.Error(), "p4ss") {
		t.Errorf("Resolve = %v; want an error that does not quote the password", err)
	}
}

// The check connects as Argo CD will, which gets only what the cluster Secret carries: TLS
// is skipped only with spec.allowInsecureSkipTLSVerify, and a proxy is refused.
func TestResolveAppliesArgoCDsTLSAndProxyRule(t *testing.T) {
	withCluster := func(extra string) []byte {
		kc := string(resolveKubeconfig(resolveAPIURL, "    token: "+resolveToken))
		return []byte(strings.Replace(kc, "    tls-server-name: api.internal\n", "    tls-server-name: api.internal\n"+extra, 1))
	}
	tests := []struct {
		name         string
		kubeconfig   []byte
		allow        bool
		wantInsecure bool
		problem      string
	}{
		{name: "the kubeconfig's insecure-skip-tls-verify alone verifies TLS",
			kubeconfig: withCluster("    insecure-skip-tls-verify: true\n")},
		{name: "spec.allowInsecureSkipTLSVerify skips it", kubeconfig: withCluster(""), allow: true, wantInsecure: true},
		{name: "a proxy-url", kubeconfig: withCluster("    proxy-url: http://proxy.internal:3128\n"),
			problem: "the kubeconfig's cluster sets proxy-url, which the service cannot pass on to Argo CD: remove it; the cluster must be reachable directly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			env := &v1.GitOpsDeploymentManagedEnvironment{Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
				APIURL: resolveAPIURL, AllowInsecureSkipTLSVerify: tt.allow, Namespaces: []string{"team-a"}}}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Type: v1.ManagedEnvironmentSecretType,
				Data: map[string][]byte{"kubeconfig": tt.kubeconfig}}
			conn, err := Resolve(env, secret)
			if tt.problem != "" {
				e := outcome.As(err)
				g.Expect(e).NotTo(BeNil())
				g.Expect(e.Reason).To(Equal(string(v1.ManagedEnvironmentReasonUnableToCreateClient)))
				g.Expect(e.Message).To(Equal(tt.problem))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(conn.Config.Insecure).To(Equal(tt.wantInsecure))
			g.Expect(conn.Config.Proxy).To(BeNil())
			if !tt.wantInsecure {
				g.Expect(conn.Config.CAData).To(Equal([]byte("ca-data")))
			}
		})
	}
}
