package conditions

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

const (
	typeError v1.GitOpsDeploymentConditionType = "ErrorOccurred"
	typeSync  v1.GitOpsDeploymentConditionType = "SyncError"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC))
)

// existing is a list with an ErrorOccurred condition that turned True at t0, and another
// condition that no call below may touch.
func existing() []v1.GitOpsDeploymentCondition {
	return []v1.GitOpsDeploymentCondition{
		{Type: typeSync, Status: v1.GitOpsConditionStatusFalse, Reason: "Resolved", LastProbeTime: &t0, LastTransitionTime: &t0},
		{Type: typeError, Status: v1.GitOpsConditionStatusTrue, Reason: "ErrorOccurred", Message: "bad path",
			LastProbeTime: &t0, LastTransitionTime: &t0},
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		name           string
		list           []v1.GitOpsDeploymentCondition
		status         v1.GitOpsConditionStatus
		reason         v1.GitOpsDeploymentReasonType
		message        string
		wantChanged    bool
		wantLen        int
		wantProbe      metav1.Time
		wantTransition metav1.Time
	}{
		// An unchanged condition rewrites nothing, so it costs no status update.
		{"unchanged", existing(), v1.GitOpsConditionStatusTrue, "ErrorOccurred", "bad path", false, 2, t0, t0},
		{"a new message is probed, not a transition", existing(), v1.GitOpsConditionStatusTrue, "ErrorOccurred", "still bad", true, 2, t1, t0},
		{"a new reason is probed, not a transition", existing(), v1.GitOpsConditionStatusTrue, "Other", "bad path", true, 2, t1, t0},
		{"a new status is a transition", existing(), v1.GitOpsConditionStatusFalse, "Resolved", "", true, 2, t1, t1},
		{"Unknown is a status of its own", existing(), v1.GitOpsConditionStatusUnknown, "ErrorOccurred", "bad path", true, 2, t1, t1},
		{"an absent condition is added", existing()[:1], v1.GitOpsConditionStatusTrue, "ErrorOccurred", "bad path", true, 2, t1, t1},
		{"added to an empty list", nil, v1.GitOpsConditionStatusTrue, "ErrorOccurred", "bad path", true, 1, t1, t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := Set(tt.list, typeError, tt.status, tt.reason, tt.message, t1)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if len(got) != tt.wantLen {
				t.Fatalf("%d conditions, want %d: %+v", len(got), tt.wantLen, got)
			}
			c := Find(got, typeError)
			if c == nil {
				t.Fatal("the condition is not in the list")
			}
			if c.Status != tt.status || c.Reason != tt.reason || c.Message != tt.message {
				t.Errorf("condition %s/%s/%q, want %s/%s/%q", c.Status, c.Reason, c.Message, tt.status, tt.reason, tt.message)
			}
			if !c.LastProbeTime.Equal(&tt.wantProbe) || !c.LastTransitionTime.Equal(&tt.wantTransition) {
				t.Errorf("probe %v, transition %v; want %v, %v", c.LastProbeTime, c.LastTransitionTime, tt.wantProbe, tt.wantTransition)
			}
			if other := Find(got, typeSync); other != nil && (other.Status != v1.GitOpsConditionStatusFalse || !other.LastProbeTime.Equal(&t0)) {
				t.Errorf("another condition changed: %+v", other)
			}
		})
	}
}

func TestSetAppendsInOrder(t *testing.T) {
	list, _ := Set(nil, typeSync, v1.GitOpsConditionStatusTrue, "SyncError", "a", t0)
	list, _ = Set(list, typeError, v1.GitOpsConditionStatusTrue, "ErrorOccurred", "b", t0)
	if len(list) != 2 || list[0].Type != typeSync || list[1].Type != typeError {
		t.Errorf("list %+v, want SyncError then ErrorOccurred", list)
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name        string
		list        []v1.GitOpsDeploymentCondition
		wantChanged bool
		wantPresent bool
	}{
		{"a True condition is resolved", existing(), true, true},
		// Users only need to see errors that happened.
		{"an absent condition stays absent", existing()[:1], false, false},
		{"an empty list stays empty", nil, false, false},
		{"a False condition is left alone", []v1.GitOpsDeploymentCondition{{Type: typeError, Status: v1.GitOpsConditionStatusFalse,
			Reason: "Earlier", LastProbeTime: &t0, LastTransitionTime: &t0}}, false, true},
		{"an Unknown condition is resolved", []v1.GitOpsDeploymentCondition{{Type: typeError, Status: v1.GitOpsConditionStatusUnknown,
			Reason: "ErrorOccurred", LastProbeTime: &t0, LastTransitionTime: &t0}}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(tt.list)
			got, changed := Resolve(tt.list, typeError, "ErrorResolved", t1)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if len(got) != before {
				t.Errorf("Resolve changed the number of conditions from %d to %d", before, len(got))
			}
			c := Find(got, typeError)
			if (c != nil) != tt.wantPresent {
				t.Fatalf("condition present = %v, want %v", c != nil, tt.wantPresent)
			}
			if !tt.wantChanged {
				return
			}
			if c.Status != v1.GitOpsConditionStatusFalse || c.Reason != "ErrorResolved" || c.Message != "" {
				t.Errorf("resolved condition %s/%s/%q, want False/ErrorResolved with no message", c.Status, c.Reason, c.Message)
			}
			if !c.LastTransitionTime.Equal(&t1) {
				t.Errorf("transition %v, want %v", c.LastTransitionTime, t1)
			}
		})
	}
}

func TestFind(t *testing.T) {
	list := existing()
	c := Find(list, typeError)
	if c == nil || c.Message != "bad path" {
		t.Fatalf("Find = %+v", c)
	}
	// Find returns the element itself, so callers can change it in place.
	c.Message = "changed"
	if list[1].Message != "changed" {
		t.Error("Find returned a copy")
	}
	if Find(list, "NoSuchType") != nil || Find(nil, typeError) != nil {
		t.Error("Find found a condition that is not there")
	}
}
