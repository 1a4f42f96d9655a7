package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

func TestApplicationStatusIsRecorded(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	listener := e.listen(notify.ApplicationStateChanged)
	tenant := e.tenant()
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", true)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)

	// The new Application has no status yet: nothing to record until Argo CD reports.
	listener.none(2 * time.Second)
	_, err := e.store.GetApplicationState(e.ctx, e.db, tenant.ID, row.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))

	// Argo CD reports.
	now := metav1.Now()
	report := func(a *argov1alpha1.Application) {
		a.Status.Health = argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusDegraded, LastTransitionTime: &now}
		a.Status.Sync = argov1alpha1.SyncStatus{
			Status:   argov1alpha1.SyncStatusCodeOutOfSync,
			Revision: "0123456789abcdef",
			ComparedTo: argov1alpha1.ComparedTo{
				Source:      *a.Spec.Source,
				Destination: a.Spec.Destination,
			},
		}
		a.Status.Resources = []argov1alpha1.ResourceStatus{
			{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "config", Status: argov1alpha1.SyncStatusCodeSynced,
				Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusHealthy}},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web", Status: argov1alpha1.SyncStatusCodeOutOfSync,
				Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusDegraded, Message: "Deployment exceeded its progress deadline"}},
		}
		a.Status.Conditions = []argov1alpha1.ApplicationCondition{
			{Type: argov1alpha1.ApplicationConditionSyncError, Message: "one or more objects failed to apply", LastTransitionTime: &now},
		}
		a.Status.OperationState = &argov1alpha1.OperationState{
			Operation: argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "0123456789abcdef"}},
			Phase:     argov1alpha1.OperationFailed, Message: "one or more objects failed to apply",
			StartedAt: now, FinishedAt: &now,
		}
		a.Status.ReconciledAt = &now
	}
	e.argoUpdate(name, report)
	g.Expect(listener.next(timeout)).To(Equal(row.ID), "one notification for the change")

	st, err := e.store.GetApplicationState(e.ctx, e.db, tenant.ID, row.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Health).To(Equal(db.HealthDegraded))
	g.Expect(st.HealthMessage).To(Equal("Deployment/web: Deployment exceeded its progress deadline"))
	g.Expect(st.SyncStatus).To(Equal(db.SyncStatusOutOfSync))
	g.Expect(st.Revision).To(Equal("0123456789abcdef"))
	g.Expect(st.Resources).To(HaveLen(2))
	g.Expect(st.Resources[1].Health.Message).To(Equal("Deployment exceeded its progress deadline"))
	g.Expect(st.Conditions).To(HaveLen(1))
	g.Expect(st.Conditions[0].Type).To(Equal(argov1alpha1.ApplicationConditionSyncError))
	g.Expect(st.ReconciledState).NotTo(BeNil())
	g.Expect(st.ReconciledState.Source.Path).To(Equal("apps/one"))
	g.Expect(st.OperationState).NotTo(BeNil())
	g.Expect(st.OperationState.Phase).To(Equal(argov1alpha1.OperationFailed))
	written := st.UpdatedAt

	// Argo CD refreshes without a change: no write, no notification.
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		later := metav1.NewTime(now.Add(time.Minute))
		a.Status.ReconciledAt = &later
	})
	listener.none(2 * time.Second)
	st, err = e.store.GetApplicationState(e.ctx, e.db, tenant.ID, row.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.UpdatedAt).To(Equal(written))

	// Healthy again: one more notification.
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		a.Status.Health.Status = argov1alpha1.HealthStatusHealthy
		a.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
	})
	g.Expect(listener.next(timeout)).To(Equal(row.ID))
	listener.none(time.Second)
	st, err = e.store.GetApplicationState(e.ctx, e.db, tenant.ID, row.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Health).To(Equal(db.HealthHealthy))
	g.Expect(st.HealthMessage).To(BeEmpty())
}

// TestApplicationStatusWithoutRow: an Argo CD Application whose row does not exist (or is
// another instance's) is not recorded and is not an error.
func TestApplicationStatusWithoutRow(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	listener := e.listen(notify.ApplicationStateChanged)
	tenant := e.tenant()
	stray := uuid.NewString()
	app := argocd.Application(e.ns, argocd.ApplicationName(types.UID(stray)), stray, tenant.ID, argocd.ApplicationSpec(argocd.ApplicationInput{
		RepoURL: repoURL, Path: "p", Destination: argocd.Destination{Namespace: "x"}, Project: argocd.AppProjectName(tenant.ID),
	}))
	app.Finalizers = nil
	g.Expect(e.c.Create(e.ctx, app)).To(Succeed())
	listener.none(2 * time.Second)
}

// listener is a LISTEN connection to the test's database.
type listener struct {
	t    *testing.T
	conn *pgx.Conn
}

func (e *env) listen(channel string) *listener {
	e.t.Helper()
	cc, err := e.dbCfg.ConnConfig()
	e.g().Expect(err).NotTo(HaveOccurred())
	conn, err := pgx.ConnectConfig(e.ctx, cc)
	e.g().Expect(err).NotTo(HaveOccurred())
	e.t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(e.ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
	e.g().Expect(err).NotTo(HaveOccurred())
	return &listener{t: e.t, conn: conn}
}

// next waits for a notification and returns its payload ("" on timeout).
func (l *listener) next(wait time.Duration) string {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		return ""
	}
	return n.Payload
}

// none fails if a notification arrives within wait.
func (l *listener) none(wait time.Duration) {
	l.t.Helper()
	if p := l.next(wait); p != "" {
		l.t.Fatalf("unexpected notification %q", p)
	}
}
