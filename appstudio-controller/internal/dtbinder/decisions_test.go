package dtbinder

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// The phases api.md lists for a DeploymentTarget, for the cases TestPhase leaves out.
func TestPhaseOfATargetFollowsItsClaim(t *testing.T) {
	deletedAt := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	target := func(claimRef string, phase appstudio.DeploymentTargetPhase) *appstudio.DeploymentTarget {
		return &appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "dt"},
			Spec: appstudio.DeploymentTargetSpec{ClaimRef: claimRef}, Status: appstudio.DeploymentTargetStatus{Phase: phase}}
	}
	claim := func(targetName string, deleting bool) *appstudio.DeploymentTargetClaim {
		c := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: appstudio.DeploymentTargetClaimSpec{TargetName: targetName}}
		if deleting {
			c.DeletionTimestamp = &deletedAt
			c.Finalizers = []string{appstudio.FinalizerBinder}
		}
		return c
	}
	tests := []struct {
		name  string
		dt    *appstudio.DeploymentTarget
		claim *appstudio.DeploymentTargetClaim
		want  appstudio.DeploymentTargetPhase
	}{
		// "Released: DT was previously bound to a DTC, and the DTC was deleted": already
		// while the claim is being deleted (its finalizer releases or deletes the target).
		{"claim being deleted", target("c", appstudio.DeploymentTargetPhaseBound), claim("dt", true), appstudio.DeploymentTargetPhaseReleased},
		// Never bound: nothing to release.
		{"claim deleted before binding", target("c", appstudio.DeploymentTargetPhasePending), claim("", true), appstudio.DeploymentTargetPhasePending},
		{"claim gone before binding", target("c", appstudio.DeploymentTargetPhasePending), nil, appstudio.DeploymentTargetPhasePending},
		// "Failed" is kept like "Released": an administrator acts on it.
		{"failed is sticky", target("c", appstudio.DeploymentTargetPhaseFailed), claim("dt", false), appstudio.DeploymentTargetPhaseFailed},
		{"failed with the claim gone", target("c", appstudio.DeploymentTargetPhaseFailed), nil, appstudio.DeploymentTargetPhaseFailed},
		// The claim names another target: this one is reserved, not bound.
		{"claim bound to another target", target("c", appstudio.DeploymentTargetPhasePending), claim("other", false), appstudio.DeploymentTargetPhasePending},
		{"bound stays bound", target("c", appstudio.DeploymentTargetPhaseBound), claim("dt", false), appstudio.DeploymentTargetPhaseBound},
		// Pending, then the claim binder sets the claim's targetName.
		{"pending becomes bound", target("c", appstudio.DeploymentTargetPhasePending), claim("dt", false), appstudio.DeploymentTargetPhaseBound},
		// An administrator clears claimRef of a Released target to offer it again.
		{"released and cleared", target("", appstudio.DeploymentTargetPhaseReleased), claim("dt", false), appstudio.DeploymentTargetPhaseAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Phase(tt.dt, tt.claim)).To(Equal(tt.want))
		})
	}
}

func TestStuckTermination(t *testing.T) {
	deletedAt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := func(deleting bool, finalizers ...string) *appstudio.DeploymentTarget {
		dt := &appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "dt", Finalizers: finalizers}}
		if deleting {
			dt.DeletionTimestamp = &metav1.Time{Time: deletedAt}
		}
		return dt
	}
	const after = 2 * time.Minute
	tests := []struct {
		name      string
		dt        *appstudio.DeploymentTarget
		now       time.Time
		wantStuck bool
		wantWait  time.Duration
	}{
		{"not deleted", target(false, appstudio.FinalizerDT), deletedAt.Add(time.Hour), false, 0},
		// Only the provisioner's finalizer counts: another one is not the provisioner's job.
		{"deleted without the provisioner's finalizer", target(true, "example.com/other"), deletedAt.Add(time.Hour), false, 0},
		// Looked at again just after the deadline, so that it fails in time.
		{"deleted, the provisioner still cleaning up", target(true, appstudio.FinalizerDT), deletedAt.Add(30 * time.Second), false, 90*time.Second + 100*time.Millisecond},
		{"at the deadline", target(true, appstudio.FinalizerDT), deletedAt.Add(after), false, 100 * time.Millisecond},
		{"past the deadline", target(true, appstudio.FinalizerDT), deletedAt.Add(after + time.Millisecond), true, 0},
		{"long past the deadline", target(true, "example.com/other", appstudio.FinalizerDT), deletedAt.Add(time.Hour), true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			isStuck, wait := stuck(tt.dt, after, tt.now)
			g.Expect(isStuck).To(Equal(tt.wantStuck))
			g.Expect(wait).To(Equal(tt.wantWait))
		})
	}
}

