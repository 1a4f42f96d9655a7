package deployment

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/conditions"
)

// Reasons of the Events that report status transitions (condition Events use the
// condition's reason).
const (
	EventSyncStatusChanged   = "SyncStatusChanged"
	EventHealthStatusChanged = "HealthStatusChanged"
	EventSyncOperation       = "SyncOperation"
	// EventResourcesMayRemain: the Argo CD Application was removed before Argo CD pruned
	// everything it deployed (the message lists what it last listed).
	EventResourcesMayRemain = "ResourcesMayRemain"
)

// recordTransitions records an Event for every user-visible change from before to the
// GitOpsDeployment's status: sync status, health, the end of a sync operation, and each
// condition raised or resolved. Unchanged fields record nothing, so a status write that
// repeats itself is silent.
func recordTransitions(rec record.EventRecorder, depl *v1.GitOpsDeployment, before *v1.GitOpsDeploymentStatus) {
	if rec == nil {
		return
	}
	after := &depl.Status
	if s := after.Sync.Status; s != "" && s != before.Sync.Status {
		eventType := corev1.EventTypeNormal
		if s == v1.SyncStatusCodeOutOfSync {
			eventType = corev1.EventTypeWarning
		}
		rec.Eventf(depl, eventType, EventSyncStatusChanged, "Sync status %s → %s%s",
			orNone(string(before.Sync.Status)), s, atRevision(after.Sync.Revision))
	}
	if h := after.Health.Status; h != "" && h != before.Health.Status {
		eventType := corev1.EventTypeNormal
		if h == v1.HealthStatusCodeDegraded || h == v1.HealthStatusCodeMissing {
			eventType = corev1.EventTypeWarning
		}
		msg := fmt.Sprintf("Health %s → %s", orNone(string(before.Health.Status)), h)
		if after.Health.Message != "" {
			msg += ": " + after.Health.Message
		}
		rec.Event(depl, eventType, EventHealthStatusChanged, msg)
	}
	if op := after.OperationState; op != nil && op.FinishedAt != nil &&
		(before.OperationState == nil || before.OperationState.FinishedAt == nil || !before.OperationState.FinishedAt.Equal(op.FinishedAt)) {
		eventType := corev1.EventTypeNormal
		if op.Phase != "Succeeded" {
			eventType = corev1.EventTypeWarning
		}
		msg := fmt.Sprintf("Sync operation %s", op.Phase)
		if op.Message != "" {
			msg += ": " + op.Message
		}
		rec.Event(depl, eventType, EventSyncOperation, msg)
	}
	for _, c := range after.Conditions {
		old := conditions.Find(before.Conditions, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			continue
		}
		if old == nil && c.Status != v1.GitOpsConditionStatusTrue {
			continue // resolved before it was ever raised: nothing happened
		}
		eventType := corev1.EventTypeNormal
		if c.Status == v1.GitOpsConditionStatusTrue {
			eventType = corev1.EventTypeWarning
		}
		msg := c.Message
		if msg == "" {
			msg = fmt.Sprintf("%s resolved", c.Type)
		}
		rec.Event(depl, eventType, string(c.Reason), msg)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func atRevision(rev string) string {
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return " at revision " + rev
}
