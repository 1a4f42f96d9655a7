package environment

import (
	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestConnection(t *testing.T) {
	me := func(gen, observed int64, conds ...metav1.Condition) *v1.GitOpsDeploymentManagedEnvironment {
		m := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Name: "managed-environment-dev", Generation: gen}}
		m.Status.ObservedGeneration, m.Status.Conditions = observed, conds
		return m
	}
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: "R", Message: "the token is expired"}
	}
	readyTrue, readyFalse := cond(outcome.TypeReady, metav1.ConditionTrue), cond(outcome.TypeReady, metav1.ConditionFalse)
	stalled := cond(outcome.TypeStalled, metav1.ConditionTrue)
	for name, tc := range map[string]struct {
		me         *v1.GitOpsDeploymentManagedEnvironment
		wantReady  metav1.ConditionStatus
		wantReason string
		stalled    bool
	}{
		"just created":             {me(1, 0), metav1.ConditionFalse, appstudio.EnvironmentReasonConnectingCluster, false},
		"connected":                {me(2, 2, readyTrue), metav1.ConditionTrue, appstudio.EnvironmentReasonClusterConnected, false},
		"connected, older spec":    {me(3, 2, readyTrue), metav1.ConditionFalse, appstudio.EnvironmentReasonConnectingCluster, false},
		"retrying":                 {me(2, 2, readyFalse), metav1.ConditionFalse, appstudio.EnvironmentReasonConnectingCluster, false},
		"cannot connect":           {me(2, 2, readyFalse, stalled), metav1.ConditionFalse, appstudio.EnvironmentReasonClusterNotConnected, true},
		"could not, older spec":    {me(3, 2, readyFalse, stalled), metav1.ConditionFalse, appstudio.EnvironmentReasonConnectingCluster, false},
		"no Ready (older backend)": {me(2, 2), metav1.ConditionFalse, appstudio.EnvironmentReasonConnectingCluster, false},
	} {
		t.Run(name, func(t *testing.T) {
			p := connection(tc.me)
			if p.Ready != tc.wantReady || p.Reason != tc.wantReason || p.Stalled != tc.stalled {
				t.Errorf("progress %+v, want Ready %s reason %s stalled %v", p, tc.wantReady, tc.wantReason, tc.stalled)
			}
			if p.Pending {
				t.Error("the Environment's generation is processed once its managed environment is written")
			}
			if tc.stalled && p.Message != `GitOpsDeploymentManagedEnvironment managed-environment-dev cannot connect to the cluster: the token is expired` {
				t.Errorf("message %q", p.Message)
			}
		})
	}
}
