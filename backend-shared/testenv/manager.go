package testenv

import (
	"context"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitops-service/gitops-service/backend-shared/eventshards"
)

// NewNamespace creates a namespace with a generated name starting with prefix.
func (cp *ControlPlane) NewNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := cp.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// RunManager runs a manager, set up by setup, until the test ends. Its cache sees only
// namespaces (and cluster-scoped objects), so parallel tests that each run the service's
// controllers do not reconcile each other's objects; controller names may repeat. options
// adjust the manager's options as the binary's command does (its ManagerOptions).
func (cp *ControlPlane) RunManager(t testing.TB, namespaces []string,
	setup func(ctx context.Context, mgr ctrl.Manager, log logr.Logger) error, options ...func(*ctrl.Options)) {
	t.Helper()
	defaults := map[string]cache.Config{}
	for _, ns := range namespaces {
		defaults[ns] = cache.Config{}
	}
	skip := true
	opts := ctrl.Options{
		Scheme:                 cp.Scheme,
		Logger:                 testr.NewWithInterface(logUntilCleanup(t), testr.Options{}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: defaults},
		Controller:             config.Controller{SkipNameValidation: &skip},
	}
	events, stopEvents := context.WithCancel(context.Background())
	eventshards.Use(events, &opts)
	for _, o := range options {
		o(&opts)
	}
	mgr, err := ctrl.NewManager(cp.Config, opts)
	if err != nil {
		stopEvents()
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := setup(ctx, mgr, mgr.GetLogger()); err != nil {
		cancel()
		stopEvents()
		t.Fatalf("setting up manager: %v", err)
	}
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
		stopEvents()
	})
}

// testLog passes log lines to the test until its cleanup has run. A stopping manager
// still logs from goroutines it does not wait for, and testing panics on a Log call
// made after the test has completed.
type testLog struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func logUntilCleanup(t testing.TB) *testLog {
	l := &testLog{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.done = true
	})
	return l
}

func (l *testLog) Helper() { l.t.Helper() }

func (l *testLog) Log(args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(args...)
	}
}
