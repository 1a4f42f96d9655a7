package binding

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestDeploymentProgress(t *testing.T) {
	for name, tc := range map[string]struct {
		cond metav1.Condition
		want outcome.Progress
	}{
		"every component deployed": {
			metav1.Condition{Status: metav1.ConditionTrue, Reason: appstudio.ComponentDeploymentReasonCommitsSynced, Message: "3 of 3 components deployed"},
			outcome.Done(appstudio.ComponentDeploymentReasonCommitsSynced, "3 of 3 components deployed")},
		"some deployed": {
			metav1.Condition{Status: metav1.ConditionFalse, Reason: appstudio.ComponentDeploymentReasonCommitsUnsynced, Message: "2 of 3 components deployed"},
			outcome.Working(appstudio.ComponentDeploymentReasonCommitsUnsynced, "2 of 3 components deployed", false)},
		"none deployed": {
			metav1.Condition{Status: metav1.ConditionFalse, Reason: appstudio.ComponentDeploymentReasonCommitsUnsynced, Message: "0 of 1 components deployed"},
			outcome.Working(appstudio.ComponentDeploymentReasonCommitsUnsynced, "0 of 1 components deployed", false)},
	} {
		t.Run(name, func(t *testing.T) {
			if got := deployment(tc.cond); got != tc.want {
				t.Errorf("progress %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestInternalFirst(t *testing.T) {
	user := outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName, "1 of 2 components cannot be deployed")
	stalled := outcome.StalledError(appstudio.SnapshotEnvironmentBindingReasonNameConflict, "not owned")
	boom, bang := errors.New("boom"), errors.New("bang")
	for name, tc := range map[string]struct {
		err            error
		wantUserReason string // "" for an internal error
		wantIs         []error
	}{
		"nil":                          {nil, "", nil},
		"one user error":               {user, appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName, nil},
		"user errors joined":           {errors.Join(user, nil, stalled), appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName, nil},
		"internal errors win":          {errors.Join(user, boom, stalled, bang), "", []error{boom, bang}},
		"nested joins":                 {errors.Join(user, errors.Join(nil, boom)), "", []error{boom}},
		"transient and internal":       {errors.Join(outcome.TransientError("Wait", time.Second, "wait"), boom), "", []error{boom}},
		"wrapped user error is a user": {fmt.Errorf("applying: %w", stalled), appstudio.SnapshotEnvironmentBindingReasonNameConflict, nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := internalFirst(tc.err)
			if (got == nil) != (tc.err == nil) {
				t.Fatalf("internalFirst(%v) = %v", tc.err, got)
			}
			if e := outcome.As(got); tc.wantUserReason != "" && (e == nil || e.Reason != tc.wantUserReason) {
				t.Errorf("got %v, want the user error %s", got, tc.wantUserReason)
			}
			if tc.wantUserReason == "" && got != nil && outcome.As(got) != nil {
				t.Errorf("got %v, want only internal errors", got)
			}
			for _, w := range tc.wantIs {
				if !errors.Is(got, w) {
					t.Errorf("got %v, want it to hold %v", got, w)
				}
			}
		})
	}
}
