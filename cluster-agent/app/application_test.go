package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
)

const repoURL = "https://git.example.com/org/repo.git"

func TestApplicationLifecycle(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))

	// Create.
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", true)
	g.Expect(row.ID).To(Equal(uid))
	op := e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	g.Expect(op.HumanReadableState).To(Equal("Argo CD Application " + name + " is up to date"))

	app := e.argoApp(name)
	g.Expect(app.Labels).To(Equal(map[string]string{
		argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelApplicationID: uid, argocd.LabelTenantID: tenant.ID,
	}))
	g.Expect(app.Finalizers).To(ConsistOf(argov1alpha1.BackgroundPropagationPolicyFinalizer))
	g.Expect(app.Spec.Source.RepoURL).To(Equal(repoURL))
	g.Expect(app.Spec.Source.Path).To(Equal("apps/one"))
	g.Expect(app.Spec.Destination).To(Equal(argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"}))
	g.Expect(app.Spec.Project).To(Equal(argocd.AppProjectName(tenant.ID)))
	g.Expect(app.Spec.SyncPolicy.Automated).NotTo(BeNil())
	g.Expect(app.Operation).To(BeNil())

	project := &argov1alpha1.AppProject{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: argocd.AppProjectName(tenant.ID)}, project)).To(Succeed())
	g.Expect(project.Spec.SourceRepos).To(Equal([]string{repoURL}))
	g.Expect(project.Spec.Destinations).To(Equal([]argov1alpha1.ApplicationDestination{{Server: argocd.InClusterServer, Namespace: "team-a"}}))

	// Argo CD reports status; the agent never owns or clobbers it.
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		a.Status.Health.Status = argov1alpha1.HealthStatusHealthy
		a.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
	})

	// Update: a changed row and a new operation.
	row.Spec.Source.Path = "apps/two"
	changed, err := e.store.UpsertApplication(e.ctx, e.db, row)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	app = e.argoApp(name)
	g.Expect(app.Spec.Source.Path).To(Equal("apps/two"))
	g.Expect(app.Status.Health.Status).To(Equal(argov1alpha1.HealthStatusHealthy), "status survives the agent's apply")
	g.Expect(app.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeSynced))
	for _, mf := range app.ManagedFields {
		if mf.Manager == argocd.FieldManager {
			g.Expect(mf.FieldsV1.GetRawString()).NotTo(ContainSubstring(`"f:status"`), "the agent owns no status field")
			g.Expect(mf.FieldsV1.GetRawString()).NotTo(ContainSubstring(`"f:operation"`))
		}
	}

	// Delete: the row goes, and an operation for the missing row follows. No Argo CD runs
	// here, so its finalizer stays and the deletion timeout removes it; what Argo CD last
	// listed is named as what may remain.
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		a.Status.Resources = []argov1alpha1.ResourceStatus{
			{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "reader"},
		}
	})
	g.Expect(e.store.DeleteApplication(e.ctx, e.db, tenant.ID, row.ID)).To(Succeed())
	del := e.signal(db.OperationResourceApplication, row.ID, tenant.ID)
	g.Eventually(func(g Gomega) {
		op := e.operation(del.ID)
		g.Expect(op.State).To(Equal(db.OperationInProgress))
		g.Expect(op.HumanReadableState).To(HavePrefix("waiting for Argo CD to prune the resources of Application " + name))
		g.Expect(e.argoApp(name).DeletionTimestamp).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	start := time.Now()
	op = e.completed(del.ID)
	g.Expect(time.Since(start)).To(BeNumerically(">", time.Second), "the agent waited for Argo CD before forcing")
	g.Expect(op.HumanReadableState).To(ContainSubstring("did not finish pruning its resources within 3s, so its finalizer was removed"))
	g.Expect(op.HumanReadableState).To(HaveSuffix(argocd.MessageResourcesMayRemain + ": ConfigMap team-a/settings, ClusterRole reader"))
	err = e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &argov1alpha1.Application{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Application is gone: %v", err)
	g.Eventually(func() bool {
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: argocd.AppProjectName(tenant.ID)}, &argov1alpha1.AppProject{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "the tenant's AppProject goes with its last Application")

	g.Expect(counter(t, "gitops_cluster_agent_operations_total", "Application", "completed")).To(BeNumerically(">=", 3))
}

// TestApplicationDeletedByArgoCD: when Argo CD finishes (removes its finalizer) in time, the
// operation completes without forcing.
func TestApplicationDeletedByArgoCD(t *testing.T) {
	e := startAgent(t, true, func(o *agent.Options) { o.ApplicationDeletionTimeout = time.Minute })
	g := e.g()
	tenant := e.tenant()
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", false)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)

	g.Expect(e.store.DeleteApplication(e.ctx, e.db, tenant.ID, row.ID)).To(Succeed())
	del := e.signal(db.OperationResourceApplication, row.ID, tenant.ID)
	g.Eventually(func() bool { return e.argoApp(name).DeletionTimestamp != nil }, timeout, interval).Should(BeTrue())
	g.Expect(e.operation(del.ID).State).To(Equal(db.OperationInProgress))
	// Argo CD prunes, then removes its finalizer.
	e.argoUpdate(name, func(a *argov1alpha1.Application) { a.Finalizers = nil })
	op := e.completed(del.ID)
	g.Expect(op.HumanReadableState).To(Equal("Argo CD Application " + name + " deleted"))
}

// TestApplicationOperationsCollapse: several operations on one resource are carried out
// together, and all of them complete.
func TestApplicationOperationsCollapse(t *testing.T) {
	e := startAgent(t, true, nil)
	listener := e.listen(notify.OperationChanged)
	tenant := e.tenant()
	uid := uuid.NewString()
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", true)
	var ids []string
	for range 5 {
		ids = append(ids, e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	}
	for _, id := range ids {
		e.completed(id)
	}
	// Every operation's completion was announced to the backend, with what it routes by.
	completed := map[string]int{}
	for p := listener.next(time.Second); p != ""; p = listener.next(time.Second) {
		change, ok := db.ParseOperationChange(p)
		e.g().Expect(ok).To(BeTrue(), p)
		e.g().Expect(change.ResourceType).To(Equal(db.OperationResourceApplication))
		e.g().Expect(change.ResourceID).To(Equal(row.ID))
		if change.State == db.OperationCompleted {
			completed[change.ID]++
		}
	}
	for _, id := range ids {
		e.g().Expect(completed[id]).To(Equal(1), "operation_changed for %s", id)
	}
}

func counter(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			values := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				values = append(values, l.GetValue())
			}
			joined := strings.Join(values, ",")
			for _, want := range labels {
				if !strings.Contains(joined, want) {
					continue metric
				}
			}
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// TestApplicationRecreatedWhileBeingDeleted: a row that comes back while its Argo CD
// Application is still being deleted is applied once the old object is gone, and the
// pending deletion's operation completes with it.
func TestApplicationRecreatedWhileBeingDeleted(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", true)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)

	g.Expect(e.store.DeleteApplication(e.ctx, e.db, tenant.ID, row.ID)).To(Succeed())
	del := e.signal(db.OperationResourceApplication, row.ID, tenant.ID)
	g.Eventually(func() bool { return e.argoApp(name).DeletionTimestamp != nil }, timeout, interval).Should(BeTrue())

	again := e.application(tenant, uid, repoURL, "apps/two", "team-a", true)
	create := e.signal(db.OperationResourceApplication, again.ID, tenant.ID)
	g.Eventually(func() string { return e.operation(create.ID).HumanReadableState }, timeout, interval).
		Should(Equal("waiting for the previous Argo CD Application " + name + " to be deleted"))

	for _, id := range []string{del.ID, create.ID} {
		op := e.completed(id)
		g.Expect(op.HumanReadableState).To(Equal("Argo CD Application " + name + " is up to date"))
	}
	app := e.argoApp(name)
	g.Expect(app.DeletionTimestamp).To(BeNil())
	g.Expect(app.Spec.Source.Path).To(Equal("apps/two"))
}

// TestApplicationDriftIsReverted: a hand edit of an Argo CD Application's spec is put back
// to the row's, once, with no further writes.
func TestApplicationDriftIsReverted(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	row := e.application(tenant, uuid.NewString(), repoURL, "apps/one", "team-a", true)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	e.argoApp(row.Name)
	before := counter(t, "gitops_cluster_agent_application_drift_reverted_total")

	e.argoUpdate(row.Name, func(a *argov1alpha1.Application) {
		a.Spec.Source.Path = "hand-edited"
		a.Spec.SyncPolicy = nil
	})
	g.Eventually(func() string { return e.argoApp(row.Name).Spec.Source.Path }, timeout, interval).Should(Equal("apps/one"))
	app := e.argoApp(row.Name)
	g.Expect(app.Spec.SyncPolicy).NotTo(BeNil())
	g.Expect(app.Spec.SyncPolicy.Automated).NotTo(BeNil())
	g.Expect(counter(t, "gitops_cluster_agent_application_drift_reverted_total")).To(BeNumerically(">", before))

	// Status changes by Argo CD are not drift.
	reverted := counter(t, "gitops_cluster_agent_application_drift_reverted_total")
	e.argoUpdate(row.Name, func(a *argov1alpha1.Application) { a.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced })
	g.Consistently(func() float64 { return counter(t, "gitops_cluster_agent_application_drift_reverted_total") },
		2*time.Second, interval).Should(Equal(reverted))
}

func TestApplicationRefreshIsPassedToArgoCDOnce(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	row := e.application(tenant, uuid.NewString(), repoURL, "apps/one", "team-a", true)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	g.Expect(e.argoApp(row.Name).Annotations).NotTo(HaveKey(argov1alpha1.AnnotationKeyRefresh))

	row.Refresh = "2026-11-26T10:00:00Z"
	changed, err := e.store.UpsertApplication(e.ctx, e.db, row)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	g.Expect(e.argoApp(row.Name).Annotations).To(And(
		HaveKeyWithValue(argov1alpha1.AnnotationKeyRefresh, string(argov1alpha1.RefreshTypeNormal)),
		HaveKeyWithValue(argocd.AnnotationRefreshHandled, row.Refresh)))

	// Argo CD refreshes and removes its annotation: neither the agent's apply nor its drift
	// check asks again for the same request.
	e.argoUpdate(row.Name, func(a *argov1alpha1.Application) { delete(a.Annotations, argov1alpha1.AnnotationKeyRefresh) })
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	g.Consistently(func() map[string]string { return e.argoApp(row.Name).Annotations }, 2*time.Second, interval).
		ShouldNot(HaveKey(argov1alpha1.AnnotationKeyRefresh))
}
