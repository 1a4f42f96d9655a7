// Package credsecret carries out ManagedEnvironment and RepositoryCredential operations:
// it applies the Argo CD cluster Secret of a managed environment and the repository Secret
// of a repository credential, from the credentials decrypted with the agent's keyring, or
// deletes them when the row is gone.
//
// Nothing here puts a credential, or an error that might quote one, into an operation's
// human-readable state or a log line.
package credsecret

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/kubeconfig"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
)

// Store is the part of the database the handlers use.
type Store interface {
	GetManagedEnvironmentCredentials(ctx context.Context, idb bun.IDB, tenantID, envID string) (*db.ClusterCredentials, error)
	GetRepositoryCredential(ctx context.Context, idb bun.IDB, tenantID, id string) (*db.RepositoryCredential, error)
	GetTenant(ctx context.Context, idb bun.IDB, id string) (*db.Tenant, error)
	ExistingRepositoryCredentialIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error)
	WithTenantLock(ctx context.Context, idb bun.IDB, tenantID string, fn func(ctx context.Context, tx bun.Tx) error) error
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update;patch;delete

// DefaultPollInterval is how often a cluster Secret kept for a tenant served elsewhere is
// looked at again.
const DefaultPollInterval = 2 * time.Second

// Clusters carries out ManagedEnvironment operations (resource id: the managed
// environment's id; the tenant is the operation's owner). A tenant's operations run under
// its advisory lock (Store.WithTenantLock), one at a time with its AppProject operations.
type Clusters struct {
	Client client.Client
	// APIReader reads the tenant's AppProjects from the API server when the tenant is
	// served elsewhere: their deletion, just made under the same lock, may not be in the
	// cache yet.
	APIReader client.Reader
	DB        bun.IDB
	Store     Store
	Identity  engine.Identity
	// PollInterval is how often a cluster Secret kept for a tenant served elsewhere is
	// looked at again (default DefaultPollInterval).
	PollInterval time.Duration
}

var _ operation.Handler = (*Clusters)(nil)

// Handle implements operation.Handler.
func (c *Clusters) Handle(ctx context.Context, t operation.Target) (operation.Outcome, error) {
	name := argocd.ClusterSecretName(t.ResourceID)
	if t.TenantID == "" {
		return c.remove(ctx, name, environmentGone)
	}
	return underTenantLock(ctx, c.Store, c.DB, t.TenantID, func(ctx context.Context, tx bun.Tx) (operation.Outcome, error) {
		return c.handle(ctx, tx, t, name)
	})
}

// environmentGone says why the cluster Secret of a deleted managed environment goes.
const environmentGone = "the managed environment no longer exists"

func (c *Clusters) handle(ctx context.Context, tx bun.Tx, t operation.Target, name string) (operation.Outcome, error) {
	creds, err := c.Store.GetManagedEnvironmentCredentials(ctx, tx, t.TenantID, t.ResourceID)
	switch {
	case notFound(err):
		return c.remove(ctx, name, environmentGone)
	case err != nil:
		if msg := decryptionProblem(err); msg != "" {
			return operation.Failed(msg), nil
		}
		return operation.Outcome{}, fmt.Errorf("reading the managed environment's credentials: %w", err)
	}
	tenant, err := c.Store.GetTenant(ctx, tx, t.TenantID)
	switch {
	case notFound(err):
		return c.remove(ctx, name, environmentGone)
	case err != nil:
		return operation.Outcome{}, fmt.Errorf("reading the tenant: %w", err)
	case tenant.EngineInstanceID != c.Identity.InstanceID:
		return c.leave(ctx, t.TenantID, name)
	}
	cluster, problem := ClusterFromCredentials(t.ResourceID, t.TenantID, creds)
	if problem != "" {
		return operation.Failed(problem), nil
	}
	secret, err := argocd.ClusterSecret(c.Identity.Namespace, cluster)
	if err != nil {
		return operation.Outcome{}, fmt.Errorf("building cluster Secret %s: %w", name, err)
	}
	if err := applySecret(ctx, c.Client, secret); err != nil {
		return operation.Outcome{}, err
	}
	return operation.Completed(fmt.Sprintf("cluster Secret %s is up to date", name)), nil
}

// leave deletes the cluster Secret of a tenant placed on another engine instance once the
// tenant has no AppProject here: until then an Argo CD Application of it here may still
// need the cluster (to prune, or while it waits to be let go during the tenant's move; the
// AppProject operations delete the projects once no Application needs them).
func (c *Clusters) leave(ctx context.Context, tenantID, name string) (operation.Outcome, error) {
	for _, project := range []string{argocd.AppProjectName(tenantID), argocd.RemoteAppProjectName(tenantID)} {
		err := c.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Identity.Namespace, Name: project}, &argov1alpha1.AppProject{})
		switch {
		case err == nil:
			return operation.Waiting(fmt.Sprintf("cluster Secret %s kept while AppProject %s remains: the tenant is placed on another engine instance, "+
				"but its Argo CD Applications here may still need the cluster", name, project), c.poll()), nil
		case !apierrors.IsNotFound(err):
			return operation.Outcome{}, fmt.Errorf("reading AppProject %s: %w", project, err)
		}
	}
	return c.remove(ctx, name, "the tenant is placed on another engine instance")
}

