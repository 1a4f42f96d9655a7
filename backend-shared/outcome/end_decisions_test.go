package outcome

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// endHarness ends reconciles of one fresh ManagedEnvironment, as its controller would: it
// reads the object, calls End and reads back what was stored.
type endHarness struct {
	t       *testing.T
	ending  Ending
	rec     *record.FakeRecorder
	key     client.ObjectKey
	written int
}

func newEndHarness(t *testing.T, ownEvents bool) *endHarness {
	t.Helper()
	rec := record.NewFakeRecorder(10)
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: cp.NewNamespace(t, "outcome-end-")},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://example.com", ClusterCredentialsSecret: "s"},
	}
	if err := cp.Client.Create(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	return &endHarness{t: t, ending: Ending{Client: cp.Client, Recorder: rec, OwnEvents: ownEvents}, rec: rec, key: client.ObjectKeyFromObject(env)}
}

func (h *endHarness) get() *v1.GitOpsDeploymentManagedEnvironment {
	h.t.Helper()
	obj := &v1.GitOpsDeploymentManagedEnvironment{}
	if err := cp.Client.Get(context.Background(), h.key, obj); err != nil {
		h.t.Fatal(err)
	}
	return obj
}

// ended is what one End returned, and the object as stored after it.
type ended struct {
	res    ctrl.Result
	err    error
	stored *v1.GitOpsDeploymentManagedEnvironment
}

func (h *endHarness) end(p Progress, err error) ended {
	h.t.Helper()
	obj := h.get()
	start := obj.DeepCopy()
	res, rerr := h.ending.End(context.Background(), obj, start, Status{
		Conditions:         MetaConditions{List: &obj.Status.Conditions, Generation: obj.Generation},
		ObservedGeneration: &obj.Status.ObservedGeneration,
		Written:            func() { h.written++ },
	}, p, err)
	return ended{res: res, err: rerr, stored: h.get()}
}

// events drains the recorder.
func (h *endHarness) events() []string { return testenv.Recorded(h.rec) }

