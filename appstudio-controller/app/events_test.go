package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
)

// eventCounts returns, per "<type> <reason> <message>" of the Events of the object name of
// kind o (looked up for its UID), how many times it was recorded. The Event correlator folds
// a repeated Event into one object with a higher count, so "no second Event" means these
// counts stay the same.
func (h *harness) eventCounts(name string, o client.Object) func() map[string]int32 {
	return func() map[string]int32 {
		h.g.Expect(h.c.Get(h.ctx, h.key(name), o)).To(Succeed())
		list := &corev1.EventList{}
		h.g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
		out := map[string]int32{}
		for _, e := range list.Items {
			if e.InvolvedObject.UID == o.GetUID() {
				n := e.Count
				if n == 0 {
					n = 1
				}
				out[e.Type+" "+e.Reason+" "+e.Message] += n
			}
		}
		return out
	}
}

// settled waits until the Events of the object name are want and checks that no further
// Event comes.
func (h *harness) settled(name string, o client.Object, want map[string]int32) {
	h.t.Helper()
	h.g.Eventually(h.eventCounts(name, o), eventually, poll).Should(Equal(want))
	h.g.Consistently(h.eventCounts(name, o), "2s", poll).Should(Equal(want))
}

func TestEventsPromotionRun(t *testing.T) {
	h := start(t)
	h.promotionSetup()
	h.create(manualRun("p1", "s1"))
	h.create(manualRun("p2", "s2"))
	started := func(s string) string {
		return "Normal PromotionStarted Promoting Snapshot " + s + " of application appa to Environment staging"
	}
	h.settled("p1", &appstudio.PromotionRun{}, map[string]int32{started("s1"): 1})
	h.settled("p2", &appstudio.PromotionRun{}, map[string]int32{
		`Normal PromotionInProgress PromotionRun "p1" of application "appa" is in progress; this one starts when it completes`: 1})

	h.generated("appa-staging-generated-binding", "c1")
	name := "appa-staging-generated-binding-appa-staging-comp"
	h.g.Eventually(h.get(name, &v1.GitOpsDeployment{}), eventually, poll).Should(Succeed())
	h.deploy(name, v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, "c1")
	h.settled("p1", &appstudio.PromotionRun{}, map[string]int32{
		started("s1"): 1,
		"Normal PromotionSucceeded Snapshot s1 is deployed to staging": 1,
	})
	// p2 starts (its wait is over: no separate "resolved" Event).
	h.settled("p2", &appstudio.PromotionRun{}, map[string]int32{
		`Normal PromotionInProgress PromotionRun "p1" of application "appa" is in progress; this one starts when it completes`: 1,
		started("s2"): 1,
	})
}

func TestEventsPromotionRunFailure(t *testing.T) {
	h := start(t, func(o *app.Options) { o.PromotionTimeout = 2 * time.Second })
	h.promotionSetup()
	h.create(manualRun("p1", "s1"))
	h.settled("p1", &appstudio.PromotionRun{}, map[string]int32{
		"Normal PromotionStarted Promoting Snapshot s1 of application appa to Environment staging":                    1,
		"Warning PromotionFailed The promotion failed: staging: Not all components were synced and healthy within 2s": 1,
	})

	// An invalid run: one Warning with the error's reason, however often it is reconciled.
	h.create(&appstudio.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: appstudio.PromotionRunSpec{
		Snapshot: "missing", Application: "other", ManualPromotion: &appstudio.ManualPromotionConfiguration{TargetEnvironment: "staging"}}})
	bad := map[string]int32{`Warning SnapshotNotFound Snapshot "missing" does not exist`: 1}
	h.settled("bad", &appstudio.PromotionRun{}, bad)
	run := h.run("bad")
	run.Labels = map[string]string{"touched": "yes"}
	h.g.Expect(h.c.Update(h.ctx, run)).To(Succeed())
	h.settled("bad", &appstudio.PromotionRun{}, bad)
}

func TestEventsBinderPhases(t *testing.T) {
	h := start(t)
	cls := h.class(appstudio.ReclaimPolicyRetain, "example.com/external")
	h.create(&appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}})
	pending := "Normal Provisioning Waiting for provisioner example.com/external to provision a DeploymentTarget"
	h.settled("claim", &appstudio.DeploymentTargetClaim{}, map[string]int32{pending: 1})

	// A target appears: the claim is bound (one Event, not one per step of the binding).
	dt := h.target("dt", cls)
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	h.settled("claim", &appstudio.DeploymentTargetClaim{}, map[string]int32{pending: 1, "Normal Bound Bound to DeploymentTarget dt": 1})
	h.g.Eventually(h.eventCounts("dt", &appstudio.DeploymentTarget{}), eventually, poll).Should(
		HaveKeyWithValue("Normal Bound DeploymentTarget is bound to DeploymentTargetClaim claim", int32(1)))

	// The target is deleted: the claim is Lost.
	h.g.Expect(h.c.Delete(h.ctx, dt)).To(Succeed())
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseLost))
	h.settled("claim", &appstudio.DeploymentTargetClaim{}, map[string]int32{pending: 1, "Normal Bound Bound to DeploymentTarget dt": 1,
		"Warning TargetLost DeploymentTarget dt no longer exists": 1})

	// Retain: a target whose claim is deleted is Released.
	h.create(&appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim2"},
		Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}})
	h.target("dt2", cls)
	h.g.Eventually(h.dtPhase("dt2"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseBound))
	claim2 := &appstudio.DeploymentTargetClaim{}
	h.g.Expect(h.c.Get(h.ctx, h.key("claim2"), claim2)).To(Succeed())
	h.g.Expect(h.c.Delete(h.ctx, claim2)).To(Succeed())
	h.g.Eventually(h.dtPhase("dt2"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseReleased))
	released := "Normal Released DeploymentTargetClaim claim2 was deleted; the DeploymentTarget is kept and is not bound again automatically"
	h.g.Eventually(h.eventCounts("dt2", &appstudio.DeploymentTarget{}), eventually, poll).Should(HaveKeyWithValue(released, int32(1)))
	h.g.Consistently(h.eventCounts("dt2", &appstudio.DeploymentTarget{}), "2s", poll).Should(HaveKeyWithValue(released, int32(1)))
}
