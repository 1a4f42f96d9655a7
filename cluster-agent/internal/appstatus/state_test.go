package appstatus

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestState(t *testing.T) {
	g := NewWithT(t)
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{argocd.LabelApplicationID: "app-1"}}}
	st := State(app)
	g.Expect(st.ApplicationID).To(Equal("app-1"))
	g.Expect(st.Health).To(Equal(db.HealthUnknown), "Argo CD has not reported yet")
	g.Expect(st.SyncStatus).To(Equal(db.SyncStatusUnknown))
	g.Expect(st.ReconciledState).To(BeNil())
	g.Expect(st.OperationState).To(BeNil())

	app.Status = argov1alpha1.ApplicationStatus{
		Health: argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusDegraded},
		Sync: argov1alpha1.SyncStatus{
			Status:     argov1alpha1.SyncStatusCodeOutOfSync,
			Revisions:  []string{"abc"},
			ComparedTo: argov1alpha1.ComparedTo{Destination: argov1alpha1.ApplicationDestination{Namespace: "target"}},
		},
		Resources: []argov1alpha1.ResourceStatus{
			{Kind: "ConfigMap", Name: "ok", Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusHealthy}},
			{Kind: "Deployment", Name: "web", Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusDegraded, Message: "crash loop"}},
		},
		OperationState: &argov1alpha1.OperationState{Phase: "Running"},
	}
	st = State(app)
	g.Expect(st.Health).To(Equal(db.HealthDegraded))
	g.Expect(st.HealthMessage).To(Equal("Deployment/web: crash loop"))
	g.Expect(st.SyncStatus).To(Equal(db.SyncStatusOutOfSync))
	g.Expect(st.Revision).To(Equal("abc"))
	g.Expect(st.ReconciledState).NotTo(BeNil())
	g.Expect(st.ReconciledState.Destination.Namespace).To(Equal("target"))
	g.Expect(st.Resources).To(HaveLen(2))
	g.Expect(st.OperationState.Phase).To(BeEquivalentTo("Running"))

	app.Status.Health.Status = "SomethingNew"
	g.Expect(State(app).Health).To(Equal(db.HealthUnknown), "values the table does not accept are Unknown")
}

func TestNewlyFinished(t *testing.T) {
	g := NewWithT(t)
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(90 * time.Second))
	t2 := metav1.NewTime(t0.Add(10 * time.Minute))
	t3 := metav1.NewTime(t2.Add(2 * time.Second))
	op := func(phase argov1alpha1.OperationPhase, started metav1.Time, finishedAt *metav1.Time) *argov1alpha1.OperationState {
		return &argov1alpha1.OperationState{Phase: phase, StartedAt: started, FinishedAt: finishedAt}
	}
	running := op(argov1alpha1.OperationRunning, t0, nil)
	done := op(argov1alpha1.OperationSucceeded, t0, &t1)

	g.Expect(newlyFinished(nil, running)).To(BeNil(), "not finished")
	g.Expect(newlyFinished(nil, nil)).To(BeNil())
	g.Expect(newlyFinished(running, done)).To(Equal(&finishedSync{phase: "Succeeded", duration: 90 * time.Second}))
	g.Expect(newlyFinished(nil, done)).To(Equal(&finishedSync{phase: "Succeeded", duration: 90 * time.Second}), "first seen finished")
	g.Expect(newlyFinished(done, op(argov1alpha1.OperationSucceeded, t0, &t1))).To(BeNil(), "the same operation, written before")
	g.Expect(newlyFinished(done, op(argov1alpha1.OperationFailed, t2, &t3))).To(Equal(&finishedSync{phase: "Failed", duration: 2 * time.Second}), "the next operation")
	g.Expect(newlyFinished(done, op(argov1alpha1.OperationError, t2, &t3))).To(Equal(&finishedSync{phase: "Error", duration: 2 * time.Second}))
	g.Expect(newlyFinished(nil, op(argov1alpha1.OperationSucceeded, metav1.Time{}, &t1))).To(BeNil(), "no startedAt")
	g.Expect(newlyFinished(nil, op(argov1alpha1.OperationTerminating, t0, &t1))).To(BeNil())
}
