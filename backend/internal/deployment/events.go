package deployment

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/conditions"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
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
// GitOpsDeployment's status: sync status and health (one Event for both, as they usually
// change together), the end of a sync operation, and each condition raised or resolved.
// Unchanged fields record nothing, so a status write that repeats itself is silent, and so
// is Argo CD's first report of a new deployment: it is the news of the Ready condition
// (with the reason and message of what it found), and an Event would only repeat it at the
// cost of an API write for every deployment. Failures in it have Events of their own (the
// error conditions, a failed sync operation).
func recordTransitions(rec record.EventRecorder, depl *v1.GitOpsDeployment, before *v1.GitOpsDeploymentStatus) {
	if rec == nil {
		return
	}
	after := &depl.Status
	var parts []string
	reason, eventType := "", corev1.EventTypeNormal
	if s := after.Sync.Status; changed(string(before.Sync.Status), string(s)) {
		reason = EventSyncStatusChanged
		if s == v1.SyncStatusCodeOutOfSync {
			eventType = corev1.EventTypeWarning
		}
		parts = append(parts, fmt.Sprintf("Sync status %s → %s%s", before.Sync.Status, s, atRevision(after.Sync.Revision)))
	}
	if h := after.Health.Status; changed(string(before.Health.Status), string(h)) {
		if reason == "" {
			reason = EventHealthStatusChanged
		}
		if h == v1.HealthStatusCodeDegraded || h == v1.HealthStatusCodeMissing {
			eventType = corev1.EventTypeWarning
		}
		msg := fmt.Sprintf("health %s → %s", before.Health.Status, h)
		if after.Health.Message != "" {
			msg += ": " + after.Health.Message
		}
		parts = append(parts, msg)
	}
	if len(parts) > 0 {
		msg := strings.Join(parts, "; ")
		rec.Event(depl, eventType, reason, strings.ToUpper(msg[:1])+msg[1:])
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
		if kstatusType(string(c.Type)) {
			continue // the shared ending records Ready's transitions
		}
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

// changed says whether a status field went from a reported value to another one.
func changed(before, after string) bool {
	return before != "" && after != "" && after != before
}

func atRevision(rev string) string {
	if rev == "" {
		return ""
	}
	return " at revision " + shortRevision(rev)
}

func kstatusType(typ string) bool {
	return typ == outcome.TypeReady || typ == outcome.TypeReconciling || typ == outcome.TypeStalled
}
