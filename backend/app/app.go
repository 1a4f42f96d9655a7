// Package app wires the backend (public so that integration tests can run it in-process): its flags, the database, the default engine instance, the
// controllers, the notification listener and the webhooks.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/certmetrics"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/dbmetrics"
	"github.com/gitops-service/gitops-service/backend/internal/crcleanup"
	"github.com/gitops-service/gitops-service/backend/internal/deployment"
	"github.com/gitops-service/gitops-service/backend/internal/gitwebhook"
	"github.com/gitops-service/gitops-service/backend/internal/indexes"
	"github.com/gitops-service/gitops-service/backend/internal/managedenv"
	"github.com/gitops-service/gitops-service/backend/internal/metrics"
	"github.com/gitops-service/gitops-service/backend/internal/notifyroute"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
	"github.com/gitops-service/gitops-service/backend/internal/placement"
	"github.com/gitops-service/gitops-service/backend/internal/rebalance"
	"github.com/gitops-service/gitops-service/backend/internal/repocred"
	"github.com/gitops-service/gitops-service/backend/internal/sweep"
	"github.com/gitops-service/gitops-service/backend/internal/syncrun"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
	"github.com/gitops-service/gitops-service/backend/internal/webhook"
)

// EnvKeysFile supplies the default --credentials-keys-file.
const EnvKeysFile = "GITOPS_KEYS_FILE"

// DefaultOperationRetention is the default --operation-retention.
const DefaultOperationRetention = 10 * time.Minute

// DeprecatedFlags are flags that still work, hidden from the help, and what to use instead.
var DeprecatedFlags = map[string]string{"operation-gc-seconds": "use --operation-retention"}

// seconds is a duration flag given as a number of seconds (--operation-gc-seconds).
type seconds struct{ d *time.Duration }

func (s seconds) String() string {
	if s.d == nil { // the flag package's zero value
		return "0"
	}
	return strconv.Itoa(int(s.d.Seconds()))
}

func (s seconds) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return err
	}
	*s.d = time.Duration(n) * time.Second
	return nil
}

