package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/app"
	"github.com/gitops-service/gitops-service/backend/internal/managedenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	// Unreachable clusters are retried within the tests' patience.
	managedenv.TransientRetry = 2 * time.Second
	os.Exit(testenv.Main(testenv.Options{}, &cp, func() int { return dbtest.Main(m) }))
}

// harness is a running backend with its own database, tenant namespace and engine namespace.
type harness struct {
	t      *testing.T
	g      Gomega
	ctx    context.Context
	db     *bun.DB
	store  *db.Store
	tenant string // tenant namespace
	other  string // a second tenant namespace (see asOther)
	engine string // engine (Argo CD) namespace
}

// asOther is the harness acting in the second tenant namespace.
func (h *harness) asOther() *harness {
	o := *h
	o.tenant = h.other
	return &o
}

// startBackend runs the backend's controllers in-process until the test ends; mutate
// adjusts its options.
func startBackend(t *testing.T, mutate ...func(*app.Options)) *harness {
	t.Helper()
	h := &harness{t: t, g: NewWithT(t), ctx: context.Background()}
	cfg := dbtest.NewConfig(t)
	h.db = dbtest.Open(t, cfg)
	keyring := testKeyring(t)
	h.store = db.NewStore(keyring.ring)
	h.tenant = cp.NewNamespace(t, "tenant-")
	h.other = cp.NewNamespace(t, "other-")
	h.engine = cp.NewNamespace(t, "argocd-")
	opts := &app.Options{
		Database:                cfg,
		EngineNamespace:         h.engine,
		EngineCluster:           "default",
		MaxConcurrentReconciles: 2,
		OperationRetention:      time.Minute,
		KeysFile:                keyring.file,
	}
	for _, m := range mutate {
		m(opts)
	}
	cp.RunManager(t, []string{h.tenant, h.other, h.engine}, opts.Setup, app.ManagerOptions)
	return h
}

const (
	eventually = 20 * time.Second
	poll       = 50 * time.Millisecond
)

// tenantRow returns the tenant row of the harness's tenant namespace, once it exists.
func (h *harness) tenantRow() *db.Tenant {
	h.t.Helper()
	ns := &corev1.Namespace{}
	h.g.Expect(cp.Client.Get(h.ctx, keyOf("", h.tenant), ns)).To(Succeed())
	var tenant *db.Tenant
	h.g.Eventually(func() error {
		var err error
		tenant, err = h.store.GetTenantByNamespaceUID(h.ctx, h.db, string(ns.UID))
		return err
	}, eventually, poll).Should(Succeed())
	return tenant
}

type keyringFile struct {
	ring *secretbox.Keyring
	file string
}

// testKeyring writes a fresh credentials keyring for the backend under test.
func testKeyring(t *testing.T) keyringFile {
	t.Helper()
	key, err := secretbox.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte(secretbox.FormatKeyLine("test", key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ring, err := secretbox.LoadKeyringFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return keyringFile{ring: ring, file: file}
}
