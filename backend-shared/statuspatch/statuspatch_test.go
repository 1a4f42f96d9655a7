package statuspatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true}, &cp, m.Run))
}

func TestPatchTellsAStaleCopyFromAFailure(t *testing.T) {
	ctx := context.Background()
	c := cp.Client
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: cp.NewNamespace(t, "statuspatch-")},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	withIP := func(s *corev1.Service, ip string) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	}

	cached := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(svc), cached); err != nil {
		t.Fatal(err)
	}
	fresh := cached.DeepCopy()
	fresh.Labels = map[string]string{"changed": "elsewhere"}
	if err := c.Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}

	orig := cached.DeepCopy()
	withIP(cached, "10.0.0.1") // from a stale copy
	err := Patch(ctx, c, cached, orig)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("patching from a stale copy: %v, want ErrStale", err)
	}
	stored := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(svc), stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("the stale copy's status was written: %+v", stored.Status.LoadBalancer)
	}

	orig = stored.DeepCopy()
	withIP(stored, "10.0.0.2") // from the current copy
	if err := Patch(ctx, c, stored, orig); err != nil {
		t.Fatalf("patching from the current copy: %v", err)
	}
	if err := c.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	orig = stored.DeepCopy()
	withIP(stored, "10.0.0.3") // after deletion
	if err := Patch(ctx, c, stored, orig); !errors.Is(err, ErrGone) {
		t.Errorf("patching a deleted object: %v, want ErrGone", err)
	}
}

func TestResult(t *testing.T) {
	ctx := context.Background()
	stale := fmt.Errorf("patching status: %w", ErrStale)
	failed, reconcileErr := errors.New("patching status: boom"), errors.New("reconcile failed")
	gone := fmt.Errorf("patching status: %w", ErrGone)
	later := ctrl.Result{RequeueAfter: 5}
	for name, tc := range map[string]struct {
		reconcileErr, patchErr error
		want                   ctrl.Result
		wantErrs               []error
	}{
		"patched":                {nil, nil, later, nil},
		"patched, reconcile err": {reconcileErr, nil, later, []error{reconcileErr}},
		"stale":                  {nil, stale, ctrl.Result{RequeueAfter: StaleRetry}, nil},
		"stale, reconcile err":   {reconcileErr, stale, ctrl.Result{}, []error{reconcileErr, ErrStale}},
		"gone":                   {nil, gone, ctrl.Result{}, nil},
		"gone, reconcile err":    {reconcileErr, gone, ctrl.Result{}, nil},
		"patch failed":           {nil, failed, ctrl.Result{}, []error{failed}},
		"both failed":            {reconcileErr, failed, ctrl.Result{}, []error{reconcileErr, failed}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Result(ctx, later, tc.reconcileErr, tc.patchErr)
			if got != tc.want {
				t.Errorf("result %+v, want %+v", got, tc.want)
			}
			if (err == nil) != (len(tc.wantErrs) == 0) {
				t.Fatalf("error %v, want %v", err, tc.wantErrs)
			}
			for _, want := range tc.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not wrap %v", err, want)
				}
			}
		})
	}
}