// remove deletes the cluster Secret called name and says why.
func (c *Clusters) remove(ctx context.Context, name, why string) (operation.Outcome, error) {
	if err := deleteSecret(ctx, c.Client, c.Identity.Namespace, name); err != nil {
		return operation.Outcome{}, err
	}
	return operation.Completed(fmt.Sprintf("cluster Secret %s deleted: %s", name, why)), nil
}

func (c *Clusters) poll() time.Duration {
	if c.PollInterval > 0 {
		return c.PollInterval
	}
	return DefaultPollInterval
}

// noCredentials says that a managed environment's stored credentials give Argo CD nothing
// to authenticate with.
const noCredentials = "the managed environment's credentials have no bearer token, client certificate and key, or username and password: " +
	"use a kubeconfig whose user has one of them inline, or createNewServiceAccount: true"

// ClusterFromCredentials describes a managed environment's cluster for its Argo CD cluster
// Secret. The credentials are the stored bearer token (a ServiceAccount token the backend
// installed) or, failing that, those of the kubeconfig user of the context
// (KubeconfigContext, else the current or first context) that uses the kubeconfig cluster
// whose server is the API URL: its token, else its client certificate and key (inline data;
// the backend refuses file paths), else its username and password. The CA comes from that
// cluster. A non-empty second result says, without quoting any credential, why it cannot
// be used.
func ClusterFromCredentials(envID, tenantID string, creds *db.ClusterCredentials) (argocd.Cluster, string) {
	cluster := argocd.Cluster{
		ManagedEnvironmentID: envID,
		TenantID:             tenantID,
		APIURL:               creds.Host,
		BearerToken:          string(creds.BearerToken),
		Insecure:             creds.AllowInsecureSkipTLSVerify,
		Namespaces:           creds.Namespaces,
		ClusterResources:     creds.ClusterResources,
	}
	if creds.Host == "" {
		return argocd.Cluster{}, "the managed environment has no API URL"
	}
	if creds.Kubeconfig != "" {
		kc, err := kubeconfig.Parse([]byte(creds.Kubeconfig), kubeconfig.Options{
			Server: creds.Host, Context: creds.KubeconfigContext, CredentialsOptional: cluster.BearerToken != "",
		})
		switch kubeconfig.KindOf(err) {
		case "":
		case kubeconfig.Unparseable:
			return argocd.Cluster{}, "the managed environment's kubeconfig cannot be parsed"
		case kubeconfig.NoContext:
			return argocd.Cluster{}, fmt.Sprintf("the managed environment's kubeconfig has no cluster whose server is %s", creds.Host)
		case kubeconfig.NoCredentials:
			return argocd.Cluster{}, noCredentials
		default:
			return argocd.Cluster{}, "the managed environment's kubeconfig: " + err.Error()
		}
		// TLS as the backend's check verified it: the CA and server name of the kubeconfig,
		// unless spec.allowInsecureSkipTLSVerify skips verification.
		if !cluster.Insecure {
			cluster.CAData, cluster.ServerName = kc.CAData, kc.ServerName
		}
		switch {
		case cluster.BearerToken != "":
		case kc.BearerToken != "":
			cluster.BearerToken = kc.BearerToken
		case len(kc.CertData) > 0 && len(kc.KeyData) > 0:
			cluster.CertData, cluster.KeyData = kc.CertData, kc.KeyData
		default:
			cluster.Username, cluster.Password = kc.Username, kc.Password
		}
	}
	if cluster.BearerToken == "" && len(cluster.CertData) == 0 && cluster.Username == "" {
		return argocd.Cluster{}, noCredentials
	}
	return cluster, ""
}

// Repositories carries out RepositoryCredential operations (resource id: the repository
// credential's id; the tenant is the operation's owner). A tenant's operations run under
// its advisory lock (Store.WithTenantLock), one at a time with its AppProject operations.
type Repositories struct {
	Client   client.Client
	DB       bun.IDB
	Store    Store
	Identity engine.Identity
}

var _ operation.Handler = (*Repositories)(nil)

