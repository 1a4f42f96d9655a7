package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend/internal/syncrun"
)

func (h *harness) newSyncRun(name, deployment, revision string) *v1.GitOpsDeploymentSyncRun {
	h.t.Helper()
	run := &v1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.tenant},
		Spec:       v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: deployment, RevisionID: revision},
	}
	h.g.Expect(cp.Client.Create(h.ctx, run)).To(Succeed())
	return run
}

func (h *harness) syncRunCondition(run *v1.GitOpsDeploymentSyncRun) func() *v1.GitOpsDeploymentCondition {
	return func() *v1.GitOpsDeploymentCondition {
		got := &v1.GitOpsDeploymentSyncRun{}
		h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(run), got)).To(Succeed())
		return findCondition(got.Status.Conditions, v1.GitOpsDeploymentSyncRunConditionErrorOccurred)
	}
}

func (h *harness) syncOperation(run *v1.GitOpsDeploymentSyncRun) func() (*db.SyncOperation, error) {
	return func() (*db.SyncOperation, error) {
		return h.store.GetSyncOperation(h.ctx, h.db, h.tenantRow().ID, string(run.UID))
	}
}

func TestSyncRunOnManualDeploymentRequestsASync(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("manual", v1.GitOpsDeploymentSpecTypeManual)
	h.application(depl.UID)
	run := h.newSyncRun("sync-1", "manual", "0123abcd")

	h.g.Eventually(h.syncOperation(run), eventually, poll).Should(And(
		HaveField("ApplicationID", string(depl.UID)),
		HaveField("Revision", "0123abcd"),
		HaveField("DesiredState", db.SyncRunning),
	))
	ops := h.operations(db.OperationResourceSyncOperation, string(run.UID))
	h.g.Expect(ops).To(HaveLen(1))
	h.signalled(ops[0])

	// Deleting the SyncRun while it runs asks the cluster-agent to terminate the sync.
	h.g.Expect(cp.Client.Delete(h.ctx, run)).To(Succeed())
	h.g.Eventually(func() db.SyncDesiredState {
		op, err := h.syncOperation(run)()
		h.g.Expect(err).NotTo(HaveOccurred())
		return op.DesiredState
	}, eventually, poll).Should(Equal(db.SyncTerminated))
	h.g.Expect(h.operations(db.OperationResourceSyncOperation, string(run.UID))).To(HaveLen(2))
}

func TestSyncRunOnAutomatedDeploymentIsAnError(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("auto", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(depl.UID)
	run := h.newSyncRun("sync", "auto", "")
	h.g.Eventually(h.syncRunCondition(run), eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusTrue),
		HaveField("Reason", v1.GitOpsDeploymentSyncRunReasonErrorOccurred),
		HaveField("Message", "Syncing a GitOpsDeployment with Automated sync policy is not allowed"),
	))
	_, err := h.syncOperation(run)()
	h.g.Expect(err).To(MatchError(db.ErrNotFound))
}

func TestSyncRunCreatedBeforeItsDeploymentRunsOnceItExists(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	run := h.newSyncRun("early", "later", "")
	h.g.Eventually(h.syncRunCondition(run), eventually, poll).Should(HaveField("Message", ContainSubstring(`GitOpsDeployment "later" does not exist`)))

	depl := h.newDeployment("later", v1.GitOpsDeploymentSpecTypeManual, func(d *v1.GitOpsDeployment) { d.Spec.Source.TargetRevision = "v1.2.0" })
	h.g.Eventually(h.syncOperation(run), eventually, poll).Should(And(
		HaveField("ApplicationID", string(depl.UID)),
		HaveField("Revision", "v1.2.0"), // the deployment's target revision when the SyncRun names none
	))
	h.g.Eventually(h.syncRunRevision(run), eventually, poll).Should(Equal("v1.2.0"), "status.revision shows what was requested")
}

// syncRunRevision reads the status.revision of run.
func (h *harness) syncRunRevision(run client.Object) func() string {
	return func() string {
		got := &v1.GitOpsDeploymentSyncRun{}
		h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(run), got)).To(Succeed())
		return got.Status.Revision
	}
}

func TestSyncRunStatusFollowsTheSync(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("manual", v1.GitOpsDeploymentSpecTypeManual)
	h.application(depl.UID)
	run := h.newSyncRun("sync", "manual", "abc")
	h.g.Eventually(h.syncOperation(run), eventually, poll).Should(Not(BeNil()))

	h.writeState(depl.UID, &db.ApplicationState{
		Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc",
		OperationState: succeededSyncState(run, "abc"),
	})
	h.g.Eventually(h.syncRunStatus(run), eventually, poll).Should(And(
		HaveField("Health", v1.HealthStatusCodeHealthy),
		HaveField("SyncStatus", v1.SyncStatusCodeSynced),
	))
	h.g.Eventually(h.syncRunCondition(run), eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusFalse),
		HaveField("Message", "Successfully completed synchronize operation."),
	))
}

