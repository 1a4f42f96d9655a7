// Package errcond maintains the "ErrorOccurred" metav1.Condition that the AppStudio resources
// (Environment, SnapshotEnvironmentBinding) report user-fixable problems with, and turns a
// reconcile error into that condition (user errors verbatim, internal errors generically).
package errcond

import (
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/backend-shared/conditions"
)

// Type is the condition type.
const Type = "ErrorOccurred"

// Generic reasons.
const (
	ReasonErrorOccurred = "ErrorOccurred"
	ReasonResolved      = "ErrorOccurredResolved"
)

// Error is a user-fixable problem with a condition reason.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

// New returns a user error with reason.
func New(reason, message string) error { return &Error{Reason: reason, Message: message} }

// Apply records err in list: a user error (an *Error or a conditions.UserError) as
// ErrorOccurred=True with its reason and message, an internal error as ErrorOccurred=True
// with a generic message, and nil as the resolution of an earlier error (absent stays absent).
// It returns whether the condition's status or reason changed (a transition worth an Event).
func Apply(list *[]metav1.Condition, generation int64, err error) bool {
	before := meta.FindStatusCondition(*list, Type)
	var prevStatus metav1.ConditionStatus
	var prevReason string
	if before != nil {
		prevStatus, prevReason = before.Status, before.Reason
	}
	c := metav1.Condition{Type: Type, ObservedGeneration: generation}
	var ue *Error
	switch {
	case err == nil:
		if before == nil || before.Status == metav1.ConditionFalse {
			if before != nil && before.ObservedGeneration != generation {
				before.ObservedGeneration = generation
			}
			return false
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonResolved, ""
	case errors.As(err, &ue):
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ue.Reason, ue.Message
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonErrorOccurred
		if msg, ok := conditions.UserMessage(err); ok {
			c.Message = msg
		} else {
			c.Message = conditions.InternalErrorMessage
		}
	}
	meta.SetStatusCondition(list, c)
	return prevStatus != c.Status || prevReason != c.Reason
}

// IsUser reports whether err is a user error (shown as is, not retried with backoff).
func IsUser(err error) bool {
	var ue *Error
	if errors.As(err, &ue) {
		return true
	}
	_, ok := conditions.UserMessage(err)
	return ok
}
