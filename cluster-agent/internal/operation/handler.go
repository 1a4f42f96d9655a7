package operation

import (
	"context"
	"time"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// Handler makes Argo CD match the database for one resource type. It is level-based: it
// reads the row (or its absence) and converges Argo CD's objects, whatever the operations
// say, so that any number of pending operations on a resource are carried out at once.
type Handler interface {
	Handle(ctx context.Context, t Target) (Outcome, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t Target) (Outcome, error)

// Handle implements Handler.
func (f HandlerFunc) Handle(ctx context.Context, t Target) (Outcome, error) { return f(ctx, t) }

// Target is the resource whose operations are being carried out.
type Target struct {
	// ResourceID is the row's id (the tenant's id for an AppProject).
	ResourceID string
	// TenantID is the owner tenant of the newest pending operation; empty for system
	// operations and once the tenant was deleted (and with it the rows it owned).
	TenantID string
}

// Outcome is what a Handler achieved. A returned error is an internal error: it is
// logged, the operations stay In_Progress and the workqueue retries with backoff.
type Outcome struct {
	// State is Completed or Failed when done; In_Progress while waiting for Argo CD.
	State db.OperationState
	// Message becomes the operations' human-readable state. It is shown to users: it
	// must never contain credentials.
	Message string
	// RequeueAfter is when to look again while waiting.
	RequeueAfter time.Duration
}

// Completed finishes the operations successfully.
func Completed(message string) Outcome {
	return Outcome{State: db.OperationCompleted, Message: message}
}

// Failed finishes the operations with an error a user can act on.
func Failed(message string) Outcome { return Outcome{State: db.OperationFailed, Message: message} }

// Waiting keeps the operations In_Progress and looks again after the given interval.
func Waiting(message string, after time.Duration) Outcome {
	return Outcome{State: db.OperationInProgress, Message: message, RequeueAfter: after}
}

// Done reports whether the operations are finished.
func (o Outcome) Done() bool { return o.State.Finished() }
