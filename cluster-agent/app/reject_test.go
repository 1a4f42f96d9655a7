package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

func TestRejectsOperationsThatAreNotTheInstances(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()

	otherCluster, err := e.store.GetOrCreateEngineCluster(e.ctx, e.db, "other-cluster", "")
	g.Expect(err).NotTo(HaveOccurred())
	onOtherCluster := &db.EngineInstance{EngineClusterID: otherCluster.ID, NamespaceName: e.ns, NamespaceUID: uuid.NewString()}
	g.Expect(e.store.CreateEngineInstance(e.ctx, e.db, onOtherCluster)).To(Succeed())
	earlierNamespace := &db.EngineInstance{EngineClusterID: e.id.ClusterID, NamespaceName: e.ns, NamespaceUID: uuid.NewString()}
	g.Expect(e.store.CreateEngineInstance(e.ctx, e.db, earlierNamespace)).To(Succeed())
	otherNamespace := &db.EngineInstance{EngineClusterID: e.id.ClusterID, NamespaceName: "argocd-elsewhere", NamespaceUID: uuid.NewString()}
	g.Expect(e.store.CreateEngineInstance(e.ctx, e.db, otherNamespace)).To(Succeed())

	cases := []struct {
		instance *db.EngineInstance
		message  string
	}{
		{onOtherCluster, `rejected: operation belongs to an engine instance on another engine cluster (namespace "` + e.ns + `")`},
		{earlierNamespace, `rejected: operation belongs to the engine instance of an earlier namespace "` + e.ns + `"`},
		{otherNamespace, `rejected: operation belongs to another engine instance (namespace "argocd-elsewhere")`},
	}
	for _, c := range cases {
		app := e.application(tenant, uuid.NewString(), repoURL, "p", "team-a", true)
		op := &db.Operation{EngineInstanceID: c.instance.ID, ResourceType: db.OperationResourceApplication,
			ResourceID: app.ID, OwnerTenantID: tenant.ID, HumanReadableState: "waiting"}
		g.Expect(e.store.CreateOperation(e.ctx, e.db, op)).To(Succeed())
		e.createCR(op.ID)
		cr := e.rejected(op.ID)
		g.Expect(cr.Status.Message).To(HavePrefix(c.message))

		row := e.operation(op.ID)
		g.Expect(row.State).To(Equal(db.OperationWaiting), "the row is untouched")
		g.Expect(row.HumanReadableState).To(Equal("waiting"))
		g.Expect(row.UpdatedAt).To(Equal(op.UpdatedAt))
	}

	// An id without a row, and no id at all.
	missing := uuid.NewString()
	e.createCR(missing)
	g.Expect(e.rejected(missing).Status.Message).To(Equal("rejected: operation " + missing + " does not exist in the database"))
	e.createCR("not-a-uuid")
	g.Expect(e.rejected("not-a-uuid").Status.Message).To(Equal("rejected: spec.operationID is not a valid operation id"))

	// Nothing was deployed for the rejected operations.
	g.Consistently(func(g Gomega) {
		list := &argov1alpha1.ApplicationList{}
		g.Expect(e.c.List(e.ctx, list, client.InNamespace(e.ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}, time.Second, interval).Should(Succeed())
	g.Expect(counter(t, "gitops_cluster_agent_operations_total", "rejected")).To(BeNumerically(">=", 5))
}

func (e *env) rejected(operationID string) *v1.Operation {
	e.t.Helper()
	cr := &v1.Operation{}
	e.g().Eventually(func(g Gomega) {
		g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: v1.OperationName(operationID)}, cr)).To(Succeed())
		g.Expect(cr.Status.State).To(Equal(v1.OperationStateFailed))
		g.Expect(cr.Status.Message).To(HavePrefix("rejected: "))
	}, timeout, interval).Should(Succeed())
	return cr
}

func TestRegisterIsIdempotent(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	again, err := engine.Register(e.ctx, e.c, e.db, e.store, engine.Options{Namespace: e.ns, ClusterName: "default"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(e.id))
	instance, err := e.store.GetEngineInstance(e.ctx, e.db, e.id.InstanceID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(instance.NamespaceName).To(Equal(e.ns))
	g.Expect(instance.NamespaceUID).To(Equal(e.id.NamespaceUID))
	g.Expect(instance.EngineClusterID).To(Equal(e.id.ClusterID))

	_, err = engine.Register(e.ctx, e.c, e.db, e.store, engine.Options{Namespace: e.ns, ClusterName: "another"})
	g.Expect(err).To(MatchError(db.ErrConflict), "a namespace is one cluster's engine instance")
}
