package managedenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/bounded"
	"github.com/gitops-service/gitops-service/backend-shared/kubeconfig"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"

	"github.com/gitops-service/gitops-service/backend/internal/jitter"
)

// credErr is a problem with what the user gave: its reason and message go to the
// ConnectionInitializationSucceeded condition. Messages never quote credentials.
func credErr(reason v1.ManagedEnvironmentConditionReason, format string, args ...any) error {
	return outcome.UserError(string(reason), format, args...)
}

// Connection is what a ManagedEnvironment resolves to.
type Connection struct {
	// Config reaches the cluster with the user's credentials.
	Config *rest.Config
	// ContextName is the kubeconfig context used.
	ContextName string
}

// Resolve checks the spec and Secret of a ManagedEnvironment and builds the client
// configuration of the kubeconfig's context whose cluster's server is spec.apiURL.
func Resolve(env *v1.GitOpsDeploymentManagedEnvironment, secret *corev1.Secret) (*Connection, error) {
	apiURL := env.Spec.APIURL
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return nil, credErr(v1.ManagedEnvironmentReasonUnsupportedAPIURL, "spec.apiURL is not a URL with a host")
	}
	if u.User != nil {
		// Never quoted: the user information may hold a password.
		return nil, credErr(v1.ManagedEnvironmentReasonUnsupportedAPIURL,
			"spec.apiURL must not contain user information (user@ or user:password@); put the credentials in the kubeconfig of the Secret")
	}
	// A fragment would swallow the managedEnvironment query of the Argo CD cluster's server.
	if strings.ContainsAny(apiURL, "?&#") {
		return nil, credErr(v1.ManagedEnvironmentReasonUnsupportedAPIURL,
			"spec.apiURL %q must not contain a query or fragment ('?', '&' or '#'): the GitOps Service adds its own query", apiURL)
	}
	for _, ns := range env.Spec.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, credErr(v1.ManagedEnvironmentReasonInvalidNamespaceList, "spec.namespaces: %q is not a valid namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if secret.Type != v1.ManagedEnvironmentSecretType {
		return nil, credErr(v1.ManagedEnvironmentReasonInvalidSecretType,
			"Secret %q has type %q; it must be of type %q", secret.Name, secret.Type, v1.ManagedEnvironmentSecretType)
	}
	data, ok := secret.Data["kubeconfig"]
	if !ok || len(data) == 0 {
		return nil, credErr(v1.ManagedEnvironmentReasonMissingKubeConfigField, "Secret %q has no 'kubeconfig' key", secret.Name)
	}
	creds, err := kubeconfig.Parse(data, kubeconfig.Options{Server: apiURL})
	switch kubeconfig.KindOf(err) {
	case "":
	case kubeconfig.Unparseable:
		return nil, credErr(v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, "the 'kubeconfig' of Secret %q is not a valid kubeconfig file", secret.Name)
	case kubeconfig.NoContext:
		return nil, credErr(v1.ManagedEnvironmentReasonUnableToLocateContext,
			"the kubeconfig of Secret %q has no context whose cluster's server is %s (spec.apiURL)", secret.Name, apiURL)
	default:
		// Local files (a tokenFile could make the service send its own credentials to
		// spec.apiURL), plugins, no credentials: the message says which, quoting nothing.
		return nil, credErr(v1.ManagedEnvironmentReasonUnableToCreateClient, "%s", err.Error())
	}
	contextName := creds.Context
	// One rule for the check and for Argo CD, which gets only what the cluster Secret says:
	// TLS is verified unless spec.allowInsecureSkipTLSVerify says otherwise (the kubeconfig's
	// own insecure-skip-tls-verify counts for nothing), and no proxy.
	if creds.ProxyURL != "" {
		return nil, credErr(v1.ManagedEnvironmentReasonUnableToCreateClient,
			"the kubeconfig's cluster sets proxy-url, which the service cannot pass on to Argo CD: remove it; the cluster must be reachable directly")
	}
	creds.Insecure = env.Spec.AllowInsecureSkipTLSVerify
	if creds.Insecure {
		creds.CAData = nil
	}
	restConfig, err := creds.RESTConfig()
	if err != nil {
		return nil, credErr(v1.ManagedEnvironmentReasonUnableToCreateClient, "no client can be built from context %q of the kubeconfig", contextName)
	}
	return &Connection{Config: restConfig, ContextName: contextName}, nil
}

