package app_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/app"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	var err error
	if cp, err = testenv.StartControlPlane(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := dbtest.Main(m)
	_ = cp.Stop()
	os.Exit(code)
}

// harness is a running backend with its own database, tenant namespace and engine namespace.
type harness struct {
	t      *testing.T
	g      Gomega
	ctx    context.Context
	db     *bun.DB
	store  *db.Store
	tenant string // tenant namespace
	engine string // engine (Argo CD) namespace
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := cp.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// startBackend runs the backend's controllers in-process until the test ends.
func startBackend(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, g: NewWithT(t), ctx: context.Background()}
	cfg := dbtest.NewConfig(t)
	h.db = dbtest.Open(t, cfg)
	h.store = db.NewStore(nil)
	h.tenant = newNamespace(t, "tenant-")
	h.engine = newNamespace(t, "argocd-")

	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 cp.Scheme,
		Logger:                 testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Parallel tests each run a manager: each sees only its own namespaces.
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{h.tenant: {}, h.engine: {}}},
		Controller: config.Controller{SkipNameValidation: ptr(true)},
	})
	h.g.Expect(err).NotTo(HaveOccurred())
	opts := &app.Options{
		Database:                cfg,
		EngineNamespace:         h.engine,
		EngineCluster:           "default",
		MaxConcurrentReconciles: 2,
		OperationGCSeconds:      60,
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.g.Expect(opts.Setup(ctx, mgr, mgr.GetLogger())).To(Succeed())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	h.ctx = ctx
	return h
}

func ptr[T any](v T) *T { return &v }

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
