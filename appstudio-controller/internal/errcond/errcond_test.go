package errcond

import (
	"errors"
	"fmt"
	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestShown(t *testing.T) {
	for name, tc := range map[string]struct {
		err                 error
		wantReason, wantMsg string
	}{
		"user":      {outcome.UserError("InvalidSpec", "bad %s", "spec"), "InvalidSpec", "bad spec"},
		"stalled":   {outcome.StalledError("EnvironmentNotFound", "gone"), "EnvironmentNotFound", "gone"},
		"transient": {outcome.TransientError("Waiting", time.Second, "later"), "Waiting", "later"},
		"wrapped":   {fmt.Errorf("ctx: %w", outcome.UserError("R", "m")), "R", "m"},
		"internal":  {errors.New("dial tcp 10.0.0.1: connection refused"), appstudio.ReasonErrorOccurred, outcome.InternalMessage},
		"internal kind hides its message": {&outcome.Error{Kind: outcome.Internal, Reason: "R", Message: "secret detail"},
			appstudio.ReasonErrorOccurred, outcome.InternalMessage},
	} {
		t.Run(name, func(t *testing.T) {
			reason, msg := Shown(tc.err)
			if reason != tc.wantReason || msg != tc.wantMsg {
				t.Errorf("Shown = %q, %q; want %q, %q", reason, msg, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

func TestApply(t *testing.T) {
	var list []metav1.Condition
	if Apply(&list, 1, nil) || len(list) != 0 {
		t.Fatalf("no error and no condition: %v", list)
	}
	if !Apply(&list, 1, outcome.UserError("InvalidSpec", "bad")) {
		t.Error("raising the condition is no transition")
	}
	check := func(status metav1.ConditionStatus, reason, msg string, gen int64) {
		t.Helper()
		c := meta.FindStatusCondition(list, Type)
		if c == nil || c.Status != status || c.Reason != reason || c.Message != msg || c.ObservedGeneration != gen {
			t.Fatalf("condition %+v, want %s/%s %q at %d", c, status, reason, msg, gen)
		}
	}
	check(metav1.ConditionTrue, "InvalidSpec", "bad", 1)
	if Apply(&list, 2, outcome.UserError("InvalidSpec", "bad again")) {
		t.Error("a new message with the same reason is a transition")
	}
	check(metav1.ConditionTrue, "InvalidSpec", "bad again", 2)
	if !Apply(&list, 2, errors.New("boom")) {
		t.Error("an internal error after a user error is no transition")
	}
	check(metav1.ConditionTrue, appstudio.ReasonErrorOccurred, outcome.InternalMessage, 2)
	if !Apply(&list, 3, nil) {
		t.Error("resolving is no transition")
	}
	check(metav1.ConditionFalse, appstudio.ReasonErrorOccurredResolved, "", 3)
	if Apply(&list, 4, nil) {
		t.Error("staying resolved is a transition")
	}
	check(metav1.ConditionFalse, appstudio.ReasonErrorOccurredResolved, "", 4)
}
