package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	toolchain "github.com/gitops-service/gitops-service/api/toolchain/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/provisioner"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	var err error
	if cp, err = testenv.StartControlPlane(testenv.Options{ControllerManager: true, WithoutArgoCDCRDs: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The Developer Sandbox's SpaceRequest CRD is not a service CRD (not installed by
	// manifests/base): load it, and its type, for the devsandbox provisioner's tests; and a
	// stand-in for the Application Service's Application CRD (testdata/crd) for the
	// binding-application-gc tests.
	if err := installToolchain(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = cp.Stop()
		os.Exit(1)
	}
	if err := installDeployerRole(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = cp.Stop()
		os.Exit(1)
	}
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	_ = cp.Stop()
	os.Exit(code)
}

// installToolchain installs manifests/crd/toolchain and testdata/crd, and registers the
// toolchain types in the shared scheme (before any manager runs, so that app.Options.Setup
// only reads the scheme). Applications have no Go type: they are read as metadata or
// unstructured.
func installToolchain() error {
	if err := toolchain.AddToScheme(cp.Scheme); err != nil {
		return err
	}
	_, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join("..", "..", "manifests", "crd", "toolchain"), filepath.Join("testdata", "crd")}, ErrorIfPathMissing: true})
	if err != nil {
		return fmt.Errorf("installing the toolchain and testdata CRDs: %w", err)
	}
	return nil
}

// installDeployerRole creates the ClusterRole that the namespace provisioner grants, as
// manifests/components/namespace-provisioner/rbac.yaml installs it.
func installDeployerRole() error {
	data, err := os.ReadFile(filepath.Join("..", "..", "manifests", "components", "namespace-provisioner", "rbac.yaml"))
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		role := &rbacv1.ClusterRole{}
		if err := dec.Decode(role); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("manifests/components/namespace-provisioner/rbac.yaml has no ClusterRole %s", provisioner.DeployerRole)
			}
			return err
		}
		if role.Kind == "ClusterRole" && role.Name == provisioner.DeployerRole {
			return cp.Client.Create(context.Background(), role)
		}
	}
}

const (
	eventually = 30 * time.Second
	poll       = 100 * time.Millisecond
)

type harness struct {
	t   *testing.T
	g   Gomega
	ctx context.Context
	ns  string
	// other is a second tenant's namespace, which the controller also serves.
	other string
	c     client.Client
}

// start runs the appstudio-controller in-process, its cache restricted to two fresh
// namespaces: the tenant's (ns) and another tenant's (other).
func start(t *testing.T, mutate ...func(*app.Options)) *harness {
	t.Helper()
	h := &harness{t: t, g: NewWithT(t), c: cp.Client, ctx: context.Background()}
	h.ns = cp.NewNamespace(t, "tenant-")
	h.other = cp.NewNamespace(t, "other-")
	opts := &app.Options{MaxConcurrentReconciles: 2, PromotionTimeout: time.Minute}
	for _, m := range mutate {
		m(opts)
	}
	cp.RunManager(t, []string{h.ns, h.other}, opts.Setup, app.ManagerOptions)
	return h
}

func (h *harness) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: h.ns, Name: name}
}

func (h *harness) create(o client.Object) {
	h.t.Helper()
	if o.GetNamespace() == "" {
		o.SetNamespace(h.ns)
	}
	h.g.Expect(h.c.Create(h.ctx, o)).To(Succeed())
}

// get returns a function for Eventually that reads name into o.
func (h *harness) get(name string, o client.Object) func() error {
	return func() error { return h.c.Get(h.ctx, h.key(name), o) }
}

func (h *harness) secret(name string, typ corev1.SecretType) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ,
		Data: map[string][]byte{"kubeconfig": []byte("apiVersion: v1\nkind: Config\n")}}
	h.create(s)
	return s
}

func (h *harness) gone(o client.Object) func() bool {
	return func() bool {
		err := h.c.Get(h.ctx, client.ObjectKeyFromObject(o), o)
		return client.IgnoreNotFound(err) == nil && err != nil
	}
}

// ready returns a function for Eventually that reads the object name into o and sums up its
// kstatus conditions: "<Ready status>/<Ready reason>", then "+Reconciling" and "+Stalled"
// for those that are True. It also checks that the kstatus library reads the object as the
// conditions mean (see kstatusAgrees), and says so instead when it does not.
func (h *harness) ready(name string, o client.Object) func() string {
	return func() string {
		if err := h.c.Get(h.ctx, h.key(name), o); err != nil {
			return err.Error()
		}
		conds := kstatusConditions(o)
		r := meta.FindStatusCondition(conds, "Ready")
		if r == nil {
			return "no Ready condition"
		}
		out := string(r.Status) + "/" + r.Reason
		for _, typ := range []string{"Reconciling", "Stalled"} {
			if meta.IsStatusConditionTrue(conds, typ) {
				out += "+" + typ
			}
		}
		if problem := kstatusAgrees(o, conds); problem != "" {
			return out + ": " + problem
		}
		return out
	}
}

// kstatusAgrees computes sigs.k8s.io/cli-utils kstatus on o as read from the API server and
// returns "" when it is what the conditions mean: Failed when Stalled, InProgress while
// Reconciling, Ready=False or a generation not yet observed, Current when Ready.
func kstatusAgrees(o client.Object, conds []metav1.Condition) string {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err.Error()
	}
	obj := &unstructured.Unstructured{Object: u}
	if obj.GetKind() == "" {
		gvk, err := cp.Client.GroupVersionKindFor(o)
		if err != nil {
			return err.Error()
		}
		obj.SetGroupVersionKind(gvk)
	}
	res, err := status.Compute(obj)
	if err != nil {
		return "kstatus: " + err.Error()
	}
	// A kind without status.observedGeneration (DeploymentTarget, DeploymentTargetClaim) has
	// nothing to lag.
	observed, found, _ := unstructured.NestedInt64(u, "status", "observedGeneration")
	if !found {
		observed = o.GetGeneration()
	}
	want := status.CurrentStatus
	switch {
	case meta.IsStatusConditionTrue(conds, "Stalled") && observed >= o.GetGeneration():
		want = status.FailedStatus
	case meta.IsStatusConditionTrue(conds, "Stalled"):
		want = status.InProgressStatus
	case meta.IsStatusConditionTrue(conds, "Reconciling"), !meta.IsStatusConditionTrue(conds, "Ready"), observed < o.GetGeneration():
		want = status.InProgressStatus
	}
	if res.Status != want {
		return fmt.Sprintf("kstatus says %s (%s), want %s", res.Status, res.Message, want)
	}
	return ""
}

// kstatusConditions returns the list that holds o's Ready, Reconciling and Stalled.
func kstatusConditions(o client.Object) []metav1.Condition {
	switch v := o.(type) {
	case *appstudio.Environment:
		return v.Status.Conditions
	case *appstudio.SnapshotEnvironmentBinding:
		return v.Status.Conditions
	case *appstudio.DeploymentTarget:
		return v.Status.Conditions
	case *appstudio.DeploymentTargetClaim:
		return v.Status.Conditions
	case *appstudio.PromotionRun:
		var out []metav1.Condition
		for _, c := range v.Status.Conditions {
			out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: string(c.Reason), Message: c.Message})
		}
		return out
	}
	panic(fmt.Sprintf("no kstatus conditions on %T", o))
}
