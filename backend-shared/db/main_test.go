package db_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// fixture is a fresh migrated database with a store and one engine instance.
type fixture struct {
	ctx      context.Context
	cfg      db.Config
	db       *bun.DB
	key1     []byte // the keyring's only key, "k1"
	keyring  *secretbox.Keyring
	store    *db.Store
	cluster  *db.EngineCluster
	instance *db.EngineInstance
}

// newKeyring returns a keyring of one new key, and the key.
func newKeyring(t testing.TB, id string) (*secretbox.Keyring, []byte) {
	t.Helper()
	key, err := secretbox.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	kr, err := secretbox.NewKeyring(id, map[string][]byte{id: key})
	if err != nil {
		t.Fatal(err)
	}
	return kr, key
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), cfg: dbtest.NewConfig(t)}
	f.keyring, f.key1 = newKeyring(t, "k1")
	f.db = dbtest.Open(t, f.cfg)
	f.store = db.NewStore(f.keyring)
	var err error
	f.cluster, err = f.store.GetOrCreateEngineCluster(f.ctx, f.db, "in-cluster", "")
	if err != nil {
		t.Fatal(err)
	}
	f.instance = f.newInstance(t)
	return f
}

func newUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (f *fixture) newInstance(t testing.TB) *db.EngineInstance {
	t.Helper()
	ei := &db.EngineInstance{EngineClusterID: f.cluster.ID, NamespaceName: "argocd-" + newUID()[:8], NamespaceUID: newUID()}
	if err := f.store.CreateEngineInstance(f.ctx, f.db, ei); err != nil {
		t.Fatal(err)
	}
	return ei
}

func (f *fixture) newTenant(t testing.TB) *db.Tenant {
	t.Helper()
	uid := newUID()
	tenant, err := f.store.GetOrCreateTenant(f.ctx, f.db, uid, "ns-"+uid[:8])
	if err != nil {
		t.Fatal(err)
	}
	return tenant
}

func (f *fixture) newEnv(t testing.TB, tenantID string) (*db.ManagedEnvironment, *db.ClusterCredentials) {
	t.Helper()
	env := &db.ManagedEnvironment{TenantID: tenantID, Name: "env-" + newUID()[:8]}
	creds := &db.ClusterCredentials{Host: "https://api.example.com:6443", BearerToken: db.Secret("token-" + newUID()), Namespaces: []string{"a", "b"}}
	if err := f.store.CreateManagedEnvironment(f.ctx, f.db, env, creds); err != nil {
		t.Fatal(err)
	}
	return env, creds
}

func appSpec(tenantID, revision string) argov1alpha1.ApplicationSpec {
	return argov1alpha1.ApplicationSpec{
		Source: &argov1alpha1.ApplicationSource{
			RepoURL: "https://github.com/example/repo", Path: "deploy", TargetRevision: revision,
		},
		Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "team-a"},
		Project:     "app-project-" + tenantID,
		SyncPolicy: &argov1alpha1.SyncPolicy{
			Automated:   &argov1alpha1.SyncPolicyAutomated{Prune: true, SelfHeal: true, AllowEmpty: true},
			SyncOptions: argov1alpha1.SyncOptions{"PrunePropagationPolicy=background"},
		},
	}
}

// newApp creates an application for a new GitOpsDeployment with its mapping; envID may be "".
func (f *fixture) newApp(t testing.TB, tenantID, envID string) (*db.Application, *db.DeploymentMapping) {
	t.Helper()
	uid := newUID()
	app := &db.Application{
		TenantID: tenantID, Name: db.ApplicationName(uid), EngineInstanceID: f.instance.ID,
		ManagedEnvironmentID: envID, Spec: appSpec(tenantID, "main"),
	}
	if _, err := f.store.UpsertApplication(f.ctx, f.db, app); err != nil {
		t.Fatal(err)
	}
	m, err := f.store.GetOrCreateDeploymentMapping(f.ctx, f.db, &db.DeploymentMapping{
		DeploymentUID: uid, TenantID: tenantID, DeploymentName: "depl-" + uid[:8], DeploymentNamespace: "ns", ApplicationID: app.ID,
	})
	if err != nil {
		t.Fatal(err)
	}
	return app, m
}

func (f *fixture) count(t testing.TB, table string) int {
	t.Helper()
	n, err := f.db.NewSelect().Table(table).Count(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// g is NewWithT, short because every test starts with it.
func g(t *testing.T) *WithT { return NewWithT(t) }

func metav1Now() *metav1.Time {
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	return &now
}
