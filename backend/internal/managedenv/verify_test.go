package managedenv

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/kubeconfig"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// verifyErr sorts the failures of the check against the cluster: what the user must fix
// (401, 403, a missing namespace, a certificate) stops the environment, with a hint; what
// may pass (unreachable, a server error, a timeout) is retried about every 30 seconds.
func TestVerifyErr(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://api.example.com", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	tests := []struct {
		name      string
		err       error
		namespace string
		// timeout is the bound of the connection's calls (0: none set).
		timeout  time.Duration
		kind     outcome.Kind
		message  string
		retrying bool
	}{
		{name: "401", err: apierrors.NewUnauthorized("token expired"), kind: outcome.User,
			message: "the cluster rejected the credentials (401 Unauthorized): the token may be expired or wrong"},
		{name: "403 listing namespaces", err: apierrors.NewForbidden(namespacesResource, "", errors.New("no")), kind: outcome.User,
			message: "the credentials may not list namespaces (403 Forbidden): grant them cluster-wide access, or set spec.namespaces to the namespaces they may use"},
		{name: "403 reading a namespace of spec.namespaces", err: apierrors.NewForbidden(namespacesResource, "team-a", errors.New("no")), namespace: "team-a",
			kind: outcome.User, message: `the credentials may not get namespace "team-a" (403 Forbidden): grant them access to it`},
		{name: "a namespace of spec.namespaces does not exist", err: apierrors.NewNotFound(namespacesResource, "team-a"), namespace: "team-a",
			kind: outcome.User, message: `namespace "team-a" of spec.namespaces does not exist on the cluster`},
		{name: "an unknown certificate authority", err: &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, kind: outcome.User,
			message: "the cluster's TLS certificate is signed by an unknown authority: add its CA to the kubeconfig, or set spec.allowInsecureSkipTLSVerify"},
		{name: "a certificate for another name", err: &url.Error{Op: "Get", URL: "https://x", Err: x509.HostnameError{Host: "x"}}, kind: outcome.User,
			message: "the cluster's TLS certificate could not be verified: check the kubeconfig's CA, or set spec.allowInsecureSkipTLSVerify"},
		// Refused, timed out or failing: one message, so that a tenant cannot tell a closed
		// port of the service's network from a filtered one.
		{name: "refused", err: refused, timeout: 10 * time.Second, kind: outcome.Transient, retrying: true,
			message: "the cluster at https://api.example.com:6443 could not be reached: check spec.apiURL and that the cluster is reachable from the service; retrying"},
		{name: "a server error", err: apierrors.NewInternalError(errors.New("etcd down")), kind: outcome.Transient, retrying: true,
			message: "the cluster at https://api.example.com:6443 could not be reached: check spec.apiURL and that the cluster is reachable from the service; retrying"},
		{name: "a timeout", err: fmt.Errorf("listing: %w", context.DeadlineExceeded), timeout: 10 * time.Second, kind: outcome.Transient, retrying: true,
			message: "the cluster at https://api.example.com:6443 could not be reached: check spec.apiURL and that the cluster is reachable from the service; retrying"},
		{name: "a dial timeout", err: &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Err: timeoutErr{}}}, timeout: 3 * time.Second,
			kind: outcome.Transient, retrying: true,
			message: "the cluster at https://api.example.com:6443 could not be reached: check spec.apiURL and that the cluster is reachable from the service; retrying"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			conn := &Connection{Config: &rest.Config{Host: "https://api.example.com:6443", Timeout: tt.timeout}}
			e := outcome.As(verifyErr(conn, tt.err, tt.namespace))
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.Reason).To(Equal(string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)))
			g.Expect(e.Kind).To(Equal(tt.kind))
			g.Expect(e.Message).To(Equal(tt.message))
			if tt.retrying {
				// TransientRetry (30s) moved by the jitter of ±15%.
				g.Expect(e.RetryAfter).To(BeNumerically(">=", 25*time.Second))
				g.Expect(e.RetryAfter).To(BeNumerically("<=", 35*time.Second))
			}
		})
	}
}

