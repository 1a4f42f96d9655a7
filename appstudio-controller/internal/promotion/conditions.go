package promotion

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// RunConditions adapts a PromotionRun's own condition shape (that of the core API's
// GitOpsDeploymentCondition) for outcome.
type RunConditions struct {
	List *[]appstudio.PromotionRunCondition
}

var _ outcome.Conditions = RunConditions{}

func (c RunConditions) find(typ string) *appstudio.PromotionRunCondition {
	for i := range *c.List {
		if string((*c.List)[i].Type) == typ {
			return &(*c.List)[i]
		}
	}
	return nil
}

// Get returns the condition of typ.
func (c RunConditions) Get(typ string) (outcome.Condition, bool) {
	found := c.find(typ)
	if found == nil {
		return outcome.Condition{}, false
	}
	return outcome.Condition{Type: typ, Status: string(found.Status), Reason: string(found.Reason), Message: found.Message}, true
}

// Set writes cond; an unchanged condition keeps its times, so it costs no status write.
func (c RunConditions) Set(cond outcome.Condition, now metav1.Time) {
	old := c.find(cond.Type)
	if old == nil {
		*c.List = append(*c.List, appstudio.PromotionRunCondition{
			Type: appstudio.PromotionRunConditionType(cond.Type), Status: appstudio.PromotionRunConditionStatus(cond.Status),
			Reason: appstudio.PromotionRunReasonType(cond.Reason), Message: cond.Message,
			LastProbeTime: &now, LastTransitionTime: &now,
		})
		return
	}
	if string(old.Status) == cond.Status && string(old.Reason) == cond.Reason && old.Message == cond.Message {
		return
	}
	if string(old.Status) != cond.Status {
		old.LastTransitionTime = &now
	}
	old.Status, old.Reason, old.Message = appstudio.PromotionRunConditionStatus(cond.Status), appstudio.PromotionRunReasonType(cond.Reason), cond.Message
	old.LastProbeTime = &now
}

// Remove deletes the condition of typ.
func (c RunConditions) Remove(typ string) {
	out := (*c.List)[:0]
	for _, cond := range *c.List {
		if string(cond.Type) != typ {
			out = append(out, cond)
		}
	}
	*c.List = out
}