// wholeSeconds is d in seconds, rounded up so that a retention below a second still
// expires (0 would keep the operation).
func wholeSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// Options are the backend's own flags.
type Options struct {
	Database                db.Config
	KeysFile                string
	EngineNamespace         string
	EngineCluster           string
	MigrateOnStart          bool
	EnableWebhooks          bool
	MaxConcurrentReconciles int
	// OperationRetention is how long finished Operations are kept (whole seconds,
	// rounded up); 0 keeps them.
	OperationRetention time.Duration
	// RepositoryCAFile names a PEM file of extra certificate authorities trusted when
	// validating https:// repository credentials (a Git server with a private CA).
	RepositoryCAFile string
	// RepositoryCABundle holds extra PEM certificate authorities, added to those of
	// RepositoryCAFile (nil and no file: the system's only).
	RepositoryCABundle []byte
	// SweepInterval is how often rows of CRs deleted unseen are removed; 0 disables it.
	SweepInterval time.Duration
	// RebalanceInterval is how often, besides when the engine instances change, tenants are
	// moved off draining instances and between unevenly loaded ones; 0 disables
	// rebalancing. RebalanceMaxMoves bounds the moves of one run.
	RebalanceInterval time.Duration
	RebalanceMaxMoves int
	// RepositoryRevalidateInterval is how often repository credentials are checked again
	// against their Git servers; 0 disables it.
	RepositoryRevalidateInterval time.Duration
	// ClusterCheckTimeout bounds one check of a managed environment's cluster, and
	// RepositoryCheckTimeout one listing of a repository credential's Git repository.
	ClusterCheckTimeout    time.Duration
	RepositoryCheckTimeout time.Duration
	// GitWebhookAddr serves the Git webhook receiver ("0" or "" disables it) with the
	// certificate in GitWebhookCertDir.
	GitWebhookAddr string
	// GitWebhookMaxInFlight bounds the receiver's requests at once; GitWebhookNoSourceLimits
	// turns off its limits per source address (for a receiver that sees one address, a
	// proxy's, which limits per client itself).
	GitWebhookMaxInFlight    int
	GitWebhookNoSourceLimits bool
	GitWebhookCertDir        string
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.Database.BindFlags(fs)
	fs.StringVar(&o.KeysFile, "credentials-keys-file", os.Getenv(EnvKeysFile), "File with the AES-256 keys that encrypt credentials in the database (`id:base64key` lines, primary first).")
	fs.StringVar(&o.EngineNamespace, "engine-namespace", "gitops-service-argocd", "Namespace of the default GitOps engine (Argo CD) instance, registered at start; empty registers none.")
	fs.StringVar(&o.EngineCluster, "engine-cluster", "default", "Name of the cluster the default engine instance runs on.")
	fs.BoolVar(&o.MigrateOnStart, "migrate", true, "Apply the pending database migrations at start, before the controllers (under an advisory lock); with false, wait until another replica or a Job has.")
	fs.BoolVar(&o.EnableWebhooks, "enable-webhooks", false, "Serve the validating admission webhooks (port 9443, serving certificate tls.crt/tls.key in /tmp/k8s-webhook-server/serving-certs).")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 8, "Parallel reconciles per controller.")
	fs.DurationVar(&o.OperationRetention, "operation-retention", DefaultOperationRetention,
		"How long finished Operations (rows and CRs) are kept before the cluster-agent's garbage collector deletes them (whole seconds; 0 keeps them).")
	fs.Var(seconds{&o.OperationRetention}, "operation-gc-seconds", "--operation-retention in seconds.")
	fs.DurationVar(&o.SweepInterval, "sweep-interval", sweep.DefaultInterval, "How often rows whose CR or namespace was deleted unseen are removed, with their Argo CD objects (jittered ±20%; 0 disables).")
	fs.DurationVar(&o.RebalanceInterval, "rebalance-interval", rebalance.DefaultInterval,
		"How often, besides at once when the engine instances change, tenants are moved off draining engine instances and from overloaded to underloaded ones (jittered ±20%; 0 disables rebalancing).")
	fs.IntVar(&o.RebalanceMaxMoves, "rebalance-max-moves", rebalance.DefaultMaxMoves, "Most tenants one rebalancing run starts moving.")
	fs.DurationVar(&o.RepositoryRevalidateInterval, "repository-revalidate-interval", repocred.DefaultRevalidateInterval, "How often repository credentials are checked again against their Git servers, without a change of the CR or Secret (0 disables).")
	fs.DurationVar(&o.ClusterCheckTimeout, "cluster-check-timeout", managedenv.DefaultCheckTimeout,
		"Longest wait, including the dial, for a managed environment's cluster to answer a credential check.")
	fs.DurationVar(&o.RepositoryCheckTimeout, "repository-check-timeout", repocred.DefaultCheckTimeout,
		"Longest wait, including the dial, for a repository credential's Git server to list the repository's references.")
	fs.StringVar(&o.GitWebhookAddr, "git-webhook-bind-address", "0", "Address the Git webhook receiver (push events of GitHub, GitLab, Gitea, Forgejo and Bitbucket, at /hooks/<namespace>) binds to; \"0\" disables it.")
	fs.IntVar(&o.GitWebhookMaxInFlight, "git-webhook-max-in-flight", gitwebhook.DefaultMaxInFlight,
		"Requests the Git webhook receiver works on at once (each holds at most 2 MiB); one more is answered 503. One source address holds at most an eighth of them.")
	fs.BoolVar(&o.GitWebhookNoSourceLimits, "git-webhook-no-source-limits", false,
		"Turn off the Git webhook receiver's limits per source address (a rate, and an eighth of the requests in flight): for a receiver behind a proxy that all requests seem to come from, and that limits per client itself.")
	fs.StringVar(&o.GitWebhookCertDir, "git-webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory of the Git webhook receiver's TLS certificate (tls.crt, tls.key), reloaded when it changes.")
	fs.StringVar(&o.RepositoryCAFile, "repository-ca-file", "", "PEM file of extra certificate authorities to trust when checking https:// repository credentials.")
}

// repositoryCABundle is RepositoryCABundle plus the contents of RepositoryCAFile.
func (o *Options) repositoryCABundle() ([]byte, error) {
	if o.RepositoryCAFile == "" {
		return o.RepositoryCABundle, nil
	}
	data, err := os.ReadFile(o.RepositoryCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading --repository-ca-file: %w", err)
	}
	return append(append([]byte{}, o.RepositoryCABundle...), data...), nil
}

// Keyring loads the credentials keyring, or returns nil when no file is configured.
func (o *Options) Keyring() (*secretbox.Keyring, error) {
	if o.KeysFile == "" {
		return nil, nil
	}
	return secretbox.LoadKeyringFile(o.KeysFile)
}

