package app_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// One control plane (no controller-manager: no test needs garbage collection) and one
// PostgreSQL for the package; each test gets its own namespace, database and agent.
var cp *testenv.ControlPlane

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	log.SetLogger(zap.New(zap.WriteTo(bytes.NewBuffer(nil))))
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var err error
	if cp, err = testenv.StartControlPlane(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	return dbtest.Main(m)
}

// env is one test's running agent and what it needs.
type env struct {
	t     *testing.T
	ctx   context.Context
	c     client.Client // uncached
	db    *bun.DB
	dbCfg db.Config
	store *db.Store // with the keyring the credentials were sealed with
	id    engine.Identity
	ns    string
}

// lockedBuffer collects a test's agent logs, printed when the test fails.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startAgent creates a namespace and a database and runs the agent's manager for them
// until the test ends. withKeyring false starts it without --credentials-keys-file.
func startAgent(t *testing.T, withKeyring bool, mutate func(*agent.Options)) *env {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "argocd-"}}
	g.Expect(cp.Client.Create(ctx, ns)).To(Succeed())

	cfg := dbtest.NewConfig(t)
	bdb := dbtest.Open(t, cfg)

	key, err := secretbox.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	keyFile := filepath.Join(t.TempDir(), "keys")
	g.Expect(os.WriteFile(keyFile, []byte(secretbox.FormatKeyLine("k1", key)+"\n"), 0o600)).To(Succeed())
	keyring, err := secretbox.LoadKeyringFile(keyFile)
	g.Expect(err).NotTo(HaveOccurred())

	opts := agent.Options{
		Engine:                     engine.Options{Namespace: ns.Name, ClusterName: "default"},
		ApplicationDeletionTimeout: 3 * time.Second,
		DeletionPollInterval:       200 * time.Millisecond,
		SyncPollInterval:           200 * time.Millisecond,
		SkipNameValidation:         true,
	}
	if withKeyring {
		opts.CredentialsKeysFile = keyFile
	}
	if mutate != nil {
		mutate(&opts)
	}

	logs := &lockedBuffer{}
	logger := zap.New(zap.UseDevMode(true), zap.WriteTo(logs))
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  opts.CacheOptions(),
		Logger:                 logger,
	})
	g.Expect(err).NotTo(HaveOccurred())
	id, err := agent.SetupWithDB(ctx, mgr, bdb, opts)
	g.Expect(err).NotTo(HaveOccurred())

	mgrCtx, cancel := context.WithCancel(ctrl.LoggerInto(ctx, logger))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		if t.Failed() {
			t.Logf("agent logs:\n%s", logs.String())
		}
	})
	e := &env{t: t, ctx: ctx, c: cp.Client, db: bdb, dbCfg: cfg, store: db.NewStore(keyring), id: id, ns: ns.Name}
	// Wait until the agent works (and its start-up resync is over): an AppProject operation
	// for a tenant without anything completes at once.
	e.completed(e.signal(db.OperationResourceAppProject, uuid.NewString(), "").ID)
	return e
}

func (e *env) g() *WithT { return NewWithT(e.t) }

// tenant creates a tenant placed on the agent's engine instance, as the backend places it.
func (e *env) tenant() *db.Tenant {
	e.t.Helper()
	tenant, err := e.store.GetOrCreateTenant(e.ctx, e.db, uuid.NewString(), "tenant-"+uuid.NewString()[:8])
	e.g().Expect(err).NotTo(HaveOccurred())
	e.g().Expect(e.store.SetTenantEngineInstance(e.ctx, e.db, tenant.ID, e.id.InstanceID)).To(Succeed())
	tenant.EngineInstanceID = e.id.InstanceID
	return tenant
}