// bound makes every call through cfg give up after timeout (DefaultCheckTimeout when 0),
// the dial included, and read at most bounded.MaxResponseBytes of each answer.
func bound(cfg *rest.Config, timeout time.Duration) *rest.Config {
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	return bounded.RESTConfig(cfg, timeout)
}

// isTimeout reports whether err is a dial, TLS handshake or request that ran out of time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// certificateProblem reports whether err is the cluster's TLS certificate failing
// verification, and whether because it is signed by an unknown authority.
func certificateProblem(err error) (problem, unknownAuthority bool) {
	var (
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
	)
	if errors.As(err, &unknown) {
		return true, true
	}
	return errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verify), false
}

// Verify proves the credentials work before they are stored: it lists namespaces, or,
// for a namespace-scoped environment, reads each of spec.namespaces (Argo CD watches them
// all, and one it cannot read breaks the whole environment). Then it checks that they may
// list and watch every kind Argo CD watches there: without that, Argo CD's cluster cache
// fails and nothing deploys, however well the connection itself works.
func Verify(ctx context.Context, conn *Connection, namespaces []string) error {
	cs, err := kubernetes.NewForConfig(conn.Config)
	if err != nil {
		return credErr(v1.ManagedEnvironmentReasonUnableToCreateClient, "no client can be built from context %q of the kubeconfig", conn.ContextName)
	}
	if len(namespaces) == 0 {
		if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return verifyErr(conn, err, "")
		}
	}
	for _, ns := range namespaces {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			return verifyErr(conn, err, ns)
		}
	}
	kinds, err := watchedKinds(cs.Discovery())
	if err != nil {
		return verifyErr(conn, err, "")
	}
	if len(namespaces) == 0 {
		missing, err := missingClusterWide(ctx, cs, kinds)
		if err != nil {
			return verifyErr(conn, err, "")
		}
		if len(missing) > 0 {
			return permissionsErr(missing, "")
		}
	}
	for _, ns := range namespaces {
		missing, err := missingInNamespace(ctx, cs, ns, kinds)
		if err != nil {
			return verifyErr(conn, err, ns)
		}
		if len(missing) > 0 {
			return permissionsErr(missing, ns)
		}
	}
	return nil
}

func verifyErr(conn *Connection, err error, namespace string) error {
	reason := string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)
	// Unreachable, timed out, or a server error: the same credentials may work later. One
	// message for all of them, so that the condition does not tell a tenant probing the
	// service's network a refused port from a filtered one.
	if certificate, _ := certificateProblem(err); isTimeout(err) || (!apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) &&
		!apierrors.IsNotFound(err) && !certificate) {
		host := conn.Config.Host
		if u, perr := url.Parse(host); perr == nil {
			host = u.Redacted()
		}
		return outcome.TransientError(reason, jitter.Spread(TransientRetry), "%s; retrying", unreachable(host))
	}
	return outcome.UserError(reason, "%s", hint(err, namespace))
}

// unreachable is the message of a cluster that did not answer as a Kubernetes API server
// should, whatever the cause.
func unreachable(host string) string {
	return fmt.Sprintf("the cluster at %s could not be reached: check spec.apiURL and that the cluster is reachable from the service", host)
}

// namespace is the namespace of spec.namespaces that was read, "" for a cluster-wide
// environment.
func hint(err error, namespace string) string {
	certificate, unknownAuthority := certificateProblem(err)
	switch {
	case apierrors.IsUnauthorized(err):
		return "the cluster rejected the credentials (401 Unauthorized): the token may be expired or wrong"
	case apierrors.IsForbidden(err) && namespace != "":
		return fmt.Sprintf("the credentials may not get namespace %q (403 Forbidden): grant them access to it", namespace)
	case apierrors.IsForbidden(err):
		return "the credentials may not list namespaces (403 Forbidden): grant them cluster-wide access, or set spec.namespaces to the namespaces they may use"
	case apierrors.IsNotFound(err) && namespace != "":
		return fmt.Sprintf("namespace %q of spec.namespaces does not exist on the cluster", namespace)
	case unknownAuthority:
		return "the cluster's TLS certificate is signed by an unknown authority: add its CA to the kubeconfig, or set spec.allowInsecureSkipTLSVerify"
	case certificate:
		return "the cluster's TLS certificate could not be verified: check the kubeconfig's CA, or set spec.allowInsecureSkipTLSVerify"
	}
	return "the cluster could not be reached: check spec.apiURL and that the cluster is reachable from the service"
}