// The address in a timeout's message never shows a password put in spec.apiURL's host.
func TestVerifyErrRedactsTheHost(t *testing.T) {
	g := NewWithT(t)
	conn := &Connection{Config: &rest.Config{Host: "https://admin:hunter2@api.example.com", Timeout: time.Second}}
	e := outcome.As(verifyErr(conn, context.DeadlineExceeded, ""))
	g.Expect(e).NotTo(BeNil())
	g.Expect(e.Message).NotTo(ContainSubstring("hunter2"))
	g.Expect(e.Message).To(ContainSubstring("api.example.com"))
}

func TestInstallerFail(t *testing.T) {
	in := &installer{name: "argocd-manager-uid"}
	const apiMessage = "SECRET-DATA-ECHOED-BY-THE-API-SERVER"
	tests := []struct {
		name, step, permission string
		err                    error
		// internal: returned for a retry, not shown to the user.
		internal bool
		message  string
	}{
		{name: "escalation prevention", step: "create or update ClusterRole argocd-manager-uid", permission: "p",
			err: apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, "argocd-manager-uid",
				errors.New("user \"x\" is attempting to grant RBAC permissions not currently held: "+apiMessage)),
			message: "unable to create or update ClusterRole argocd-manager-uid on the target cluster (403 Forbidden): the credentials may not grant permissions they do not hold themselves"},
		{name: "a missing permission is named", step: "create or update ServiceAccount kube-system/argocd-manager-uid",
			permission: `"patch" on serviceaccounts in namespace kube-system`,
			err:        apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "argocd-manager-uid", errors.New(apiMessage)),
			message:    `unable to create or update ServiceAccount kube-system/argocd-manager-uid on the target cluster (403 Forbidden): the credentials lack "patch" on serviceaccounts in namespace kube-system.`},
		{name: "401", step: "read Secret kube-system/t", err: apierrors.NewUnauthorized(apiMessage),
			message: "unable to read Secret kube-system/t on the target cluster: the cluster rejected the credentials (401 Unauthorized)"},
		{name: "a Role in a namespace that does not exist", step: "create or update Role team-a/argocd-manager-uid",
			err:     apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team-a"),
			message: "unable to create or update Role team-a/argocd-manager-uid on the target cluster: a namespace of spec.namespaces does not exist"},
		{name: "another API error is the user's, by its reason", step: "create or update Secret kube-system/t",
			err:     apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "t", nil),
			message: "unable to create or update Secret kube-system/t on the target cluster (Invalid)"},
		{name: "not found elsewhere, by its reason", step: "request a token for ServiceAccount kube-system/x",
			err:     apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, "x"),
			message: "unable to request a token for ServiceAccount kube-system/x on the target cluster (NotFound)"},
		// What may pass is retried with backoff.
		{name: "a conflict", step: "s", err: apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "t", errors.New("changed")), internal: true},
		{name: "a server error", step: "s", err: apierrors.NewInternalError(errors.New("etcd")), internal: true},
		{name: "unavailable", step: "s", err: apierrors.NewServiceUnavailable("later"), internal: true},
		{name: "too many requests", step: "s", err: apierrors.NewTooManyRequests("slow down", 1), internal: true},
		{name: "a server timeout", step: "s", err: apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "get", 1), internal: true},
		{name: "a transport error", step: "s", err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}, internal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := in.fail(tt.err, tt.step, tt.permission)
			e := outcome.As(got)
			if tt.internal {
				g.Expect(e).To(BeNil(), "an internal error, retried with backoff")
				g.Expect(errors.Is(got, tt.err)).To(BeTrue(), "the cause is kept for the log")
				g.Expect(got.Error()).To(HavePrefix("installing the ServiceAccount: unable to " + tt.step + ": "))
				return
			}
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.Kind).To(Equal(outcome.User))
			g.Expect(e.Reason).To(Equal(string(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount)))
			g.Expect(e.Message).To(HavePrefix(tt.message))
			g.Expect(e.Message).NotTo(ContainSubstring(apiMessage), "the API server's own message is never quoted")
		})
	}
}