// application upserts the row of a GitOpsDeployment (id = its UID) deploying path to the
// in-cluster namespace target.
func (e *env) application(tenant *db.Tenant, deploymentUID, repoURL, path, target string, automated bool) *db.Application {
	e.t.Helper()
	app := &db.Application{
		ID:               deploymentUID,
		TenantID:         tenant.ID,
		Name:             argocd.ApplicationName(types.UID(deploymentUID)),
		EngineInstanceID: e.id.InstanceID,
		Spec: argocd.ApplicationSpec(argocd.ApplicationInput{
			RepoURL: repoURL, Path: path, TargetRevision: "main",
			Destination: argocd.Destination{Namespace: target},
			Project:     argocd.AppProjectName(tenant.ID),
			Automated:   automated,
		}),
	}
	_, err := e.store.UpsertApplication(e.ctx, e.db, app)
	e.g().Expect(err).NotTo(HaveOccurred())
	_, err = e.store.AddAppProjectRepository(e.ctx, e.db, tenant.ID, repoURL)
	e.g().Expect(err).NotTo(HaveOccurred())
	return app
}

// signal writes an Operation row for the resource on the agent's instance and raises the
// instance's signal, creating its CR in the agent's namespace when it raised it, as the
// backend does.
func (e *env) signal(resourceType db.OperationResourceType, resourceID, tenantID string) *db.Operation {
	e.t.Helper()
	op := &db.Operation{
		EngineInstanceID: e.id.InstanceID, ResourceType: resourceType, ResourceID: resourceID,
		OwnerTenantID: tenantID, HumanReadableState: "waiting for the cluster-agent", GCExpirationSeconds: 3600,
	}
	e.g().Expect(e.db.RunInTx(e.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := e.store.CreateOperation(ctx, tx, op); err != nil {
			return err
		}
		var err error
		op.Signalled, err = e.store.RaiseSignal(ctx, tx, op)
		return err
	})).To(Succeed())
	if op.Signalled {
		e.createCR(op.ID)
	}
	return op
}

func (e *env) createCR(operationID string) *v1.Operation {
	e.t.Helper()
	cr := &v1.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: v1.OperationName(operationID), Namespace: e.ns},
		Spec:       v1.OperationSpec{OperationID: operationID},
	}
	e.g().Expect(e.c.Create(e.ctx, cr)).To(Succeed())
	return cr
}

func (e *env) operation(id string) *db.Operation {
	e.t.Helper()
	op, err := e.store.GetOperation(e.ctx, e.db, id)
	e.g().Expect(err).NotTo(HaveOccurred())
	return op
}

// finished waits until an operation is Completed or Failed. Its CR, if it has one, stays
// without a status: the state lives in the row.
func (e *env) finished(id string) *db.Operation {
	e.t.Helper()
	var op *db.Operation
	e.g().Eventually(func(g Gomega) {
		var err error
		op, err = e.store.GetOperation(e.ctx, e.db, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(op.State.Finished()).To(BeTrue(), "operation state %s: %s", op.State, op.HumanReadableState)
	}, timeout, interval).Should(Succeed())
	cr := &v1.Operation{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: v1.OperationName(id)}, cr); err == nil {
		e.g().Expect(cr.Status).To(Equal(v1.OperationStatus{}), "the status of Operation %s", cr.Name)
	}
	return op
}

func (e *env) completed(id string) *db.Operation {
	e.t.Helper()
	op := e.finished(id)
	e.g().Expect(op.State).To(Equal(db.OperationCompleted), op.HumanReadableState)
	return op
}

func (e *env) argoApp(name string) *argov1alpha1.Application {
	e.t.Helper()
	app := &argov1alpha1.Application{}
	e.g().Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, app)).To(Succeed())
	return app
}

// argoUpdate changes an Application as Argo CD would (Argo CD's CRD has no status
// subresource, so status is written with the object).
func (e *env) argoUpdate(name string, mutate func(*argov1alpha1.Application)) *argov1alpha1.Application {
	e.t.Helper()
	app := e.argoApp(name)
	base := app.DeepCopy()
	mutate(app)
	e.g().Expect(e.c.Patch(e.ctx, app, client.MergeFrom(base), client.FieldOwner("argocd-application-controller"))).To(Succeed())
	return app
}
