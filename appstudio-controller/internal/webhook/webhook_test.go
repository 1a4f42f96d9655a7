package webhook_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/indexes"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/webhook"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts an API server that calls the webhook configuration generated into
// manifests/webhook/appstudio-controller, served by a manager in this process.
func run(m *testing.M) int {
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	install := &envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "manifests", "webhook", "appstudio-controller")}}
	if cp, err = testenv.StartControlPlane(testenv.Options{Webhooks: install, WithoutArgoCDCRDs: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := cp.Env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir,
		}),
	})
	if err == nil {
		err = indexes.Register(ctx, mgr.GetFieldIndexer())
	}
	if err == nil {
		err = webhook.Setup(ctx, mgr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = mgr.Start(ctx) }()
	return m.Run()
}

func binding(namespace, name, application, environment string) *appstudio.SnapshotEnvironmentBinding {
	return &appstudio.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{
			Application: application, Environment: environment, Snapshot: "snapshot-1",
		},
	}
}

func newNamespace(ctx context.Context, g Gomega) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	g.Expect(cp.Client.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func TestWebhookAllowsOneBindingPerApplicationAndEnvironment(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(ctx, g)

	// The webhook may need a moment to serve after the manager starts (failurePolicy Fail).
	g.Eventually(func() error {
		return cp.Client.Create(ctx, binding(ns, "first", "app-a", "staging"))
	}, "20s", "100ms").Should(Succeed())

	// The webhook reads through the manager's cache, which sees "first" shortly after.
	const duplicate = `SnapshotEnvironmentBinding "first" already binds application "app-a" to environment "staging"; update it instead of creating another`
	// Until it does, a duplicate may pass: remove it and try again.
	g.Eventually(func() error {
		dup := binding(ns, "duplicate", "app-a", "staging")
		err := cp.Client.Create(ctx, dup)
		if err == nil {
			g.Expect(cp.Client.Delete(ctx, dup)).To(Succeed())
			g.Eventually(func() bool {
				return apierrors.IsNotFound(cp.Client.Get(ctx, client.ObjectKeyFromObject(dup), dup))
			}, "10s", "50ms").Should(BeTrue())
			return fmt.Errorf("admitted before the cache held the first binding")
		}
		return err
	}, "10s", "100ms").Should(MatchError(ContainSubstring(duplicate)))

	g.Expect(cp.Client.Create(ctx, binding(ns, "second", "app-a", "production"))).To(Succeed(), "another environment")
	g.Expect(cp.Client.Create(ctx, binding(ns, "other-app", "app-b", "staging"))).To(Succeed(), "another application")
	other := newNamespace(ctx, g)
	g.Expect(cp.Client.Create(ctx, binding(other, "first", "app-a", "staging"))).To(Succeed(), "another namespace")

	// Moving "second" onto (app-a, staging) is refused. spec.environment is immutable (a CEL
	// rule, applied before admission webhooks), so the API server refuses it already; the
	// webhook's own update check is covered by TestValidateUpdate.
	second := &appstudio.SnapshotEnvironmentBinding{}
	g.Expect(cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "second"}, second)).To(Succeed())
	second.Spec.Environment = "staging"
	g.Expect(cp.Client.Update(ctx, second)).To(MatchError(ContainSubstring("spec.environment is immutable")))

	// Updates that keep the pair pass (a promotion changes spec.snapshot).
	first := &appstudio.SnapshotEnvironmentBinding{}
	g.Expect(cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "first"}, first)).To(Succeed())
	first.Spec.Snapshot = "snapshot-2"
	g.Expect(cp.Client.Update(ctx, first)).To(Succeed())

	// Once "first" is deleted, another binding may take its place.
	g.Expect(cp.Client.Delete(ctx, first)).To(Succeed())
	g.Eventually(func() error {
		return cp.Client.Create(ctx, binding(ns, "replacement", "app-a", "staging"))
	}, "10s", "100ms").Should(Succeed())
}

// newValidator returns a validator over a fake client holding objs, indexed as Setup indexes
// the manager's cache.
func newValidator(objs ...client.Object) *webhook.BindingValidator {
	c := fake.NewClientBuilder().WithScheme(cp.Scheme).WithObjects(objs...).
		WithIndex(&appstudio.SnapshotEnvironmentBinding{}, indexes.BindingApplicationEnvironment, func(o client.Object) []string {
			b := o.(*appstudio.SnapshotEnvironmentBinding)
			return []string{indexes.ApplicationEnvironmentKey(b.Spec.Application, b.Spec.Environment)}
		}).Build()
	return &webhook.BindingValidator{Reader: c}
}

func TestValidateUpdate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	existing := binding("ns", "first", "app-a", "staging")
	v := newValidator(existing)

	// A change of (application, environment) onto an existing pair is refused.
	old := binding("ns", "second", "app-a", "production")
	moved := binding("ns", "second", "app-a", "staging")
	_, err := v.ValidateUpdate(ctx, old, moved)
	g.Expect(err).To(MatchError(`SnapshotEnvironmentBinding "first" already binds application "app-a" to environment "staging"; update it instead of creating another`))

	// Two bindings that already collide (created while the webhook was not serving) stay
	// updatable, so that they can be promoted or have their finalizers removed.
	dup := binding("ns", "dup", "app-a", "staging")
	changed := dup.DeepCopy()
	changed.Spec.Snapshot = "snapshot-2"
	_, err = v.ValidateUpdate(ctx, dup, changed)
	g.Expect(err).NotTo(HaveOccurred())

	_, err = v.ValidateDelete(ctx, dup)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestValidateCreate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	deleting := binding("ns", "deleting", "app-c", "dev")
	deleting.Finalizers = []string{"example.com/keep"}
	deleting.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
	v := newValidator(
		binding("ns", "b", "app-a", "staging"),
		binding("ns", "a", "app-a", "staging"),
		binding("ns", "slash", "x/y", "z"),
		deleting,
	)

	_, err := v.ValidateCreate(ctx, binding("ns", "new", "app-a", "staging"))
	g.Expect(err).To(MatchError(`SnapshotEnvironmentBindings "a", "b" already bind application "app-a" to environment "staging"; update it instead of creating another`),
		"every duplicate is named, in order")

	// Index keys may coincide for different pairs; the fields decide.
	_, err = v.ValidateCreate(ctx, binding("ns", "new", "x", "y/z"))
	g.Expect(err).NotTo(HaveOccurred())

	// A binding being deleted does not block its replacement.
	_, err = v.ValidateCreate(ctx, binding("ns", "new", "app-c", "dev"))
	g.Expect(err).NotTo(HaveOccurred())

	// Same pair in another namespace.
	_, err = v.ValidateCreate(ctx, binding("other", "new", "app-a", "staging"))
	g.Expect(err).NotTo(HaveOccurred())
}
