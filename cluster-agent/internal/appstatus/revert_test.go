package appstatus

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	// PostgreSQL too: Reconcile writes application_states.
	os.Exit(testenv.Main(testenv.Options{WithoutServiceCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

// driftedApplication applies a row's Application, then edits its spec by hand, and
// returns the row and the edited Application as the reconciler would have read it.
func driftedApplication(t *testing.T, r *Reconciler, name string) (*db.Application, *argov1alpha1.Application) {
	t.Helper()
	g, ctx := NewWithT(t), context.Background()
	row := &db.Application{ID: name + "-id", Name: name, TenantID: "tenant",
		Spec: argocd.ApplicationSpec(argocd.ApplicationInput{
			RepoURL: "https://example.com/repo.git", Path: "app", Destination: argocd.Destination{Namespace: "target"},
		})}
	g.Expect(ssa.Apply(ctx, cp.Client, r.Identity.Application(row.Name, row.ID, row.TenantID, row.Spec))).To(Succeed())
	read := &argov1alpha1.Application{}
	g.Expect(cp.Client.Get(ctx, client.ObjectKey{Namespace: r.Identity.Namespace, Name: name}, read)).To(Succeed())
	read.Spec.Source.Path = "edited-by-hand"
	g.Expect(cp.Client.Update(ctx, read)).To(Succeed())
	return row, read
}

func TestRevertDriftPutsBackTheRowsSpec(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	r := &Reconciler{Client: cp.Client, Identity: engine.Identity{Namespace: cp.NewNamespace(t, "argocd-")}}
	row, read := driftedApplication(t, r, "gitopsdepl-reverted")

	stale, err := r.revertDrift(ctx, read, row)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stale).To(BeFalse())
	live := &argov1alpha1.Application{}
	g.Expect(cp.Client.Get(ctx, client.ObjectKeyFromObject(read), live)).To(Succeed())
	g.Expect(live.Spec.Source.Path).To(Equal("app"))
}

func TestRevertDriftNeverRecreatesAnApplicationThatWent(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	r := &Reconciler{Client: cp.Client, Identity: engine.Identity{Namespace: cp.NewNamespace(t, "argocd-")}}
	row, read := driftedApplication(t, r, "gitopsdepl-released")

	// Released (finalizers removed) and deleted after the reconciler read it.
	gone := read.DeepCopy()
	gone.Finalizers = nil
	g.Expect(cp.Client.Update(ctx, gone)).To(Succeed())
	g.Expect(cp.Client.Delete(ctx, gone)).To(Succeed())

	stale, err := r.revertDrift(ctx, read, row)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stale).To(BeTrue(), "the reconciler reads it again, and finds it gone")
	err = cp.Client.Get(ctx, client.ObjectKeyFromObject(read), &argov1alpha1.Application{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Application was created again: %v", err)
}

func TestRevertDriftReadsAnApplicationChangedSinceAgain(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	r := &Reconciler{Client: cp.Client, Identity: engine.Identity{Namespace: cp.NewNamespace(t, "argocd-")}}
	row, read := driftedApplication(t, r, "gitopsdepl-changed")

	newer := read.DeepCopy()
	newer.Spec.Source.Path = "changed-again"
	g.Expect(cp.Client.Update(ctx, newer)).To(Succeed())

	stale, err := r.revertDrift(ctx, read, row)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stale).To(BeTrue(), "the reconciler reads it again, and reverts the newer change then")
	live := &argov1alpha1.Application{}
	g.Expect(cp.Client.Get(ctx, client.ObjectKeyFromObject(read), live)).To(Succeed())
	g.Expect(live.Spec.Source.Path).To(Equal("changed-again"), "a stale read was applied")
}