// Stored for an installed ServiceAccount: its token and a kubeconfig with only the cluster's
// address and CA, none of the user's credentials.
func TestServiceAccountCredentials(t *testing.T) {
	g := NewWithT(t)
	env := &v1.GitOpsDeploymentManagedEnvironment{Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL: "https://api.example.com:6443", AllowInsecureSkipTLSVerify: false, Namespaces: []string{"team-a"}, ClusterResources: true}}
	conn := &Connection{ContextName: "admin", Config: &rest.Config{Host: "https://api.example.com:6443", BearerToken: "users-own-token",
		Username: "admin", Password: "users-password",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), ServerName: "api.internal", CertData: []byte("users-cert"), KeyData: []byte("users-key")}}}
	creds, err := serviceAccountCredentials(env, conn, "sa-token")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(creds.Host).To(Equal("https://api.example.com:6443"))
	g.Expect(creds.BearerToken).To(Equal(db.Secret("sa-token")))
	g.Expect(creds.KubeconfigContext).To(Equal("argocd-manager"))
	g.Expect(creds.ServiceAccountNamespace).To(Equal("kube-system"))
	g.Expect(creds.Namespaces).To(Equal([]string{"team-a"}))
	g.Expect(creds.ClusterResources).To(BeTrue())
	g.Expect(creds.AllowInsecureSkipTLSVerify).To(BeFalse())
	for _, users := range []string{"users-own-token", "users-password", "dXNlcnMta2V5" /* users-key */, "dXNlcnMtY2VydA==" /* users-cert */} {
		g.Expect(string(creds.Kubeconfig)).NotTo(ContainSubstring(users))
	}
	stored, err := kubeconfig.Parse([]byte(creds.Kubeconfig), kubeconfig.Options{Context: creds.KubeconfigContext})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.Server).To(Equal("https://api.example.com:6443"))
	g.Expect(stored.BearerToken).To(Equal("sa-token"))
	g.Expect(stored.CAData).To(Equal([]byte("ca")))
	g.Expect(stored.ServerName).To(Equal("api.internal"))
	g.Expect(stored.Username).To(BeEmpty())
	g.Expect(stored.CertData).To(BeEmpty())
}

// Unchanged credentials write nothing (no row update, no Operation): every field that makes
// a different Argo CD cluster Secret counts.
func TestSameCredentials(t *testing.T) {
	base := func() *db.ClusterCredentials {
		return &db.ClusterCredentials{Host: "https://h", Kubeconfig: "k", KubeconfigContext: "c", BearerToken: "t",
			ServiceAccountNamespace: "kube-system", AllowInsecureSkipTLSVerify: true, Namespaces: []string{"a", "b"}, ClusterResources: true}
	}
	tests := []struct {
		name   string
		change func(c *db.ClusterCredentials)
		same   bool
	}{
		{"identical", func(*db.ClusterCredentials) {}, true},
		{"host", func(c *db.ClusterCredentials) { c.Host = "https://other" }, false},
		{"kubeconfig", func(c *db.ClusterCredentials) { c.Kubeconfig = "k2" }, false},
		{"context", func(c *db.ClusterCredentials) { c.KubeconfigContext = "c2" }, false},
		{"token", func(c *db.ClusterCredentials) { c.BearerToken = "t2" }, false},
		{"ServiceAccount namespace", func(c *db.ClusterCredentials) { c.ServiceAccountNamespace = "" }, false},
		{"insecure", func(c *db.ClusterCredentials) { c.AllowInsecureSkipTLSVerify = false }, false},
		{"namespaces", func(c *db.ClusterCredentials) { c.Namespaces = []string{"a"} }, false},
		{"namespaces in another order", func(c *db.ClusterCredentials) { c.Namespaces = []string{"b", "a"} }, false},
		{"cluster resources", func(c *db.ClusterCredentials) { c.ClusterResources = false }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := base(), base()
			tt.change(b)
			if got := sameCredentials(a, b); got != tt.same {
				t.Errorf("sameCredentials = %v, want %v", got, tt.same)
			}
		})
	}
	// No namespaces, however written, is the same.
	if !sameCredentials(&db.ClusterCredentials{}, &db.ClusterCredentials{Namespaces: []string{}}) {
		t.Error("nil and empty namespaces differ")
	}
}