// Handle implements operation.Handler.
func (r *Repositories) Handle(ctx context.Context, t operation.Target) (operation.Outcome, error) {
	names := []string{argocd.RepositorySecretName(t.ResourceID), argocd.RemoteRepositorySecretName(t.ResourceID)}
	if t.TenantID == "" {
		// An orphan the sweep found: the credential had no row on this instance then. It
		// may have moved back since, and its own operation applied the Secrets again.
		back, err := r.Store.ExistingRepositoryCredentialIDs(ctx, r.DB, r.Identity.InstanceID, []string{t.ResourceID})
		if err != nil {
			return operation.Outcome{}, fmt.Errorf("checking whether the repository credential is served here: %w", err)
		}
		if back[t.ResourceID] {
			return operation.Completed(fmt.Sprintf("repository Secrets %s kept: the repository credential is served by this engine instance",
				strings.Join(names, " and "))), nil
		}
		return r.remove(ctx, names, credentialGone)
	}
	return underTenantLock(ctx, r.Store, r.DB, t.TenantID, func(ctx context.Context, tx bun.Tx) (operation.Outcome, error) {
		return r.handle(ctx, tx, t, names)
	})
}

// credentialGone says why the Secrets of a deleted repository credential go.
const credentialGone = "the repository credential no longer exists"

func (r *Repositories) handle(ctx context.Context, tx bun.Tx, t operation.Target, names []string) (operation.Outcome, error) {
	cred, err := r.Store.GetRepositoryCredential(ctx, tx, t.TenantID, t.ResourceID)
	switch {
	case notFound(err):
		return r.remove(ctx, names, credentialGone)
	case err != nil:
		if msg := decryptionProblem(err); msg != "" {
			return operation.Failed(msg), nil
		}
		return operation.Outcome{}, fmt.Errorf("reading the repository credential: %w", err)
	}
	if cred.EngineInstanceID != r.Identity.InstanceID {
		return r.remove(ctx, names, "the repository credential is served by another engine instance")
	}
	secrets := argocd.RepositorySecrets(r.Identity.Namespace, argocd.Repository{
		RepositoryCredentialID: cred.ID,
		TenantID:               cred.TenantID,
		URL:                    cred.RepositoryURL,
		Username:               string(cred.Username),
		Password:               string(cred.Password),
		SSHPrivateKey:          string(cred.SSHPrivateKey),
	})
	for _, secret := range secrets {
		if err := applySecret(ctx, r.Client, secret); err != nil {
			return operation.Outcome{}, err
		}
	}
	return operation.Completed(fmt.Sprintf("repository Secrets %s are up to date", strings.Join(names, " and "))), nil
}

// remove deletes the repository Secrets called names and says why.
func (r *Repositories) remove(ctx context.Context, names []string, why string) (operation.Outcome, error) {
	for _, name := range names {
		if err := deleteSecret(ctx, r.Client, r.Identity.Namespace, name); err != nil {
			return operation.Outcome{}, err
		}
	}
	return operation.Completed(fmt.Sprintf("repository Secrets %s deleted: %s", strings.Join(names, " and "), why)), nil
}

// underTenantLock runs handle in a transaction holding the tenant's advisory lock (see
// Store.WithTenantLock), through which handle reads the rows.
func underTenantLock(ctx context.Context, store Store, idb bun.IDB, tenantID string,
	handle func(ctx context.Context, tx bun.Tx) (operation.Outcome, error)) (operation.Outcome, error) {
	var outcome operation.Outcome
	err := store.WithTenantLock(ctx, idb, tenantID, func(ctx context.Context, tx bun.Tx) error {
		var err error
		outcome, err = handle(ctx, tx)
		return err
	})
	return outcome, err
}

// decryptionProblem is the user-facing message of an error decrypting credentials, or ""
// for other errors.
func decryptionProblem(err error) string {
	switch {
	case errors.Is(err, db.ErrNoKeyring):
		return "cannot decrypt the credentials: the cluster-agent runs without --credentials-keys-file"
	case errors.Is(err, secretbox.ErrUnknownKey):
		return "cannot decrypt the credentials: they were encrypted with a key that is not in the cluster-agent's keyring"
	case errors.Is(err, secretbox.ErrDecrypt), errors.Is(err, secretbox.ErrMalformed):
		return "cannot decrypt the credentials: the cluster-agent's keyring does not open them"
	}
	return ""
}

func notFound(err error) bool {
	return errors.Is(err, db.ErrNotFound) || errors.Is(err, db.ErrInvalid)
}

// applySecret applies a Secret. Its error names the Secret only: API errors about a
// Secret's data are not passed on.
func applySecret(ctx context.Context, c client.Client, secret *corev1.Secret) error {
	if err := ssa.Apply(ctx, c, secret); err != nil {
		return fmt.Errorf("applying Secret %s failed (%s)", secret.Name, reason(err))
	}
	return nil
}

func deleteSecret(ctx context.Context, c client.Client, namespace, name string) error {
	secret := &corev1.Secret{}
	secret.Namespace, secret.Name = namespace, name
	if err := c.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Secret %s failed (%s)", name, reason(err))
	}
	return nil
}
