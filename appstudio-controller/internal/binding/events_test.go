package binding

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// recordError records the change of the ErrorOccurred condition (api.md's bindingConditions).
func TestRecordErrorOfABinding(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"resolved", nil, []string{"Normal ErrorOccurredResolved The binding's earlier error is resolved"}},
		{"a user error", outcome.StalledError(appstudio.SnapshotEnvironmentBindingReasonEnvironmentNotFound, `Environment "staging" does not exist in namespace "tenant"`),
			[]string{`Warning EnvironmentNotFound Environment "staging" does not exist in namespace "tenant"`}},
		{"a transient error", outcome.TransientError(appstudio.SnapshotEnvironmentBindingReasonWaitingForComponentStatus, ComponentStatusRetry, "waiting"),
			[]string{"Warning WaitingForComponentStatus waiting"}},
		// The details of an internal error go to the log, not to the tenant.
		{"an internal error", errors.New(`gitopsdeployments.managed-gitops.redhat.com "x" is forbidden`),
			[]string{"Warning ErrorOccurred " + outcome.InternalMessage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			(&Reconciler{Recorder: rec}).recordError(newBinding("b", "app", "staging"), tt.err)
			NewWithT(t).Expect(testenv.Recorded(rec)).To(Equal(tt.want))
		})
	}
}

func TestRecordDeployedOnceEveryComponentIsDeployed(t *testing.T) {
	all := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: appstudio.ComponentDeploymentConditionAllComponentsDeployed, Status: status, Reason: reason, Message: msg}}
	}
	synced := all(metav1.ConditionTrue, appstudio.ComponentDeploymentReasonCommitsSynced, "2 of 2 components deployed")
	unsynced := all(metav1.ConditionFalse, appstudio.ComponentDeploymentReasonCommitsUnsynced, "1 of 2 components deployed")
	tests := []struct {
		name          string
		before, after []metav1.Condition
		want          []string
	}{
		{"became deployed", unsynced, synced, []string{"Normal CommitsSynced 2 of 2 components deployed"}},
		{"deployed from the start", nil, synced, []string{"Normal CommitsSynced 2 of 2 components deployed"}},
		{"already deployed", synced, synced, nil},
		{"not deployed yet", nil, unsynced, nil},
		// Losing the deployed state is shown by the condition and Ready, not by this Event.
		{"no longer deployed", synced, unsynced, nil},
		{"no condition", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			start, b := newBinding("b", "app", "staging"), newBinding("b", "app", "staging")
			start.Status.ComponentDeploymentConditions, b.Status.ComponentDeploymentConditions = tt.before, tt.after
			(&Reconciler{Recorder: rec}).recordDeployed(b, start)
			NewWithT(t).Expect(testenv.Recorded(rec)).To(Equal(tt.want))
		})
	}
}

func TestRecordingWithoutARecorder(t *testing.T) {
	b := newBinding("b", "app", "staging")
	b.Status.ComponentDeploymentConditions = []metav1.Condition{{Type: appstudio.ComponentDeploymentConditionAllComponentsDeployed, Status: metav1.ConditionTrue}}
	r := &Reconciler{}
	r.recordError(b, errors.New("boom"))
	r.recordDeployed(b, newBinding("b", "app", "staging"))
}

func TestLeavesFlattensJoinedErrors(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	wrapped := fmt.Errorf("wrapped: %w", c)
	tests := []struct {
		name string
		err  error
		want []error
	}{
		{"nil", nil, nil},
		{"one", a, []error{a}},
		{"joined", errors.Join(a, b), []error{a, b}},
		{"nested", errors.Join(a, errors.Join(b, wrapped)), []error{a, b, wrapped}},
		// errors.Join drops nils; a join of only nils is nil.
		{"joined nils", errors.Join(nil, nil), nil},
		// A single-wrapped error stays one leaf (its message says where it came from).
		{"wrapped", wrapped, []error{wrapped}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(leaves(tt.err)).To(Equal(tt.want))
		})
	}
}
