package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// TestSyncDurationObservedOncePerOperation: an operation Argo CD reports Running then
// Succeeded is observed once in gitops_cluster_agent_sync_duration_seconds, with its
// finishedAt - startedAt, and not again when a later status change keeps it.
func TestSyncDurationObservedOncePerOperation(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", true)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)

	recorded := func(check func(*db.ApplicationState) bool) {
		t.Helper()
		g.Eventually(func() bool {
			st, err := e.store.GetApplicationState(e.ctx, e.db, tenant.ID, row.ID)
			return err == nil && check(st)
		}, timeout, interval).Should(BeTrue())
	}
	count0, sum0 := syncDuration(g, "Succeeded")

	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		a.Status.Health = argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusProgressing}
		a.Status.Sync = argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeOutOfSync, Revision: "0123456789abcdef"}
		a.Status.OperationState = &argov1alpha1.OperationState{
			Operation: argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "0123456789abcdef"}},
			Phase:     argov1alpha1.OperationRunning, Message: "syncing", StartedAt: started,
		}
	})
	recorded(func(st *db.ApplicationState) bool {
		return st.OperationState != nil && st.OperationState.Phase == argov1alpha1.OperationRunning
	})

	finishedAt := metav1.NewTime(started.Add(3 * time.Second))
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		a.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
		a.Status.OperationState.Phase = argov1alpha1.OperationSucceeded
		a.Status.OperationState.Message = "successfully synced (all tasks run)"
		a.Status.OperationState.FinishedAt = &finishedAt
	})
	recorded(func(st *db.ApplicationState) bool {
		return st.OperationState != nil && st.OperationState.Phase == argov1alpha1.OperationSucceeded
	})
	g.Eventually(func() uint64 { c, _ := syncDuration(g, "Succeeded"); return c }, timeout, interval).Should(Equal(count0 + 1))
	_, sum := syncDuration(g, "Succeeded")
	g.Expect(sum - sum0).To(BeNumerically("~", 3, 1e-9))

	// The Application becomes Healthy later: the finished operation stays in the status
	// and is not observed again.
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		a.Status.Health.Status = argov1alpha1.HealthStatusHealthy
	})
	recorded(func(st *db.ApplicationState) bool { return st.Health == db.HealthHealthy })
	g.Consistently(func() uint64 { c, _ := syncDuration(g, "Succeeded"); return c }, 2*time.Second, interval).Should(Equal(count0 + 1))
	_, sum = syncDuration(g, "Succeeded")
	g.Expect(sum - sum0).To(BeNumerically("~", 3, 1e-9))
}

// syncDuration reads the sample count and sum of the sync duration histogram for phase
// from the registry the agent's metrics endpoint serves.
func syncDuration(g *WithT, phase string) (count uint64, sum float64) {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "gitops_cluster_agent_sync_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" && l.GetValue() == phase {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	g.Expect(phase).To(BeEmpty(), "no gitops_cluster_agent_sync_duration_seconds series for the phase")
	return 0, 0
}
