package argoapp

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/agenttest"
)

// One API server (Argo CD's CRDs; no Argo CD runs, so nothing removes a finalizer but the
// code under test) and one PostgreSQL for the package; each test gets its own engine
// namespace and database.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutServiceCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

const testRepo = "https://example.com/team/gitops.git"

// fixture is an Applications handler on a real database and API server. Both clients are
// the uncached admin client: it reads its own writes, as the agent's must.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	db     *bun.DB
	store  *db.Store
	apps   *Applications
	tenant *db.Tenant
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	id := agenttest.Instance(t, cp, bdb, store)
	projects := &Projects{Client: cp.Client, APIReader: cp.Client, DB: bdb, Store: store, Identity: id}
	apps := &Applications{Client: cp.Client, APIReader: cp.Client, DB: bdb, Store: store, Identity: id, Projects: projects,
		DeletionTimeout: time.Hour, PollInterval: 250 * time.Millisecond}
	tenant := agenttest.Tenant(t, bdb, store, id.InstanceID)
	return &fixture{t: t, ctx: ctx, db: bdb, store: store, apps: apps, tenant: tenant}
}

// row writes the application row of a GitOpsDeployment deploying to the in-cluster
// namespace target, as the backend does.
func (f *fixture) row(target string) *db.Application {
	f.t.Helper()
	id := uuid.NewString()
	return f.rowNamed(id, argocd.ApplicationName(types.UID(id)), target)
}

// rowNamed writes an application row with the given id and Argo CD Application name.
func (f *fixture) rowNamed(id, name, target string) *db.Application {
	f.t.Helper()
	g := NewWithT(f.t)
	row := &db.Application{
		ID: id, TenantID: f.tenant.ID, Name: name, EngineInstanceID: f.apps.Identity.InstanceID,
		Spec: argocd.ApplicationSpec(argocd.ApplicationInput{
			RepoURL: testRepo, Path: "apps/web", TargetRevision: "main",
			Destination: argocd.Destination{Namespace: target}, Project: argocd.AppProjectName(f.tenant.ID),
		}),
	}
	_, err := f.store.UpsertApplication(f.ctx, f.db, row)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.store.AddAppProjectRepository(f.ctx, f.db, f.tenant.ID, testRepo)
	g.Expect(err).NotTo(HaveOccurred())
	return row
}

func (f *fixture) deleteRow(row *db.Application) {
	f.t.Helper()
	NewWithT(f.t).Expect(f.store.DeleteApplication(f.ctx, f.db, row.TenantID, row.ID)).To(Succeed())
}

// argoApp reads an Argo CD Application; nil when it does not exist.
func (f *fixture) argoApp(name string) *argov1alpha1.Application {
	f.t.Helper()
	app := &argov1alpha1.Application{}
	err := cp.Client.Get(f.ctx, client.ObjectKey{Namespace: f.apps.Identity.Namespace, Name: name}, app)
	if client.IgnoreNotFound(err) != nil {
		f.t.Fatal(err)
	}
	if err != nil {
		return nil
	}
	return app
}

// argoUpdate changes an Application as Argo CD or a person would.
func (f *fixture) argoUpdate(name string, mutate func(*argov1alpha1.Application)) {
	f.t.Helper()
	app := f.argoApp(name)
	base := app.DeepCopy()
	mutate(app)
	NewWithT(f.t).Expect(cp.Client.Patch(f.ctx, app, client.MergeFrom(base))).To(Succeed())
}
