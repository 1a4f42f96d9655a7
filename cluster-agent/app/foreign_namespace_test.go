package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// A tenant that creates an Operation CR in its own namespace, naming a real waiting
// operation of the engine instance (another tenant's application), gets nothing done: the
// agent only acts on Operation CRs in its engine namespace.
func TestIgnoresOperationCRsOutsideTheEngineNamespace(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	// On start the agent takes its engine's signal once: for a few looks 50 ms apart it
	// queues every Waiting operation it finds, signalled or not. The operation below must
	// come after that, so that only a CR could bring it to the agent.
	time.Sleep(time.Second)
	victim := e.tenant()
	attackerNS := cp.NewNamespace(t, "tenant-")

	app := e.application(victim, uuid.NewString(), repoURL, "p", "team-b", true)
	op := &db.Operation{EngineInstanceID: e.id.InstanceID, ResourceType: db.OperationResourceApplication,
		ResourceID: app.ID, OwnerTenantID: victim.ID, HumanReadableState: "waiting", GCExpirationSeconds: 3600}
	g.Expect(e.store.CreateOperation(e.ctx, e.db, op)).To(Succeed())
	created := e.operation(op.ID)

	forged := &v1.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: v1.OperationName(op.ID), Namespace: attackerNS},
		Spec:       v1.OperationSpec{OperationID: op.ID},
	}
	g.Expect(e.c.Create(e.ctx, forged)).To(Succeed())

	g.Consistently(func(g Gomega) {
		// No Argo CD Application, in the engine namespace or anywhere else.
		list := &argov1alpha1.ApplicationList{}
		g.Expect(e.c.List(e.ctx, list)).To(Succeed())
		for _, a := range list.Items {
			g.Expect(a.Name).NotTo(Equal(app.Name), "Application %s/%s", a.Namespace, a.Name)
		}
		// The row is untouched.
		row, err := e.store.GetOperation(e.ctx, e.db, op.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(row.State).To(Equal(db.OperationWaiting))
		g.Expect(row.HumanReadableState).To(Equal("waiting"))
		g.Expect(row.UpdatedAt).To(Equal(created.UpdatedAt))
		// The forged CR is neither answered nor removed.
		cr := &v1.Operation{}
		g.Expect(e.c.Get(e.ctx, client.ObjectKeyFromObject(forged), cr)).To(Succeed())
		g.Expect(cr.Status).To(BeZero())
	}, 5*time.Second, interval).Should(Succeed())

	// The same operation signalled the proper way is carried out, so the checks above
	// could have failed.
	e.createCR(op.ID)
	e.completed(op.ID)
	g.Expect(e.argoApp(app.Name).Spec.Destination.Namespace).To(Equal("team-b"))
	cr := &v1.Operation{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKeyFromObject(forged), cr)).To(Succeed())
	g.Expect(cr.Status).To(BeZero(), "the forged CR still has no status")
}
