package outcome

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// The condition types kstatus reads (sigs.k8s.io/cli-utils/pkg/kstatus).
const (
	TypeReady       = "Ready"
	TypeReconciling = "Reconciling"
	TypeStalled     = "Stalled"
)

// Condition is the part of a condition that kstatus and users read; each kind keeps it in
// its own shape.
type Condition struct {
	Type, Status, Reason, Message string
}

// Conditions is where a kind keeps its conditions.
type Conditions interface {
	Get(typ string) (Condition, bool)
	// Set writes c; the transition time moves only when the status changes.
	Set(c Condition, now metav1.Time)
	Remove(typ string)
}

// MetaConditions adapts a list of metav1.Conditions of an object at generation.
type MetaConditions struct {
	List       *[]metav1.Condition
	Generation int64
}

func (m MetaConditions) Get(typ string) (Condition, bool) {
	c := meta.FindStatusCondition(*m.List, typ)
	if c == nil {
		return Condition{}, false
	}
	return Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message}, true
}

func (m MetaConditions) Set(c Condition, now metav1.Time) {
	meta.SetStatusCondition(m.List, metav1.Condition{
		Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
		ObservedGeneration: m.Generation, LastTransitionTime: now,
	})
}

func (m MetaConditions) Remove(typ string) { meta.RemoveStatusCondition(m.List, typ) }

// GitOpsConditions adapts the core API's own condition shape (GitOpsDeployment and
// GitOpsDeploymentSyncRun).
type GitOpsConditions struct {
	List *[]v1.GitOpsDeploymentCondition
}

func (g GitOpsConditions) find(typ string) *v1.GitOpsDeploymentCondition {
	for i := range *g.List {
		if string((*g.List)[i].Type) == typ {
			return &(*g.List)[i]
		}
	}
	return nil
}

func (g GitOpsConditions) Get(typ string) (Condition, bool) {
	c := g.find(typ)
	if c == nil {
		return Condition{}, false
	}
	return Condition{Type: typ, Status: string(c.Status), Reason: string(c.Reason), Message: c.Message}, true
}

func (g GitOpsConditions) Set(c Condition, now metav1.Time) {
	old := g.find(c.Type)
	if old == nil {
		*g.List = append(*g.List, v1.GitOpsDeploymentCondition{
			Type: v1.GitOpsDeploymentConditionType(c.Type), Status: v1.GitOpsConditionStatus(c.Status),
			Reason: v1.GitOpsDeploymentReasonType(c.Reason), Message: c.Message,
			LastProbeTime: &now, LastTransitionTime: &now,
		})
		return
	}
	if string(old.Status) == c.Status && string(old.Reason) == c.Reason && old.Message == c.Message {
		return
	}
	// A condition from the CRD's default status has no times yet.
	if string(old.Status) != c.Status || old.LastTransitionTime == nil {
		old.LastTransitionTime = &now
	}
	old.Status, old.Reason, old.Message = v1.GitOpsConditionStatus(c.Status), v1.GitOpsDeploymentReasonType(c.Reason), c.Message
	old.LastProbeTime = &now
}

func (g GitOpsConditions) Remove(typ string) {
	out := (*g.List)[:0]
	for _, c := range *g.List {
		if string(c.Type) != typ {
			out = append(out, c)
		}
	}
	*g.List = out
}
