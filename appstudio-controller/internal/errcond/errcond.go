// Package errcond maintains the "ErrorOccurred" metav1.Condition that api.md documents for
// the AppStudio resources (Environment, SnapshotEnvironmentBinding): a reconcile's outcome
// error is shown with its reason and message, an internal error with a generic message, and
// a reconcile without error resolves an earlier error.
package errcond

import (
	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// Type is the condition type.
const Type = "ErrorOccurred"

// Shown returns the reason and message users are shown of err: those of an outcome error
// (user, stalled or transient), or a generic pair for an internal error, whose details
// only go to the log.
func Shown(err error) (reason, message string) {
	if e := outcome.As(err); e != nil && e.Kind != outcome.Internal {
		return e.Reason, e.Message
	}
	return appstudio.ReasonErrorOccurred, outcome.InternalMessage
}

// Apply records err in list: ErrorOccurred=True with the reason and message Shown gives, or,
// for nil, the resolution of an earlier error (absent stays absent). It returns whether the
// condition's status or reason changed (a transition worth an Event).
func Apply(list *[]metav1.Condition, generation int64, err error) bool {
	before := meta.FindStatusCondition(*list, Type)
	var prevStatus metav1.ConditionStatus
	var prevReason string
	if before != nil {
		prevStatus, prevReason = before.Status, before.Reason
	}
	c := metav1.Condition{Type: Type, ObservedGeneration: generation}
	if err == nil {
		if before == nil || before.Status == metav1.ConditionFalse {
			if before != nil && before.ObservedGeneration != generation {
				before.ObservedGeneration = generation
			}
			return false
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, appstudio.ReasonErrorOccurredResolved, ""
	} else {
		c.Status = metav1.ConditionTrue
		c.Reason, c.Message = Shown(err)
	}
	meta.SetStatusCondition(list, c)
	return prevStatus != c.Status || prevReason != c.Reason
}