// succeededSyncState is Argo CD's record of a sync for run that finished now.
func succeededSyncState(run *v1.GitOpsDeploymentSyncRun, revision string) *argov1alpha1.OperationState {
	return finishedSyncState(run, revision, "Succeeded", "successfully synced (all tasks run)")
}

// finishedSyncState is Argo CD's record of a sync that finished now in phase, started by
// the cluster-agent for run (nil: a sync it did not start, such as an automated one).
func finishedSyncState(run *v1.GitOpsDeploymentSyncRun, revision, phase, message string) *argov1alpha1.OperationState {
	now := metav1.Now()
	state := &argov1alpha1.OperationState{
		Phase: argov1alpha1.OperationPhase(phase), Message: message, StartedAt: now, FinishedAt: &now,
		Operation: argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: revision}},
	}
	if run != nil {
		state.Operation.Info = []*argov1alpha1.Info{{Name: argocd.InfoSyncOperationID, Value: string(run.UID)}}
	}
	return state
}

func (h *harness) syncRunStatus(run *v1.GitOpsDeploymentSyncRun) func() v1.GitOpsDeploymentSyncRunStatus {
	return func() v1.GitOpsDeploymentSyncRunStatus {
		got := &v1.GitOpsDeploymentSyncRun{}
		h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(run), got)).To(Succeed())
		return got.Status
	}
}

// readyReason is the reason of a status's Ready condition.
func readyReason(status v1.GitOpsDeploymentSyncRunStatus) string {
	for _, c := range status.Conditions {
		if c.Type == "Ready" {
			return string(c.Reason)
		}
	}
	return ""
}

// Two SyncRuns of one deployment, the second created while the first's sync runs: each
// shows only its own sync's result, however the deployment's operation state moves on; a
// sync the agent did not start for a SyncRun (an automated one) is nobody's.
func TestSyncRunsShowOnlyTheirOwnSync(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("manual", v1.GitOpsDeploymentSpecTypeManual)
	h.application(depl.UID)
	first := h.newSyncRun("first", "manual", "abc")
	h.g.Eventually(h.syncOperation(first), eventually, poll).Should(Not(BeNil()))
	second := h.newSyncRun("second", "manual", "def")
	h.g.Eventually(h.syncOperation(second), eventually, poll).Should(Not(BeNil()))

	// Another sync finishes (started after both runs): neither run takes its result.
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthDegraded, SyncStatus: db.SyncStatusOutOfSync, Revision: "xyz",
		OperationState: finishedSyncState(nil, "xyz", "Failed", "an automated sync failed")})
	h.g.Eventually(h.syncRunStatus(first), eventually, poll).Should(HaveField("Health", v1.HealthStatusCodeDegraded))
	h.g.Consistently(func() []string {
		return []string{readyReason(h.syncRunStatus(first)()), readyReason(h.syncRunStatus(second)())}
	}, 2*time.Second, poll).Should(HaveEach(Not(BeElementOf(syncrun.ReasonSyncSucceeded, syncrun.ReasonSyncFailed))))

	// The first's sync succeeds; then the second's fails and replaces it.
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc",
		OperationState: succeededSyncState(first, "abc")})
	h.g.Eventually(h.syncRunStatus(first), eventually, poll).Should(WithTransform(readyReason, Equal(syncrun.ReasonSyncSucceeded)))
	h.g.Expect(readyReason(h.syncRunStatus(second)())).NotTo(Equal(syncrun.ReasonSyncSucceeded), "the first's result is not the second's")
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthDegraded, SyncStatus: db.SyncStatusOutOfSync, Revision: "def",
		OperationState: finishedSyncState(second, "def", "Failed", "one or more objects failed to apply")})
	h.g.Eventually(h.syncRunStatus(second), eventually, poll).Should(WithTransform(readyReason, Equal(syncrun.ReasonSyncFailed)))
	h.g.Expect(h.syncRunCondition(second)()).To(HaveField("Message", "one or more objects failed to apply"))

	// The first still shows its own success, and the health it had then.
	h.quiet(first)
	h.g.Expect(h.syncRunStatus(first)()).To(And(
		WithTransform(readyReason, Equal(syncrun.ReasonSyncSucceeded)),
		HaveField("Health", v1.HealthStatusCodeHealthy), HaveField("SyncStatus", v1.SyncStatusCodeSynced)))
	h.g.Expect(h.syncRunCondition(first)()).To(HaveField("Status", v1.GitOpsConditionStatusFalse))
}