// Prepare brings the database's schema to this binary's before anything else touches the
// database: it applies the pending migrations (with --migrate), then checks that the schema
// is one this binary runs against, waiting while it is older or dirty (--migrate=false:
// a Job or another replica migrates) and refusing a newer incompatible one.
func (o *Options) Prepare(ctx context.Context, log logr.Logger, waiting func(reason string)) error {
	if o.MigrateOnStart {
		waiting("applying the database migrations")
		if err := db.Migrate(ctx, o.Database); err != nil {
			return err
		}
	}
	return db.WaitForSchema(ctx, o.Database, waiting)
}

// Setup adds the backend's controllers and runnables to mgr.
func (o *Options) Setup(ctx context.Context, mgr ctrl.Manager, log logr.Logger) error {
	if o.OperationRetention < 0 {
		return fmt.Errorf("--operation-retention %s is negative", o.OperationRetention)
	}
	database, err := db.Open(ctx, o.Database)
	if err != nil {
		return err
	}
	if err := dbmetrics.Register(ctrlmetrics.Registry, database); err != nil {
		return fmt.Errorf("registering the database pool metrics: %w", err)
	}
	keyring, err := o.Keyring()
	if err != nil {
		return err
	}
	store := db.NewStore(keyring)
	if o.EngineNamespace != "" {
		if err := RegisterEngineInstance(ctx, mgr.GetAPIReader(), database, store, o.EngineCluster, o.EngineNamespace); err != nil {
			return err
		}
	}
	return o.setupControllers(ctx, mgr, database, store, log)
}

func (o *Options) setupControllers(ctx context.Context, mgr ctrl.Manager, database *bun.DB, store *db.Store, log logr.Logger) error {
	placer := &placement.BoundedLoad{}
	resolver := &tenancy.Resolver{Store: store, Placer: placer, Namespaces: mgr.GetClient()}
	signaller := &opsignal.Signaller{DB: database, Store: store, GCExpirationSeconds: wholeSeconds(o.OperationRetention),
		Clusters: &opsignal.Clusters{Local: mgr.GetClient(), Own: o.EngineCluster, Base: mgr.GetConfig(), Scheme: mgr.GetScheme(), DB: database, Store: store}}
	rebalancer := &rebalance.Rebalancer{
		Mover: &rebalance.Mover{DB: database, Store: store, Signal: signaller}, Planner: placer,
		Interval: o.RebalanceInterval, MaxMoves: o.RebalanceMaxMoves,
	}
	if err := rebalancer.SetupWithManager(mgr); err != nil {
		return err
	}
	outstanding := &opsignal.Outstanding{Signaller: signaller, Store: store}
	if err := outstanding.SetupWithManager(mgr); err != nil {
		return err
	}
	router := notifyroute.NewRouter(mgr.GetClient(), database, store, log.WithName("events"),
		func() client.ObjectList { return &v1.GitOpsDeploymentList{} },
		func() client.ObjectList { return &v1.GitOpsDeploymentSyncRunList{} })
	if o.RebalanceInterval > 0 {
		router.EngineInstancesChanged = rebalancer.Wake
	}
	router.SignalsMayBeLost = outstanding.Wake

	if err := indexes.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	deployments := &deployment.Reconciler{
		Client: mgr.GetClient(), DB: database, Store: store, Tenancy: resolver, Signal: signaller,
		Recorder: mgr.GetEventRecorderFor("gitopsdeployment-controller"), Queue: &router.Deployments, SyncRuns: &router.SyncRuns,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
	}
	if err := deployments.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	syncRuns := &syncrun.Reconciler{
		Client: mgr.GetClient(), DB: database, Store: store, Tenancy: resolver, Signal: signaller,
		Recorder: mgr.GetEventRecorderFor("gitopsdeploymentsyncrun-controller"), Queue: &router.SyncRuns,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
	}
	if err := syncRuns.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	environments := &managedenv.Reconciler{
		Client: mgr.GetClient(), DB: database, Store: store, Tenancy: resolver, Signal: signaller,
		Recorder:                mgr.GetEventRecorderFor("gitopsdeploymentmanagedenvironment-controller"),
		MaxConcurrentReconciles: o.MaxConcurrentReconciles, CheckTimeout: o.ClusterCheckTimeout,
	}
	if err := environments.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	caBundle, err := o.repositoryCABundle()
	if err != nil {
		return err
	}
	repositoryCredentials := &repocred.Reconciler{
		Client: mgr.GetClient(), DB: database, Store: store, Tenancy: resolver, Signal: signaller,
		Recorder: mgr.GetEventRecorderFor("gitopsdeploymentrepositorycredential-controller"),
		CABundle: caBundle, RevalidateInterval: o.RepositoryRevalidateInterval,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles, CheckTimeout: o.RepositoryCheckTimeout,
	}
	if err := repositoryCredentials.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	sweeper := &sweep.Sweeper{
		Cache: mgr.GetClient(), APIReader: mgr.GetAPIReader(), DB: database, Store: store, Signal: signaller, Interval: o.SweepInterval,
		Kinds: map[string]sweep.Kind{
			sweep.KindDeployment: {New: func() client.Object { return &v1.GitOpsDeployment{} },
				NewList: func() client.ObjectList { return &v1.GitOpsDeploymentList{} }, Queue: &router.Deployments},
			string(db.APIResourceSyncRun): {New: func() client.Object { return &v1.GitOpsDeploymentSyncRun{} },
				NewList: func() client.ObjectList { return &v1.GitOpsDeploymentSyncRunList{} }, Queue: &router.SyncRuns},
			string(db.APIResourceManagedEnvironment): {New: func() client.Object { return &v1.GitOpsDeploymentManagedEnvironment{} },
				NewList: func() client.ObjectList { return &v1.GitOpsDeploymentManagedEnvironmentList{} }, Queue: &environments.Queue,
				Remover: &crcleanup.Remover{DB: database, Store: store, Tenancy: resolver, Signal: signaller, Kind: db.APIResourceManagedEnvironment,
					ResourceType: db.OperationResourceManagedEnvironment, DeleteRow: store.DeleteManagedEnvironment}},
			string(db.APIResourceRepositoryCredential): {New: func() client.Object { return &v1.GitOpsDeploymentRepositoryCredential{} },
				NewList: func() client.ObjectList { return &v1.GitOpsDeploymentRepositoryCredentialList{} }, Queue: &repositoryCredentials.Queue,
				Remover: &crcleanup.Remover{DB: database, Store: store, Tenancy: resolver, Signal: signaller, Kind: db.APIResourceRepositoryCredential,
					ResourceType: db.OperationResourceRepositoryCredential, DeleteRow: store.DeleteRepositoryCredential}},
		},
	}
	if err := mgr.Add(sweeper.Task()); err != nil {
		return err
	}
	listener := &notify.Listener{
		Config:      o.Database,
		Channels:    router.Channels(),
		Handler:     router.Handle,
		OnReconnect: router.Resync,
	}
	if err := mgr.Add(listener); err != nil {
		return err
	}
	// Readiness says whether this pod can serve what its Service sends it: admission reviews
	// and the Git webhook receiver, neither of which needs PostgreSQL. A database away for a
	// failover must not take the backend out of its Service, or every write of a
	// GitOpsDeployment (failurePolicy Fail) would be refused meanwhile; reconciles retry on
	// their own, and the outage shows in the logs, the reconcile errors and their alerts.
	leading := func() bool {
		select {
		case <-mgr.Elected():
			return true
		default:
			return false
		}
	}
	if err := ctrlmetrics.Registry.Register(&metrics.Collector{DB: database, Log: log.WithName("metrics"), Leading: leading}); err != nil {
		// A second backend in one process (tests) registers once.
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return err
		}
	}
	return o.setupWebhooks(mgr, log)
}

