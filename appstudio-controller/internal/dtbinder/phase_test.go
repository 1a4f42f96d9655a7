package dtbinder

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestPhase(t *testing.T) {
	dt := func(claimRef string, phase appstudio.DeploymentTargetPhase) *appstudio.DeploymentTarget {
		return &appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "dt"},
			Spec: appstudio.DeploymentTargetSpec{ClaimRef: claimRef}, Status: appstudio.DeploymentTargetStatus{Phase: phase}}
	}
	claim := func(target string) *appstudio.DeploymentTargetClaim {
		return &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: appstudio.DeploymentTargetClaimSpec{TargetName: target}}
	}
	tests := []struct {
		name  string
		dt    *appstudio.DeploymentTarget
		claim *appstudio.DeploymentTargetClaim
		want  appstudio.DeploymentTargetPhase
	}{
		{"unclaimed", dt("", ""), nil, appstudio.DeploymentTargetPhaseAvailable},
		{"released then cleared", dt("", appstudio.DeploymentTargetPhaseReleased), nil, appstudio.DeploymentTargetPhaseAvailable},
		{"bound", dt("c", appstudio.DeploymentTargetPhaseAvailable), claim("dt"), appstudio.DeploymentTargetPhaseBound},
		{"claim gone", dt("c", appstudio.DeploymentTargetPhaseBound), nil, appstudio.DeploymentTargetPhaseReleased},
		{"released is sticky", dt("c", appstudio.DeploymentTargetPhaseReleased), claim("dt"), appstudio.DeploymentTargetPhaseReleased},
		{"provisioned for a claim not bound yet", dt("c", ""), claim(""), appstudio.DeploymentTargetPhasePending},
		{"provisioned, claim not seen", dt("c", ""), nil, appstudio.DeploymentTargetPhasePending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Phase(tt.dt, tt.claim)).To(Equal(tt.want))
		})
	}
}
