package dtbinder

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestClaimProgress(t *testing.T) {
	claim := func(phase appstudio.DeploymentTargetClaimPhase, target, provisioner string) *appstudio.DeploymentTargetClaim {
		c := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Spec:   appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: "cls", TargetName: target},
			Status: appstudio.DeploymentTargetClaimStatus{Phase: phase}}
		if provisioner != "" {
			c.Annotations = map[string]string{appstudio.AnnTargetProvisioner: provisioner}
		}
		return c
	}
	for name, tc := range map[string]struct {
		claim *appstudio.DeploymentTargetClaim
		want  outcome.Progress
	}{
		"bound": {claim(appstudio.DeploymentTargetClaimPhaseBound, "dt", ""), outcome.Done("Bound", "Bound to DeploymentTarget dt")},
		"lost":  {claim(appstudio.DeploymentTargetClaimPhaseLost, "dt", ""), outcome.Failed("TargetLost", "DeploymentTarget dt no longer exists")},
		"pending": {claim(appstudio.DeploymentTargetClaimPhasePending, "", ""),
			outcome.Working("Pending", "Waiting for a DeploymentTarget of class cls", false)},
		"not bound yet": {claim("", "", ""), outcome.Working("Pending", "Waiting for a DeploymentTarget of class cls", false)},
		"provisioning": {claim(appstudio.DeploymentTargetClaimPhasePending, "", "example.com/p"),
			outcome.Working("Pending", "Waiting for provisioner example.com/p to provision a DeploymentTarget", false)},
		"provisioned, not bound yet": {claim(appstudio.DeploymentTargetClaimPhasePending, "dt", "example.com/p"),
			outcome.Working("Pending", "Waiting for a DeploymentTarget of class cls", false)},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ClaimProgress(tc.claim); got != tc.want {
				t.Errorf("progress %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTargetProgress(t *testing.T) {
	target := func(phase appstudio.DeploymentTargetPhase) *appstudio.DeploymentTarget {
		return &appstudio.DeploymentTarget{Spec: appstudio.DeploymentTargetSpec{ClaimRef: "c"}, Status: appstudio.DeploymentTargetStatus{Phase: phase}}
	}
	for name, tc := range map[string]struct {
		phase appstudio.DeploymentTargetPhase
		want  outcome.Progress
	}{
		"available": {appstudio.DeploymentTargetPhaseAvailable, outcome.Done("Available", "DeploymentTarget is available to be claimed")},
		"bound":     {appstudio.DeploymentTargetPhaseBound, outcome.Done("Bound", "DeploymentTarget is bound to DeploymentTargetClaim c")},
		"pending": {appstudio.DeploymentTargetPhasePending,
			outcome.Working("Pending", "DeploymentTarget is reserved for DeploymentTargetClaim c, which has not bound it yet", false)},
		"no phase yet": {"", outcome.Working("Pending", "DeploymentTarget is reserved for DeploymentTargetClaim c, which has not bound it yet", false)},
		"released": {appstudio.DeploymentTargetPhaseReleased,
			outcome.Waiting("Released", "DeploymentTargetClaim c was deleted; the DeploymentTarget is kept and is not bound again automatically")},
		"failed": {appstudio.DeploymentTargetPhaseFailed, outcome.Failed("Failed", "DeploymentTarget failed")},
	} {
		t.Run(name, func(t *testing.T) {
			if got := TargetProgress(target(tc.phase)); got != tc.want {
				t.Errorf("progress %+v, want %+v", got, tc.want)
			}
		})
	}
}