// setupWebhooks serves the Git webhook receiver and the admission webhooks the options ask
// for, with their readiness and the expiry of their certificates.
func (o *Options) setupWebhooks(mgr ctrl.Manager, log logr.Logger) error {
	if o.GitWebhookAddr != "" && o.GitWebhookAddr != "0" {
		if err := gitwebhook.Serve(mgr, o.GitWebhookAddr, o.GitWebhookCertDir, &gitwebhook.Receiver{Client: mgr.GetClient(), Cache: mgr.GetCache(),
			MaxInFlight: o.GitWebhookMaxInFlight, NoSourceLimits: o.GitWebhookNoSourceLimits}); err != nil {
			return err
		}
		certmetrics.Watch("git-webhook", filepath.Join(o.GitWebhookCertDir, "tls.crt"), log.WithName("metrics"))
	}
	if o.EnableWebhooks {
		if err := webhook.Setup(mgr); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
		certmetrics.Watch("webhook", certmetrics.WebhookCertFile(mgr.GetWebhookServer()), log.WithName("metrics"))
	}
	return nil
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// RegisterEngineInstance records the engine instance in namespace (on the cluster the
// reader reads) so tenants can be placed on it; it is idempotent.
func RegisterEngineInstance(ctx context.Context, reader client.Reader, idb bun.IDB, store *db.Store, cluster, namespace string) error {
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return fmt.Errorf("reading engine namespace %s: %w", namespace, err)
	}
	_, _, err := store.RegisterEngineInstance(ctx, idb, cluster, ns.Name, string(ns.UID))
	return err
}
