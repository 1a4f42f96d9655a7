// Package app wires the cluster-agent: its flags, the registration of its engine
// instance, and the controllers and runnables it adds to the manager.
package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/uptrace/bun"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/dbmetrics"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/orphans"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/appstatus"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/argoapp"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/burst"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/credsecret"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/leftovers"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/opgc"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/sweep"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/syncop"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/tenantcluster"
)

// DefaultStatusHold is the default --status-hold.
const DefaultStatusHold = burst.DefaultMax

// EnvKeysFile supplies the default --credentials-keys-file, as for the backend.
const EnvKeysFile = "GITOPS_KEYS_FILE"

// Options configure the agent.
type Options struct {
	Engine engine.Options
	DB     db.Config
	// CredentialsKeysFile is the keyring that decrypts credentials; without it,
	// ManagedEnvironment and RepositoryCredential operations fail.
	CredentialsKeysFile string
	// ApplicationDeletionTimeout is how long Argo CD gets to prune a deleted Application
	// before its finalizer is removed.
	ApplicationDeletionTimeout time.Duration
	// OperationGCInterval is how often expired operations are deleted; 0 disables it.
	OperationGCInterval time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles per controller.
	MaxConcurrentReconciles int
	// SweepInterval is how often orphaned Applications and missing Operation CRs are
	// looked for; 0 disables it.
	SweepInterval time.Duration
	// OperationRetryLimit is how long an operation whose handler keeps failing is retried
	// before it is marked Failed; 0 retries forever.
	OperationRetryLimit time.Duration
	// OrphanGracePeriod is how long resources a force-deleted Application left behind stay
	// before they are removed; 0 leaves them.
	OrphanGracePeriod time.Duration
	// StatusHold bounds how long a burst of operations defers the recording of its
	// Applications' status (0: never).
	StatusHold time.Duration
	// ArgoCDServiceAccount is the ServiceAccount of Argo CD's application controller in the
	// engine namespace, whose token removes left-behind resources in the cluster Argo CD
	// runs on.
	ArgoCDServiceAccount string
	// TenantClusterRole is the ClusterRole a tenant's deployer is bound to in the tenant's
	// namespace, as which Argo CD deploys there; empty: Argo CD deploys with its own identity.
	TenantClusterRole string

	// Not flags: polling while waiting for Argo CD (defaults of the handlers), and, for
	// tests running several managers in one process, skipping the controller name check.
	DeletionPollInterval time.Duration
	SyncPollInterval     time.Duration
	SkipNameValidation   bool
	// ServiceClusterInterval is how often the service cluster Secret is checked (default
	// credsecret.DefaultServiceClusterInterval).
	ServiceClusterInterval time.Duration
	// TenantRenewInterval is how often the tenants' cluster Secrets are renewed and
	// restored (default that of package tenantcluster).
	TenantRenewInterval time.Duration
}

// BindFlags registers the agent's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.Engine.BindFlags(fs)
	o.DB.BindFlags(fs)
	fs.StringVar(&o.CredentialsKeysFile, "credentials-keys-file", os.Getenv(EnvKeysFile),
		"Keyring file that decrypts managed environment and repository credentials (lines <id>:<base64 key>; default $"+EnvKeysFile+"); "+
			"without it, ManagedEnvironment and RepositoryCredential operations fail.")
	fs.DurationVar(&o.ApplicationDeletionTimeout, "application-deletion-timeout", argoapp.DefaultDeletionTimeout,
		"How long Argo CD gets to prune a deleted Application's resources before the agent removes its finalizer (0: wait forever).")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 8, "Parallel reconciles per controller.")
	fs.DurationVar(&o.OperationGCInterval, "operation-gc-interval", opgc.DefaultInterval,
		"How often finished operations past their retention are deleted, with their Operation CRs (jittered; 0 disables).")
	fs.DurationVar(&o.SweepInterval, "sweep-interval", sweep.DefaultInterval,
		"How often labelled Argo CD Applications, Secrets and AppProjects without a row are deleted and missing Operation CRs re-created (jittered ±20%; 0 disables).")
	fs.DurationVar(&o.OrphanGracePeriod, "orphaned-resource-grace-period", leftovers.DefaultGracePeriod,
		"How long resources that a deleted Application left behind (Argo CD did not prune them within --application-deletion-timeout) "+
			"stay before those still tracked by it alone and not annotated "+orphans.AnnotationKeep+"=true are deleted (0: never).")
	fs.StringVar(&o.ArgoCDServiceAccount, "argocd-service-account", leftovers.DefaultArgoCDServiceAccount,
		"ServiceAccount of Argo CD's application controller in the engine namespace: left-behind resources on the cluster Argo CD runs on are deleted with its token.")
	fs.StringVar(&o.TenantClusterRole, "tenant-cluster-role", tenantcluster.DefaultClusterRole,
		"ClusterRole bound, in each tenant's namespace only, to the ServiceAccount "+argocd.TenantDeployerName+" the agent keeps there: "+
			"Argo CD deploys into the tenant's namespace as it, so Kubernetes refuses what that role may not do. "+
			"The agent must itself be allowed to bind the role. Empty: Argo CD deploys with its own identity (not safe with tenants who must not hold it).")
	fs.DurationVar(&o.StatusHold, "status-hold", DefaultStatusHold,
		"While a burst of operations is carried out, the recording of Argo CD's status of its Applications waits for it, at most this long per burst, "+
			"so that the burst's Applications are all created first (0: never waits).")
	fs.DurationVar(&o.OperationRetryLimit, "operation-retry-limit", operation.DefaultRetryLimit,
		"How long an operation that keeps failing (API or database errors) is retried, with backoff, before it is marked Failed (0: forever).")
}

