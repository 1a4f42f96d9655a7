// Package statuspatch writes the status of a reconciled object with optimistic locking: a
// reconcile of a stale cached copy fails instead of writing (and announcing) a transition
// that already happened. Such a conflict means the cache has not caught up with a write
// (often the controller's own previous status write), not that something failed: the
// reconcile looks again shortly, without the error backoff and its log line.
package statuspatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StaleRetry is how soon a reconcile whose write (a status patch, or any write with an
// optimistic lock) met a newer object runs again, to read it afresh.
const StaleRetry = 200 * time.Millisecond

// Errors of Patch that are not failures.
var (
	// ErrStale wraps the conflict of a status patch made from a stale copy.
	ErrStale = errors.New("the cached copy is older than the object")
	// ErrGone wraps the NotFound of a status patch of an object deleted meanwhile.
	ErrGone = errors.New("the object is gone")
)

// Patch writes obj's status as changed since orig (a copy of obj with the status it was
// read with), if obj has not changed on the server since. A conflict wraps ErrStale, an
// object deleted meanwhile ErrGone: either way nothing was written, so the caller records
// no Event; Result tells what to return.
func Patch(ctx context.Context, c client.Client, obj, orig client.Object) error {
	err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("patching status: %w: %w", ErrGone, err)
	case apierrors.IsConflict(err):
		return fmt.Errorf("patching status: %w: %w", ErrStale, err)
	default:
		return fmt.Errorf("patching status: %w", err)
	}
}

// Result is what a reconcile returns after its status patch: result and its own error
// reconcileErr when the patch succeeded, nothing when the object is gone (there is nothing
// left to retry), a quick requeue without an error when only the patch met a stale copy,
// else both errors (retried with backoff).
func Result(ctx context.Context, result ctrl.Result, reconcileErr, patchErr error) (ctrl.Result, error) {
	switch {
	case patchErr == nil:
		return result, reconcileErr
	case errors.Is(patchErr, ErrGone):
		return ctrl.Result{}, nil
	case reconcileErr == nil && errors.Is(patchErr, ErrStale):
		ctrl.LoggerFrom(ctx).V(1).Info("Status is stale in the cache; retrying")
		return ctrl.Result{RequeueAfter: StaleRetry}, nil
	default:
		// An error requeues with backoff; a RequeueAfter next to it would be ignored.
		return ctrl.Result{}, errors.Join(reconcileErr, patchErr)
	}
}
