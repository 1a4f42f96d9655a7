package errcond

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// A binding's reconcile can meet several errors at once (one per component); the condition
// shows the first outcome error among them, never an internal error's details.
func TestShownOfJoinedErrors(t *testing.T) {
	user := outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName, "1 of 2 components cannot be deployed")
	label := outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonInvalidLabel, "1 labels of the binding cannot be copied")
	boom := errors.New("conflict writing gitopsdeployment")
	tests := []struct {
		name                string
		err                 error
		wantReason, wantMsg string
	}{
		{"two user errors: the first", errors.Join(user, label), appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName, "1 of 2 components cannot be deployed"},
		{"internal first, user second: the user error", errors.Join(boom, label), appstudio.SnapshotEnvironmentBindingReasonInvalidLabel, "1 labels of the binding cannot be copied"},
		{"internal only", errors.Join(boom, errors.New("other")), appstudio.ReasonErrorOccurred, outcome.InternalMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			reason, msg := Shown(tt.err)
			g.Expect(reason).To(Equal(tt.wantReason))
			g.Expect(msg).To(Equal(tt.wantMsg))
		})
	}
}

func TestApplyTransitions(t *testing.T) {
	userErr := outcome.UserError("InvalidEnvironment", "bad")
	waiting := outcome.TransientError("DeploymentTargetClaimNotBound", time.Minute, "not bound yet")
	raised := metav1.Condition{Type: Type, Status: metav1.ConditionTrue, Reason: "InvalidEnvironment", Message: "bad", ObservedGeneration: 1}
	resolved := metav1.Condition{Type: Type, Status: metav1.ConditionFalse, Reason: appstudio.ReasonErrorOccurredResolved, ObservedGeneration: 1}
	tests := []struct {
		name        string
		before      *metav1.Condition
		generation  int64
		err         error
		wantChanged bool
		want        *metav1.Condition // nil: no ErrorOccurred condition
	}{
		{"nothing to report", nil, 1, nil, false, nil},
		{"raised", nil, 1, userErr, true, &raised},
		// A wait is shown too (api.md: the condition says why the resource is not processed).
		{"raised by a wait", nil, 1, waiting, true,
			&metav1.Condition{Type: Type, Status: metav1.ConditionTrue, Reason: "DeploymentTargetClaimNotBound", Message: "not bound yet", ObservedGeneration: 1}},
		{"the same error at a new generation", &raised, 2, userErr, false,
			&metav1.Condition{Type: Type, Status: metav1.ConditionTrue, Reason: "InvalidEnvironment", Message: "bad", ObservedGeneration: 2}},
		{"another reason", &raised, 1, waiting, true,
			&metav1.Condition{Type: Type, Status: metav1.ConditionTrue, Reason: "DeploymentTargetClaimNotBound", Message: "not bound yet", ObservedGeneration: 1}},
		{"resolved", &raised, 2, nil, true,
			&metav1.Condition{Type: Type, Status: metav1.ConditionFalse, Reason: appstudio.ReasonErrorOccurredResolved, ObservedGeneration: 2}},
		// Staying resolved is no Event, but the condition follows the generation.
		{"still resolved, new generation", &resolved, 3, nil, false,
			&metav1.Condition{Type: Type, Status: metav1.ConditionFalse, Reason: appstudio.ReasonErrorOccurredResolved, ObservedGeneration: 3}},
		{"raised again", &resolved, 2, userErr, true,
			&metav1.Condition{Type: Type, Status: metav1.ConditionTrue, Reason: "InvalidEnvironment", Message: "bad", ObservedGeneration: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "R", Message: "m"}
			list := []metav1.Condition{ready}
			if tt.before != nil {
				list = append(list, *tt.before)
			}
			g.Expect(Apply(&list, tt.generation, tt.err)).To(Equal(tt.wantChanged))
			got := meta.FindStatusCondition(list, Type)
			if tt.want == nil {
				g.Expect(got).To(BeNil())
			} else {
				g.Expect(got).NotTo(BeNil())
				g.Expect(got.Status).To(Equal(tt.want.Status))
				g.Expect(got.Reason).To(Equal(tt.want.Reason))
				g.Expect(got.Message).To(Equal(tt.want.Message))
				g.Expect(got.ObservedGeneration).To(Equal(tt.want.ObservedGeneration))
			}
			// The other conditions are not touched.
			g.Expect(list[0]).To(Equal(ready))
		})
	}
}
