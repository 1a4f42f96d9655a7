package statuspatch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestPatchTellsAStaleCopyFromAFailure(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(pod).Build()

	cached := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cached); err != nil {
		t.Fatal(err)
	}
	fresh := cached.DeepCopy()
	fresh.Labels = map[string]string{"changed": "elsewhere"}
	if err := c.Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}

	orig := cached.DeepCopy()
	cached.Status.Message = "from a stale copy"
	err := Patch(ctx, c, cached, orig)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("patching from a stale copy: %v, want ErrStale", err)
	}
	stored := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.Message != "" {
		t.Errorf("the stale copy's status was written: %q", stored.Status.Message)
	}

	orig = stored.DeepCopy()
	stored.Status.Message = "from the current copy"
	if err := Patch(ctx, c, stored, orig); err != nil {
		t.Fatalf("patching from the current copy: %v", err)
	}
	if err := c.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	orig = stored.DeepCopy()
	stored.Status.Message = "after deletion"
	if err := Patch(ctx, c, stored, orig); !errors.Is(err, ErrGone) {
		t.Errorf("patching a deleted object: %v, want ErrGone", err)
	}
}

func TestResult(t *testing.T) {
	ctx := context.Background()
	stale := Patch(ctx, conflicting{fake.NewClientBuilder().Build()}, &corev1.Pod{}, &corev1.Pod{})
	if !errors.Is(stale, ErrStale) {
		t.Fatalf("a conflict gave %v", stale)
	}
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

// conflicting answers every status patch with a conflict.
type conflicting struct{ client.Client }

func (c conflicting) Status() client.SubResourceWriter { return conflictingStatus{} }

type conflictingStatus struct{ client.SubResourceWriter }

func (conflictingStatus) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return apiConflict
}

var apiConflict = apierrors.NewConflict(corev1.Resource("pods"), "p", errors.New("the object has been modified"))
