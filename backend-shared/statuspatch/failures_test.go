package statuspatch

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestPatchOfAStatusTheServerRefusesIsAFailure(t *testing.T) {
	ctx := context.Background()
	c := cp.Client
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: cp.NewNamespace(t, "statuspatch-")},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	orig := svc.DeepCopy()
	// The API server validates a load balancer's ingress IP.
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "not-an-ip"}}
	err := Patch(ctx, c, svc, orig)
	if err == nil {
		t.Fatal("an invalid status was written")
	}
	// Neither stale nor gone: a real failure, retried with backoff.
	if errors.Is(err, ErrStale) || errors.Is(err, ErrGone) {
		t.Errorf("error %v counts as stale or gone", err)
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("error %v does not keep the API server's Invalid", err)
	}
	res, rerr := Result(ctx, ctrl.Result{RequeueAfter: 1}, nil, err)
	if res != (ctrl.Result{}) || !errors.Is(rerr, err) {
		t.Errorf("Result = %+v, %v; want the error and no requeue", res, rerr)
	}
}