func TestBoundAppliesTheCheckTimeout(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct{ given, want time.Duration }{{0, DefaultCheckTimeout}, {-time.Second, DefaultCheckTimeout}, {3 * time.Second, 3 * time.Second}} {
		cfg := bound(&rest.Config{}, tc.given)
		g.Expect(cfg.Timeout).To(Equal(tc.want))
		g.Expect(cfg.Dial).NotTo(BeNil(), "the dial is bounded too")
		g.Expect(cfg.WrapTransport).NotTo(BeNil(), "so is every answer")
	}
}

func TestNames(t *testing.T) {
	g := NewWithT(t)
	uid := types.UID("6f1c2a90-334b-4e8d-9a10-5521770eabcd")
	g.Expect(ServiceAccountName(uid)).To(Equal("argocd-manager-6f1c2a90-334b-4e8d-9a10-5521770eabcd"))
	g.Expect(tokenSecretName(uid)).To(Equal("argocd-manager-6f1c2a90-334b-4e8d-9a10-5521770eabcd-token"))
	g.Expect(kind{Resource: "podtemplates"}.String()).To(Equal("podtemplates"))
	g.Expect(kind{Group: "apps", Resource: "deployments"}.String()).To(Equal("deployments.apps"))
}

// Without an installed ServiceAccount's stored token there is nothing to uninstall, and no
// call to any cluster.
func TestUninstallServiceAccountWithoutAToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(uninstallServiceAccount(ctx, &db.ClusterCredentials{Host: "https://192.0.2.1", BearerToken: "t"}, "uid")).To(Succeed())
	g.Expect(uninstallServiceAccount(ctx, &db.ClusterCredentials{Host: "https://192.0.2.1", ServiceAccountNamespace: "kube-system"}, "uid")).To(Succeed())
	err := uninstallServiceAccount(ctx, &db.ClusterCredentials{Kubeconfig: "clusters: [", BearerToken: "t", ServiceAccountNamespace: "kube-system"}, "uid")
	g.Expect(err).To(MatchError("the stored kubeconfig cannot be parsed"))
}

// permissionsErr stalls the environment and says it is checked again, without naming more
// than eight kinds.
func TestPermissionsErrRetriesAndCuts(t *testing.T) {
	g := NewWithT(t)
	e := outcome.As(permissionsErr([]kind{{Resource: "b"}, {Group: "apps", Resource: "a"}}, ""))
	g.Expect(e.Kind).To(Equal(outcome.Stalled))
	g.Expect(e.RetryAfter).To(Equal(outcome.StalledRetry))
	g.Expect(e.Reason).To(Equal(string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)))
	g.Expect(e.Message).To(ContainSubstring("may not list and watch a.apps, b cluster-wide"))
	g.Expect(e.Message).To(ContainSubstring("the service checks again within 5 minutes"))

	var eight []kind
	for _, r := range []string{"h", "g", "f", "e", "d", "c", "b", "a"} {
		eight = append(eight, kind{Resource: r})
	}
	g.Expect(outcome.As(permissionsErr(eight, "ns")).Message).To(ContainSubstring("a, b, c, d, e, f, g, h in namespace"))
	g.Expect(outcome.As(permissionsErr(eight, "ns")).Message).NotTo(ContainSubstring("more"))
}