// CacheOptions restricts the manager's cache to the engine namespace: the agent reads
// nothing else.
func (o *Options) CacheOptions() cache.Options {
	return cache.Options{DefaultNamespaces: map[string]cache.Config{o.Engine.Namespace: {}},
		DefaultTransform: manageropts.StripManagedFields}
}

// ManagerOptions limits the manager's cache to the engine namespace and keeps the
// leader-election lease there unless another namespace was given.
func (o *Options) ManagerOptions(mo *ctrl.Options) {
	mo.Cache = o.CacheOptions()
	if mo.LeaderElectionNamespace == "" {
		mo.LeaderElectionNamespace = o.Engine.Namespace
	}
}

// Prepare waits, before anything touches the database, until its schema is the one this
// binary was built for (the backend migrates it), and refuses a newer incompatible one.
func (o *Options) Prepare(ctx context.Context, _ logr.Logger, waiting func(reason string)) error {
	return db.WaitForSchema(ctx, o.DB, waiting)
}

// Setup opens the database pool and wires the agent into mgr (see SetupWithDB).
func (o *Options) Setup(ctx context.Context, mgr manager.Manager, log logr.Logger) error {
	bdb, err := db.Open(ctx, o.DB)
	if err != nil {
		return err
	}
	if err := dbmetrics.Register(ctrlmetrics.Registry, bdb); err != nil {
		return fmt.Errorf("registering the database pool metrics: %w", err)
	}
	// Not ready without the database would only take the metrics endpoint out of its
	// Service during a failover, when they matter most: readiness does not include it.
	id, err := SetupWithDB(ctx, mgr, bdb, *o)
	if err != nil {
		return err
	}
	log.Info("Serving engine instance", "engineCluster", id.ClusterName, "engineInstance", id.InstanceID, "namespace", id.Namespace,
		"serviceServer", id.ServiceServer())
	return nil
}

