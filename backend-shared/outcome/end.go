package outcome

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gitops-service/gitops-service/backend-shared/statuspatch"
)

// Progress is where a reconcile that met no error left the object.
type Progress struct {
	// Ready is True, False or Unknown ("" is True).
	Ready metav1.ConditionStatus
	// Reason and Message explain Ready.
	Reason, Message string
	// Reconciling: the service is still working towards Ready (kstatus InProgress).
	Reconciling bool
	// Stalled: not Ready, and it will not become Ready without a change (kstatus Failed).
	Stalled bool
	// Pending: the generation is not fully processed yet (another component still has to
	// act on it), so observedGeneration stays where it is.
	Pending bool
	// RequeueAfter looks at the object again after this long.
	RequeueAfter time.Duration
}

// Done is the progress of an object that is Ready.
func Done(reason, message string) Progress {
	return Progress{Ready: metav1.ConditionTrue, Reason: reason, Message: message}
}

// Working is the progress of an object the service is still acting on; pending says its
// generation is not fully processed yet.
func Working(reason, message string, pending bool) Progress {
	return Progress{Ready: metav1.ConditionFalse, Reason: reason, Message: message, Reconciling: true, Pending: pending}
}

// Waiting is the progress of an object that is processed but waits for a user (such as a
// manual sync): neither Ready nor in progress nor failed.
func Waiting(reason, message string) Progress {
	return Progress{Ready: metav1.ConditionFalse, Reason: reason, Message: message}
}

// Failed is the progress of an object that is processed and not Ready, and will not be
// without a change (such as a Degraded deployment).
func Failed(reason, message string) Progress {
	return Progress{Ready: metav1.ConditionFalse, Reason: reason, Message: message, Stalled: true}
}

// Summarize turns a reconcile's error, or its progress when it met none, into the
// progress to report and the error to return to the workqueue.
func Summarize(progress Progress, err error) (Progress, error) {
	if err == nil {
		if progress.Ready == "" {
			progress.Ready = metav1.ConditionTrue
		}
		return progress, nil
	}
	e := As(err)
	if e == nil {
		return Progress{Ready: metav1.ConditionFalse, Reason: ReasonInternalError, Message: InternalMessage,
			Reconciling: true, Pending: true}, err
	}
	p := Progress{Ready: metav1.ConditionFalse, Reason: e.Reason, Message: e.Message, RequeueAfter: e.RetryAfter}
	switch e.Kind {
	case User, Stalled:
		p.Stalled = true
	case Transient:
		p.Reconciling, p.Pending = true, true
	default:
		p.Reason, p.Message, p.Reconciling, p.Pending = ReasonInternalError, InternalMessage, true, true
		return p, err
	}
	return p, nil
}

// Apply writes progress into conds: Ready always, Reconciling and Stalled only while True
// (kstatus reads an absent condition as False).
func Apply(conds Conditions, p Progress, now metav1.Time) {
	conds.Set(Condition{Type: TypeReady, Status: string(p.Ready), Reason: p.Reason, Message: p.Message}, now)
	for _, c := range []struct {
		typ string
		on  bool
	}{{TypeReconciling, p.Reconciling}, {TypeStalled, p.Stalled}} {
		if c.on {
			conds.Set(Condition{Type: c.typ, Status: string(metav1.ConditionTrue), Reason: p.Reason, Message: p.Message}, now)
		} else {
			conds.Remove(c.typ)
		}
	}
}

// Ending ends the reconciles of one controller.
type Ending struct {
	Client   client.Client
	Recorder record.EventRecorder
	// OwnEvents: the controller records Events of its own, more specific than Ready's
	// transitions (in Status.Written), so End records none.
	OwnEvents bool
}

// Status is where the reconciled object keeps what End writes.
type Status struct {
	Conditions         Conditions
	ObservedGeneration *int64
	// Written, if set, runs after the status has been written (to record the kind's own
	// Events and metrics of what changed).
	Written func()
}

// End finishes a reconcile of obj, read as start: it reports progress or err in the
// conditions, moves observedGeneration when the generation is processed, patches the
// status if it changed (once, with the optimistic lock), records an Event when it becomes
// Ready, Stalled or fails internally, counts the outcome and the write, and returns what
// the workqueue should do.
func (e Ending) End(ctx context.Context, obj, start client.Object, status Status, progress Progress, err error) (ctrl.Result, error) {
	// An internal error is returned, and so logged by the controller with its backoff.
	p, returned := Summarize(progress, err)
	before, _ := status.Conditions.Get(TypeReady)
	Apply(status.Conditions, p, metav1.Now())
	if !p.Pending && status.ObservedGeneration != nil {
		*status.ObservedGeneration = obj.GetGeneration()
	}
	result := ctrl.Result{RequeueAfter: p.RequeueAfter}
	if returned != nil {
		result = ctrl.Result{}
	}
	kind := kindOf(e.Client.Scheme(), obj)
	outcomes.WithLabelValues(kind, outcomeOf(p, returned != nil)).Inc()
	orig, changed, perr := withStatusOf(obj, start)
	if perr != nil {
		return ctrl.Result{}, perr
	}
	if !changed {
		return result, returned
	}
	if perr := statuspatch.Patch(ctx, e.Client, obj, orig); perr != nil {
		statusWrites.WithLabelValues(kind, patchResult(perr)).Inc()
		return statuspatch.Result(ctx, result, returned, perr)
	}
	statusWrites.WithLabelValues(kind, "written").Inc()
	if status.Written != nil {
		status.Written()
	}
	if e.Recorder != nil && !e.OwnEvents && (before.Status != string(p.Ready) || before.Reason != p.Reason) && eventWorthy(p) {
		e.Recorder.Event(obj, eventType(p), p.Reason, eventMessage(p))
	}
	return result, returned
}

// eventWorthy: becoming Ready, stalling or failing internally is news; the steps of work in
// progress are in the conditions and would only cost Event writes.
func eventWorthy(p Progress) bool {
	return p.Ready == metav1.ConditionTrue || p.Stalled || p.Reason == ReasonInternalError
}

func eventType(p Progress) string {
	if p.Stalled || p.Reason == ReasonInternalError {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

func eventMessage(p Progress) string {
	if p.Message != "" {
		return p.Message
	}
	return fmt.Sprintf("Ready is %s: %s", p.Ready, p.Reason)
}

func kindOf(scheme *runtime.Scheme, obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return "unknown"
	}
	return gvk.Kind
}

func patchResult(err error) string {
	switch {
	case errors.Is(err, statuspatch.ErrStale):
		return "stale"
	case errors.Is(err, statuspatch.ErrGone):
		return "gone"
	default:
		return "failed"
	}
}

// withStatusOf returns a copy of obj with the status of start (what the status patch is
// computed against: obj's current metadata, so the optimistic lock uses its
// resourceVersion), and whether obj's status differs from start's. Every kind keeps its
// status in a field named Status.
func withStatusOf(obj, start client.Object) (client.Object, bool, error) {
	now, then := statusOf(obj), statusOf(start)
	if !now.IsValid() || !then.IsValid() {
		return nil, false, fmt.Errorf("%T has no Status field", obj)
	}
	if equality.Semantic.DeepEqual(now.Interface(), then.Interface()) {
		return nil, false, nil
	}
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil, false, fmt.Errorf("a copy of %T is not a client.Object", obj)
	}
	statusOf(orig).Set(then)
	return orig, true, nil
}

func statusOf(obj client.Object) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName("Status")
}