func conditionTypes(list []metav1.Condition) map[string]string {
	out := map[string]string{}
	for _, c := range list {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func TestEndStalledIsAWarningAndObservesTheGeneration(t *testing.T) {
	h := newEndHarness(t, false)
	out := h.end(Failed("Degraded", "pod crashes"), nil)
	res, err, got := out.res, out.err, out.stored
	if err != nil || res != (ctrl.Result{}) {
		t.Fatalf("End = %+v, %v", res, err)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, want %d: a failed object is fully processed", got.Status.ObservedGeneration, got.Generation)
	}
	if c := conditionTypes(got.Status.Conditions); len(c) != 2 || c[TypeReady] != "False/Degraded" || c[TypeStalled] != "True/Degraded" {
		t.Errorf("conditions %v", c)
	}
	if e := h.events(); len(e) != 1 || e[0] != "Warning Degraded pod crashes" {
		t.Errorf("events %q, want one warning", e)
	}
	// Stalled again for the same reason is no news.
	h.end(Failed("Degraded", "pod crashes again"), nil)
	if e := h.events(); len(e) != 0 {
		t.Errorf("the same reason again recorded %q", e)
	}
}

func TestEndWorkInProgressRecordsNoEvent(t *testing.T) {
	h := newEndHarness(t, false)
	got := h.end(Working("Connecting", "connecting", false), nil).stored
	// Not pending: the generation is processed even though work goes on.
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, want %d", got.Status.ObservedGeneration, got.Generation)
	}
	if c := conditionTypes(got.Status.Conditions); c[TypeReconciling] != "True/Connecting" {
		t.Errorf("conditions %v", c)
	}
	h.end(Waiting("WaitingForSync", "waiting"), nil)
	if e := h.events(); len(e) != 0 {
		t.Errorf("work in progress and waiting recorded %q", e)
	}
	if h.written != 2 {
		t.Errorf("Written ran %d times, want once per status write (2)", h.written)
	}
}

func TestEndTransientErrorRetriesWithoutBackoffAndKeepsTheGenerationPending(t *testing.T) {
	h := newEndHarness(t, false)
	out := h.end(Done("Connected", ""), TransientError("AgentBusy", 3*time.Second, "the agent is busy"))
	res, err, got := out.res, out.err, out.stored
	if err != nil || res.RequeueAfter != 3*time.Second {
		t.Fatalf("End = %+v, %v; want a requeue after 3s and no error", res, err)
	}
	if got.Status.ObservedGeneration != 0 {
		t.Errorf("observedGeneration moved to %d on a transient error", got.Status.ObservedGeneration)
	}
	if c := conditionTypes(got.Status.Conditions); c[TypeReady] != "False/AgentBusy" || c[TypeReconciling] != "True/AgentBusy" {
		t.Errorf("conditions %v", c)
	}
}

func TestEndStalledErrorIsShownAndLookedAtLater(t *testing.T) {
	h := newEndHarness(t, false)
	out := h.end(Progress{}, StalledError("SecretNotFound", "Secret s not found"))
	res, err, got := out.res, out.err, out.stored
	if err != nil || res.RequeueAfter != StalledRetry {
		t.Fatalf("End = %+v, %v; want a requeue after %s and no error", res, err, StalledRetry)
	}
	if len(got.Status.Conditions) == 0 || got.Status.Conditions[0].Message != "Secret s not found" {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}
	if e := h.events(); len(e) != 1 || e[0] != "Warning SecretNotFound Secret s not found" {
		t.Errorf("events %q", e)
	}
}

func TestEndInternalErrorGoesToTheWorkqueueBackoff(t *testing.T) {
	h := newEndHarness(t, false)
	boom := errors.New("connection reset")
	// A requeue asked for by the reconcile would be ignored beside an error: none is returned.
	out := h.end(Progress{RequeueAfter: time.Minute}, boom)
	res, err, got := out.res, out.err, out.stored
	if !errors.Is(err, boom) || res != (ctrl.Result{}) {
		t.Fatalf("End = %+v, %v; want the error and an empty result", res, err)
	}
	if got.Status.ObservedGeneration != 0 {
		t.Errorf("observedGeneration moved to %d on an internal error", got.Status.ObservedGeneration)
	}
	if e := h.events(); len(e) != 1 || e[0] != "Warning InternalError "+InternalMessage {
		t.Errorf("events %q", e)
	}
}

func TestEndReadyAgainForAnotherReasonIsNews(t *testing.T) {
	h := newEndHarness(t, false)
	h.end(Done("Connected", "connected"), nil)
	h.end(Done("Reconnected", "connected again"), nil)
	if e := h.events(); len(e) != 2 || e[1] != "Normal Reconnected connected again" {
		t.Errorf("events %q", e)
	}
}

func TestEndWithOwnEventsRecordsNoneButRunsWritten(t *testing.T) {
	h := newEndHarness(t, true)
	h.end(Done("Connected", "connected"), nil)
	h.end(Failed("Broken", "broken"), nil)
	if e := h.events(); len(e) != 0 {
		t.Errorf("a controller with its own events got %q from End", e)
	}
	if h.written != 2 {
		t.Errorf("Written ran %d times, want 2", h.written)
	}
	// Nothing changed: nothing written, so Written does not run.
	h.end(Failed("Broken", "broken"), nil)
	if h.written != 2 {
		t.Errorf("Written ran for an unchanged status")
	}
}

func TestEndOfADeletedObjectIsNotRetried(t *testing.T) {
	h := newEndHarness(t, false)
	obj := h.get()
	start := obj.DeepCopy()
	if err := cp.Client.Delete(context.Background(), obj.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	called := false
	res, err := h.ending.End(context.Background(), obj, start, Status{
		Conditions: MetaConditions{List: &obj.Status.Conditions}, Written: func() { called = true },
	}, Done("Connected", "connected"), nil)
	if err != nil || res != (ctrl.Result{}) {
		t.Errorf("End = %+v, %v; want nothing to retry", res, err)
	}
	if called || len(h.events()) != 0 {
		t.Error("a status that was never written ran Written or recorded an Event")
	}
}
