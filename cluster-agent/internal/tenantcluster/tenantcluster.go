// Package tenantcluster keeps, for each tenant with Applications on the service's cluster,
// the Argo CD cluster entry through which Argo CD deploys into the tenant's namespace as the
// tenant (see argocd.TenantClusterSecret), not with its own cluster-wide identity.
//
// Its rights are generated into their own ClusterRole, bound cluster-wide: the rest of the
// cluster-agent's stay in the engine namespace.
package tenantcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/periodic"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// Defaults of the tenants' cluster entries.
const (
	// DefaultClusterRole is bound to a tenant's deployer in the tenant's namespace.
	DefaultClusterRole = "admin"
	// DefaultTokenLifetime is how long a deployer token the agent asks for lives; it
	// is renewed once half of it has passed.
	DefaultTokenLifetime = 24 * time.Hour
	// tenantRenewInterval is how often the tenants' cluster Secrets are looked at for tokens
	// due for renewal.
	tenantRenewInterval = 10 * time.Minute
	// annotationRole on a tenant's cluster Secret names the ClusterRole its deployer was
	// bound to, so that a changed --tenant-cluster-role binds again at once.
	annotationRole = "managed-gitops.redhat.com/deployer-role"
)

// TenantClusters keeps, for each tenant with Applications on the service's cluster, the
// cluster entry through which Argo CD deploys there as the tenant (see
// argocd.TenantClusterSecret): a ServiceAccount in the tenant's namespace, bound to
// ClusterRole in that namespace only, and a cluster Secret with a short-lived token of it,
// renewed before it expires.
type TenantClusters struct {
	// Client writes the cluster Secrets in the engine namespace; Reader reads them from the
	// API server (the agent caches no Secrets).
	Client client.Client
	Reader client.Reader
	// Service acts on the service's cluster: the deployers, their RoleBindings and tokens.
	Service  client.Client
	Identity engine.Identity
	// TLS is how Argo CD trusts the service's API server at Identity.TenantAPIURL.
	TLS argov1alpha1.TLSClientConfig
	// ClusterRole is what a deployer may do in its namespace (default DefaultClusterRole).
	ClusterRole string
	// TokenLifetime is the lifetime asked for a token (default DefaultTokenLifetime);
	// the API server may grant less.
	TokenLifetime time.Duration
	// Interval is how often tokens due for renewal, and Secrets deleted by hand, are looked
	// for (default tenantRenewInterval).
	Interval time.Duration

	mu sync.Mutex
	// known is, per tenant id, the namespace and the renewal time of the token this process
	// last saw for it: until then, Ensure costs no API request.
	known map[string]known
}

// known is what the process remembers of a tenant's cluster Secret.
type known struct {
	namespace string
	renewAt   time.Time
}

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create,resourceNames=gitops-service-deployer
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=admin

// Ensure makes sure the tenant's cluster Secret exists with a token not yet due for renewal,
// creating the deployer in namespace (the tenant's) when it is missing.
func (t *TenantClusters) Ensure(ctx context.Context, tenantID, namespace string) error {
	now := time.Now()
	if k, ok := t.recall(tenantID); ok && k.namespace == namespace && now.Before(k.renewAt) {
		return nil
	}
	have := &corev1.Secret{}
	err := t.Reader.Get(ctx, client.ObjectKey{Namespace: t.Identity.Namespace, Name: argocd.TenantClusterSecretName(tenantID)}, have)
	if client.IgnoreNotFound(err) != nil {
		return wrapAPI(err, "reading the cluster Secret of tenant %s", tenantID)
	}
	if err == nil && t.current(have, tenantID, namespace) && now.Before(argocd.TokenRenewAfter(have)) {
		t.remember(tenantID, namespace, argocd.TokenRenewAfter(have))
		return nil
	}
	return t.renew(ctx, tenantID, namespace)
}

// Remove deletes the tenant's cluster Secret. The deployer stays in the tenant's namespace:
// another engine instance the tenant moved to may be using it.
func (t *TenantClusters) Remove(ctx context.Context, tenantID string) error {
	t.mu.Lock()
	delete(t.known, tenantID)
	t.mu.Unlock()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.Identity.Namespace, Name: argocd.TenantClusterSecretName(tenantID)}}
	if err := t.Client.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
		return wrapAPI(err, "deleting Secret %s", sec.Name)
	}
	return nil
}

// Task renews the tokens due for renewal, on the leader.
func (t *TenantClusters) Task() *periodic.Task {
	return &periodic.Task{Name: "tenant-cluster-tokens", Interval: cmp.Or(t.Interval, tenantRenewInterval), Run: t.RenewDue}
}

