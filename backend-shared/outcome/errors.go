// Package outcome ends every reconcile the same way: one typed error family says what kind
// of failure happened, and End turns it (or the reconcile's own view of its progress) into
// the kstatus conditions Ready, Reconciling and Stalled, moves observedGeneration when a
// generation has been fully processed, writes the status once with the optimistic lock,
// records an Event when Ready changes, and tells the workqueue what to do next.
package outcome

import (
	"errors"
	"fmt"
	"time"
)

// Kind is what a failed reconcile means for the object and for the workqueue.
type Kind int

const (
	// Internal failures (any error that is not an *Error) are logged, shown as a generic
	// message and retried with the workqueue's backoff.
	Internal Kind = iota
	// User failures come from the object's own spec: its message is shown as is, the
	// object is Stalled, and nothing is retried until the object changes.
	User
	// Stalled failures need something outside the object to change (a referenced object,
	// a cluster, a repository): shown as is, Stalled, and looked at again after RetryAfter
	// in case the change cannot be watched.
	Stalled
	// Transient failures are expected to pass on their own (waiting for another
	// component): shown as is, Reconciling, retried after RetryAfter.
	Transient
)

// Error is a reconcile failure a user is told about: its Reason and Message go into the
// Ready condition. Err, the cause, is only logged.
type Error struct {
	Kind       Kind
	Reason     string
	Message    string
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Default retry intervals.
const (
	StalledRetry   = 5 * time.Minute
	TransientRetry = 10 * time.Second
)

// UserError is a mistake in the object's spec.
func UserError(reason, format string, args ...any) error {
	return &Error{Kind: User, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// StalledError is a problem outside the object that stops it, looked at again after
// StalledRetry.
func StalledError(reason, format string, args ...any) error {
	return &Error{Kind: Stalled, Reason: reason, Message: fmt.Sprintf(format, args...), RetryAfter: StalledRetry}
}

// TransientError is a wait expected to end on its own, retried after retryAfter.
func TransientError(reason string, retryAfter time.Duration, format string, args ...any) error {
	return &Error{Kind: Transient, Reason: reason, Message: fmt.Sprintf(format, args...), RetryAfter: retryAfter}
}

// As returns the *Error in err's chain, or nil for an internal error.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// IsUser reports whether err is a User or Stalled failure: one that the user is shown and
// that is not retried with backoff.
func IsUser(err error) bool {
	e := As(err)
	return e != nil && (e.Kind == User || e.Kind == Stalled)
}

// InternalMessage is what users see of an internal error.
const InternalMessage = "An internal error occurred while reconciling this resource; the service retries automatically."

// ReasonInternalError is the Ready reason of an internal error.
const ReasonInternalError = "InternalError"