func TestTargetPhaseEvents(t *testing.T) {
	deletedAt := metav1.NewTime(time.Date(2026, 1, 1, 12, 30, 0, 0, time.UTC))
	plain := &appstudio.DeploymentTarget{Spec: appstudio.DeploymentTargetSpec{ClaimRef: "prod-dtc"}}
	terminating := &appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deletedAt, Finalizers: []string{appstudio.FinalizerDT}},
		Spec: appstudio.DeploymentTargetSpec{ClaimRef: "prod-dtc"}}
	tests := []struct {
		name              string
		dt                *appstudio.DeploymentTarget
		phase             appstudio.DeploymentTargetPhase
		wantType, wantMsg string
	}{
		{"available", plain, appstudio.DeploymentTargetPhaseAvailable, corev1.EventTypeNormal, "DeploymentTarget is available to be claimed"},
		{"bound", plain, appstudio.DeploymentTargetPhaseBound, corev1.EventTypeNormal, "DeploymentTarget is bound to DeploymentTargetClaim prod-dtc"},
		{"released", plain, appstudio.DeploymentTargetPhaseReleased, corev1.EventTypeNormal,
			"DeploymentTargetClaim prod-dtc was deleted; the DeploymentTarget is kept and is not bound again automatically"},
		{"failed", plain, appstudio.DeploymentTargetPhaseFailed, corev1.EventTypeWarning, "DeploymentTarget failed"},
		// The stuck termination says what is stuck and since when.
		{"failed, termination stuck", terminating, appstudio.DeploymentTargetPhaseFailed, corev1.EventTypeWarning,
			"DeploymentTarget termination is stuck: deleted at 2026-01-01T12:30:00Z, its finalizer dt.appstudio.redhat.com/finalizer is still there (the provisioner has not cleaned up)"},
		{"a phase of a newer API", plain, "Archived", corev1.EventTypeNormal, "DeploymentTarget is Archived"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			typ, reason, msg := targetPhaseEvent(tt.dt, tt.phase)
			g.Expect(typ).To(Equal(tt.wantType))
			g.Expect(reason).To(Equal(string(tt.phase)), "the reason is the phase")
			g.Expect(msg).To(Equal(tt.wantMsg))
		})
	}
}

// A target whose termination is stuck is Stalled, with the stuck message.
func TestTargetProgressOfAStuckTermination(t *testing.T) {
	deletedAt := metav1.NewTime(time.Date(2026, 1, 1, 12, 30, 0, 0, time.UTC))
	dt := &appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deletedAt, Finalizers: []string{appstudio.FinalizerDT}},
		Status: appstudio.DeploymentTargetStatus{Phase: appstudio.DeploymentTargetPhaseFailed}}
	p := TargetProgress(dt)
	g := NewWithT(t)
	g.Expect(p.Stalled).To(BeTrue())
	g.Expect(p.Ready).To(Equal(metav1.ConditionFalse))
	g.Expect(p.Message).To(HavePrefix("DeploymentTarget termination is stuck: deleted at 2026-01-01T12:30:00Z"))
}

func TestClaimPhaseEvents(t *testing.T) {
	dtc := &appstudio.DeploymentTargetClaim{Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: "isolation-level-namespace", TargetName: "prod-dt"}}
	tests := []struct {
		phase                         appstudio.DeploymentTargetClaimPhase
		wantType, wantReason, wantMsg string
	}{
		{appstudio.DeploymentTargetClaimPhaseBound, corev1.EventTypeNormal, "Bound", "Bound to DeploymentTarget prod-dt"},
		// api.md: "Lost: The DTC lost its bounded DT. The DT doesn't exist anymore".
		{appstudio.DeploymentTargetClaimPhaseLost, corev1.EventTypeWarning, "TargetLost", "DeploymentTarget prod-dt no longer exists"},
		{appstudio.DeploymentTargetClaimPhasePending, corev1.EventTypeNormal, "Pending", "Waiting for a DeploymentTarget of class isolation-level-namespace"},
		{"Unknown", corev1.EventTypeNormal, "Unknown", "DeploymentTargetClaim is Unknown"},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			g := NewWithT(t)
			typ, reason, msg := phaseEvent(dtc, tt.phase)
			g.Expect([]string{typ, reason, msg}).To(Equal([]string{tt.wantType, tt.wantReason, tt.wantMsg}))
		})
	}
}

func TestSetAnnReportsAChange(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		value       string
		wantChanged bool
		want        map[string]string
	}{
		{"no annotations yet", nil, "true", true, map[string]string{appstudio.AnnBindCompleted: "true"}},
		{"already set", map[string]string{appstudio.AnnBindCompleted: "true"}, "true", false, map[string]string{appstudio.AnnBindCompleted: "true"}},
		{"another value", map[string]string{appstudio.AnnBindCompleted: "false", "keep": "me"}, "true", true,
			map[string]string{appstudio.AnnBindCompleted: "true", "keep": "me"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dtc := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			g.Expect(setAnn(dtc, appstudio.AnnBindCompleted, tt.value)).To(Equal(tt.wantChanged))
			g.Expect(dtc.Annotations).To(Equal(tt.want))
		})
	}
}