// RenewDue renews every tenant's token that is due, writes again the cluster Secret of a
// tenant this process served that is gone (deleted by hand), and deletes the cluster
// Secret of a tenant whose namespace is gone.
func (t *TenantClusters) RenewDue(ctx context.Context) error {
	list := &corev1.SecretList{}
	if err := t.Reader.List(ctx, list, client.InNamespace(t.Identity.Namespace), client.HasLabels{argocd.LabelTenantCluster}); err != nil {
		return wrapAPI(err, "listing the tenants' cluster Secrets")
	}
	now := time.Now()
	listed := map[string]bool{}
	due := map[string]string{} // tenant id → its namespace
	for i := range list.Items {
		sec := &list.Items[i]
		tenantID := sec.Labels[argocd.LabelTenantCluster]
		listed[tenantID] = true
		if !now.Before(argocd.TokenRenewAfter(sec)) || sec.Annotations[annotationRole] != t.clusterRole() {
			due[tenantID] = string(sec.Data["namespaces"])
		}
	}
	t.mu.Lock()
	for tenantID, k := range t.known {
		if !listed[tenantID] {
			due[tenantID] = k.namespace
		}
	}
	t.mu.Unlock()
	var errs []error
	for tenantID, namespace := range due {
		err := t.renew(ctx, tenantID, namespace)
		if apierrors.IsNotFound(err) {
			err = t.Remove(ctx, tenantID)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// current says whether a tenant's cluster Secret is the one this agent would write for it,
// token aside.
func (t *TenantClusters) current(sec *corev1.Secret, tenantID, namespace string) bool {
	return string(sec.Data["namespaces"]) == namespace && !argocd.Drifted(sec) &&
		string(sec.Data["server"]) == argocd.TenantServer(t.Identity.TenantAPIURL, tenantID) &&
		sec.Annotations[annotationRole] == t.clusterRole()
}

// renew puts the deployer in place and writes the cluster Secret with a new token. An error
// for a namespace that is gone is a NotFound.
func (t *TenantClusters) renew(ctx context.Context, tenantID, namespace string) error {
	if err := t.ensureDeployer(ctx, namespace); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: argocd.TenantDeployerName}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(t.lifetime().Seconds())),
	}}
	issued := time.Now()
	if err := t.Service.SubResource("token").Create(ctx, sa, tr); err != nil {
		return wrapAPI(err, "requesting a token of ServiceAccount %s/%s", namespace, sa.Name)
	}
	renewAfter := renewHalfway(issued, tr.Status.ExpirationTimestamp.Time)
	want, err := argocd.TenantClusterSecret(t.Identity.Namespace, tenantID, t.Identity.TenantAPIURL, namespace, t.TLS,
		tr.Status.Token, renewAfter)
	if err != nil {
		return err
	}
	want.Annotations[annotationRole] = t.clusterRole()
	if err := ssa.Apply(ctx, t.Client, want); err != nil {
		return wrapAPI(err, "applying Secret %s", want.Name)
	}
	t.remember(tenantID, namespace, renewAfter)
	return nil
}

// ensureDeployer creates the tenant's ServiceAccount and its RoleBinding to ClusterRole
// when missing, and binds the RoleBinding again when it names another role.
func (t *TenantClusters) ensureDeployer(ctx context.Context, namespace string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: argocd.TenantDeployerName,
		Labels: map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue}}}
	if err := t.Service.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return wrapAPI(err, "creating ServiceAccount %s/%s", namespace, sa.Name)
	}
	want := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: argocd.TenantDeployerName,
			Labels: map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: t.clusterRole()},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: argocd.TenantDeployerName}},
	}
	have := &rbacv1.RoleBinding{}
	err := t.Service.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return wrapAPI(err, "reading RoleBinding %s/%s", namespace, want.Name)
	case have.RoleRef == want.RoleRef && len(have.Subjects) == 1 && have.Subjects[0] == want.Subjects[0]:
		return nil
	default:
		// A role reference cannot change: bind again.
		if err := t.Service.Delete(ctx, have); client.IgnoreNotFound(err) != nil {
			return wrapAPI(err, "deleting RoleBinding %s/%s to bind it again", namespace, want.Name)
		}
	}
	if err := t.Service.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
		return wrapAPI(err, "creating RoleBinding %s/%s to ClusterRole %s", namespace, want.Name, want.RoleRef.Name)
	}
	return nil
}

func (t *TenantClusters) recall(tenantID string) (known, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.known[tenantID]
	return k, ok
}

func (t *TenantClusters) remember(tenantID, namespace string, renewAt time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known == nil {
		t.known = map[string]known{}
	}
	t.known[tenantID] = known{namespace: namespace, renewAt: renewAt}
}

func (t *TenantClusters) clusterRole() string {
	if t.ClusterRole != "" {
		return t.ClusterRole
	}
	return DefaultClusterRole
}

func (t *TenantClusters) lifetime() time.Duration {
	if t.TokenLifetime > 0 {
		return t.TokenLifetime
	}
	return DefaultTokenLifetime
}

// renewHalfway is when a token issued at issued and expiring at expires is due for renewal:
// once half of its lifetime has passed, so that a renewal that fails is tried again for
// hours before Argo CD is left without credentials.
func renewHalfway(issued, expires time.Time) time.Time {
	return issued.Add(expires.Sub(issued) / 2)
}

// ServerTLS is how Argo CD trusts the API server cfg reaches: its CA (read from the file cfg
// names, as in a Pod), server name and whether it skips verification. cfg's own
// credentials are not part of it.
func ServerTLS(cfg *rest.Config) (argov1alpha1.TLSClientConfig, error) {
	tls := argov1alpha1.TLSClientConfig{Insecure: cfg.Insecure, ServerName: cfg.ServerName, CAData: cfg.CAData}
	if len(tls.CAData) == 0 && cfg.CAFile != "" {
		ca, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return tls, fmt.Errorf("reading the API server's CA: %w", err)
		}
		tls.CAData = ca
	}
	return tls, nil
}

// wrapAPI names what failed and why, keeping the API error (and its NotFound) inspectable.
// The API server's reason is all it quotes: never a token.
func wrapAPI(err error, format string, args ...any) error {
	return &apiError{what: fmt.Sprintf(format, args...), err: err}
}

type apiError struct {
	what string
	err  error
}

func (e *apiError) Error() string {
	reason := e.err.Error()
	var status apierrors.APIStatus
	if errors.As(e.err, &status) {
		reason = string(apierrors.ReasonForError(e.err))
	}
	return e.what + " failed (" + reason + ")"
}

func (e *apiError) Unwrap() error { return e.err }