// SetupWithDB registers the engine instance (reading its namespace through the manager's
// API reader) and adds to mgr the Operation controller with its handlers, the Application
// status controller, the operation garbage collector, the service cluster Secret (with
// --service-cluster-kubeconfig), the leftovers remover (with a grace period) and the sweep.
// bdb is the process's database pool.
func SetupWithDB(ctx context.Context, mgr manager.Manager, bdb bun.IDB, opts Options) (engine.Identity, error) {
	var keyring *secretbox.Keyring
	if opts.CredentialsKeysFile != "" {
		var err error
		if keyring, err = secretbox.LoadKeyringFile(opts.CredentialsKeysFile); err != nil {
			return engine.Identity{}, fmt.Errorf("loading --credentials-keys-file: %w", err)
		}
	}
	store := db.NewStore(keyring)

	id, err := engine.Register(ctx, mgr.GetAPIReader(), bdb, store, opts.Engine)
	if err != nil {
		return engine.Identity{}, err
	}

	c := mgr.GetClient()
	// The AppProjects' own client, so that only their reads wait for the cache to show
	// their writes.
	projectsClient, err := client.New(mgr.GetConfig(), client.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		Cache: &client.CacheOptions{Reader: mgr.GetCache(), EnableReadYourWritesConsistency: ptr.To(true)},
	})
	if err != nil {
		return engine.Identity{}, fmt.Errorf("creating the AppProjects' client: %w", err)
	}
	var tenants *tenantcluster.TenantClusters
	if opts.TenantClusterRole != "" {
		if tenants, err = tenantClusters(mgr, opts, &id); err != nil {
			return engine.Identity{}, err
		}
		if err := mgr.Add(tenants.Task()); err != nil {
			return engine.Identity{}, fmt.Errorf("adding the renewal of the tenants' tokens: %w", err)
		}
	}
	projects := &argoapp.Projects{Client: projectsClient, APIReader: mgr.GetAPIReader(), DB: bdb, Store: store, Identity: id}
	if tenants != nil {
		projects.TenantClusters = tenants
	}
	handlers := map[db.OperationResourceType]operation.Handler{
		db.OperationResourceApplication: &argoapp.Applications{
			Client: c, APIReader: mgr.GetAPIReader(), DB: bdb, Store: store, Identity: id, Projects: projects,
			DeletionTimeout: opts.ApplicationDeletionTimeout, PollInterval: opts.DeletionPollInterval,
			OrphanGracePeriod: opts.OrphanGracePeriod,
		},
		db.OperationResourceAppProject: projects,
		db.OperationResourceSyncOperation: &syncop.Handler{
			Client: c, APIReader: mgr.GetAPIReader(), DB: bdb, Store: store, Identity: id, PollInterval: opts.SyncPollInterval,
		},
		db.OperationResourceManagedEnvironment: &credsecret.Clusters{
			Client: c, APIReader: mgr.GetAPIReader(), DB: bdb, Store: store, Identity: id, PollInterval: opts.DeletionPollInterval,
		},
		db.OperationResourceRepositoryCredential: &credsecret.Repositories{Client: c, DB: bdb, Store: store, Identity: id},
	}
	statusHold := &burst.Hold{Max: opts.StatusHold}
	operations := &operation.Reconciler{
		Client: c, DB: bdb, Store: store, Identity: id, Handlers: handlers, RetryLimit: opts.OperationRetryLimit,
		MaxConcurrentReconciles: max(1, opts.MaxConcurrentReconciles), SkipNameValidation: opts.SkipNameValidation,
		Burst: statusHold,
	}
	if err := operations.SetupWithManager(mgr); err != nil {
		return engine.Identity{}, fmt.Errorf("setting up the operation controller: %w", err)
	}
	if err := (&appstatus.Reconciler{
		Client: c, DB: bdb, Store: store, Identity: id,
		MaxConcurrentReconciles: max(1, opts.MaxConcurrentReconciles), SkipNameValidation: opts.SkipNameValidation,
		Burst: statusHold,
	}).SetupWithManager(mgr); err != nil {
		return engine.Identity{}, fmt.Errorf("setting up the application status controller: %w", err)
	}
	collector := &opgc.Collector{Client: c, DB: bdb, Store: store, Identity: id, Interval: opts.OperationGCInterval}
	if err := mgr.Add(collector.Task()); err != nil {
		return engine.Identity{}, fmt.Errorf("adding the operation garbage collector: %w", err)
	}
	if opts.Engine.ServiceClusterKubeconfig != "" {
		if err := mgr.Add(&credsecret.ServiceCluster{Client: c, Reader: mgr.GetAPIReader(), Identity: id,
			Kubeconfig: opts.Engine.ServiceClusterKubeconfig, Interval: opts.ServiceClusterInterval}); err != nil {
			return engine.Identity{}, fmt.Errorf("adding the service cluster Secret: %w", err)
		}
	}
	if opts.OrphanGracePeriod > 0 {
		remover := &leftovers.Remover{
			Client: c, APIReader: mgr.GetAPIReader(), Config: mgr.GetConfig(), DB: bdb, Store: store, Identity: id,
			Interval: min(opts.OrphanGracePeriod, time.Minute), ArgoCDServiceAccount: opts.ArgoCDServiceAccount,
		}
		if err := mgr.Add(remover.Task()); err != nil {
			return engine.Identity{}, fmt.Errorf("adding the leftovers remover: %w", err)
		}
	}
	sweeper := &sweep.Sweeper{
		Client: c, APIReader: mgr.GetAPIReader(), DB: bdb, Store: store, Identity: id, Interval: opts.SweepInterval,
		Requeue: operations.Requeue, TakeSignal: operations.TakeSignal,
	}
	if err := mgr.Add(sweeper.Task()); err != nil {
		return engine.Identity{}, fmt.Errorf("adding the sweep: %w", err)
	}
	return id, nil
}

// tenantClusters sets up the tenants' own cluster entries: on the service's cluster as the
// agent reaches it, or as --service-cluster-kubeconfig does for an engine cluster that is
// another one. It records in id where Argo CD reaches the tenants' namespaces.
func tenantClusters(mgr manager.Manager, opts Options, id *engine.Identity) (*tenantcluster.TenantClusters, error) {
	cfg := mgr.GetConfig()
	if opts.Engine.ServiceClusterKubeconfig != "" {
		var err error
		if cfg, err = engine.LoadServiceCluster(opts.Engine.ServiceClusterKubeconfig); err != nil {
			return nil, err
		}
	}
	tls, err := tenantcluster.ServerTLS(cfg)
	if err != nil {
		return nil, err
	}
	service, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, fmt.Errorf("creating the client of the tenants' namespaces: %w", err)
	}
	id.TenantAPIURL = argocd.NormalizeAPIURL(cfg.Host)
	return &tenantcluster.TenantClusters{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Service: service,
		Identity: *id, TLS: tls, ClusterRole: opts.TenantClusterRole, Interval: opts.TenantRenewInterval}, nil
}
