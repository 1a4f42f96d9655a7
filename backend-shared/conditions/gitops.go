// Package conditions maintains the GitOpsDeployment-style conditions of the core API
// (type, reason, status, message, lastProbeTime, lastTransitionTime): the shape api.md
// documents, which predates metav1.Condition.
package conditions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// Set records a condition in list, returning the new list and whether the condition's
// status, reason or message changed. lastTransitionTime moves only when the status changes,
// so an unchanged condition rewrites nothing and costs no status update.
func Set(list []v1.GitOpsDeploymentCondition, typ v1.GitOpsDeploymentConditionType, status v1.GitOpsConditionStatus,
	reason v1.GitOpsDeploymentReasonType, message string, now metav1.Time) ([]v1.GitOpsDeploymentCondition, bool) {
	for i := range list {
		c := &list[i]
		if c.Type != typ {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == message {
			return list, false
		}
		if c.Status != status {
			c.LastTransitionTime = &now
		}
		c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, message, &now
		return list, true
	}
	return append(list, v1.GitOpsDeploymentCondition{
		Type: typ, Status: status, Reason: reason, Message: message,
		LastProbeTime: &now, LastTransitionTime: &now,
	}), true
}

// Resolve marks a condition of typ as resolved (status False, the given reason) if it is
// present and True; absent conditions stay absent, as users only need to see errors that
// happened. It reports whether anything changed.
func Resolve(list []v1.GitOpsDeploymentCondition, typ v1.GitOpsDeploymentConditionType,
	reason v1.GitOpsDeploymentReasonType, now metav1.Time) ([]v1.GitOpsDeploymentCondition, bool) {
	c := Find(list, typ)
	if c == nil || c.Status == v1.GitOpsConditionStatusFalse {
		return list, false
	}
	return Set(list, typ, v1.GitOpsConditionStatusFalse, reason, "", now)
}

// Find returns the condition of typ, or nil.
func Find(list []v1.GitOpsDeploymentCondition, typ v1.GitOpsDeploymentConditionType) *v1.GitOpsDeploymentCondition {
	for i := range list {
		if list[i].Type == typ {
			return &list[i]
		}
	}
	return nil
}
