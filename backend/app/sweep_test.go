package app_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend/app"
)

// TestSweepRemovesWhatWasDeletedWhileTheBackendWasDown runs a backend, stops it, deletes a
// GitOpsDeployment and a whole tenant namespace meanwhile, and starts a backend with a short
// sweep interval: the sweep removes their rows with deletion Operations (no cluster-agent
// runs here) and leaves a deployment that still exists alone.
func TestSweepRemovesWhatWasDeletedWhileTheBackendWasDown(t *testing.T) {
	t.Parallel()
	h := &harness{t: t, g: NewWithT(t), ctx: context.Background()}
	cfg := dbtest.NewConfig(t)
	h.db = dbtest.Open(t, cfg)
	keyring := testKeyring(t)
	h.store = db.NewStore(keyring.ring)
	h.tenant = cp.NewNamespace(t, "tenant-")
	h.engine = cp.NewNamespace(t, "argocd-")
	doomedNS := cp.NewNamespace(t, "doomed-")
	options := func(sweep time.Duration) *app.Options {
		return &app.Options{
			Database: cfg, EngineNamespace: h.engine, EngineCluster: "default", MaxConcurrentReconciles: 2,
			OperationRetention: time.Minute, KeysFile: keyring.file, SweepInterval: sweep,
		}
	}
	before := sweepCounter(t, "gitops_backend_sweep_removed_total", "GitOpsDeployment")

	var gone, control, inDoomed *v1.GitOpsDeployment
	var doomedTenant *db.Tenant
	t.Run("first backend", func(t *testing.T) {
		cp.RunManager(t, []string{h.tenant, h.engine, doomedNS}, options(0).Setup, app.ManagerOptions) // stops when this subtest ends
		gone = h.newDeployment("gone", v1.GitOpsDeploymentSpecTypeAutomated)
		control = h.newDeployment("control", v1.GitOpsDeploymentSpecTypeAutomated)
		h.application(gone.UID)
		h.application(control.UID)
		inDoomed = &v1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: doomedNS},
			Spec: v1.GitOpsDeploymentSpec{
				Source: v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "environments/dev"},
				Type:   v1.GitOpsDeploymentSpecTypeAutomated,
			},
		}
		h.g.Expect(cp.Client.Create(h.ctx, inDoomed)).To(Succeed())
		ns := &corev1.Namespace{}
		h.g.Expect(cp.Client.Get(h.ctx, keyOf("", doomedNS), ns)).To(Succeed())
		h.g.Eventually(func() error {
			var err error
			doomedTenant, err = h.store.GetTenantByNamespaceUID(h.ctx, h.db, string(ns.UID))
			if err != nil {
				return err
			}
			_, err = h.store.GetApplication(h.ctx, h.db, doomedTenant.ID, string(inDoomed.UID))
			return err
		}, eventually, poll).Should(Succeed())
		// Every Operation CR is made, so the second backend has nothing left to catch up on.
		for _, uid := range []string{string(gone.UID), string(control.UID), string(inDoomed.UID)} {
			h.g.Eventually(func() []db.Operation { return h.operations(db.OperationResourceApplication, uid) }, eventually, poll).Should(HaveLen(1))
		}
	})

	// While the backend is down: the deployment goes, and the namespace with its deployment.
	h.g.Expect(cp.Client.Delete(h.ctx, h.get(gone))).To(Succeed())
	deleteNamespace(h, doomedNS)
	h.g.Expect(apierrors.IsNotFound(cp.Client.Get(h.ctx, keyOf(h.tenant, "gone"), &v1.GitOpsDeployment{}))).To(BeTrue())
	tenant := h.tenantRow()
	_, err := h.store.GetApplication(h.ctx, h.db, tenant.ID, string(gone.UID))
	h.g.Expect(err).NotTo(HaveOccurred(), "nobody removed the row yet")

	cp.RunManager(t, []string{h.tenant, h.engine}, options(time.Second).Setup, app.ManagerOptions)

	// The deleted deployment: row and mapping gone, a deletion Operation with its CR.
	h.g.Eventually(func() error {
		_, err := h.store.GetApplication(h.ctx, h.db, tenant.ID, string(gone.UID))
		return err
	}, eventually, poll).Should(MatchError(db.ErrNotFound))
	_, err = h.store.GetDeploymentMapping(h.ctx, h.db, tenant.ID, string(gone.UID))
	h.g.Expect(err).To(MatchError(db.ErrNotFound))
	ops := h.operations(db.OperationResourceApplication, string(gone.UID))
	h.g.Expect(ops).To(HaveLen(2))
	deletion := ops[0]
	if ops[1].CreatedAt.After(deletion.CreatedAt) {
		deletion = ops[1]
	}
	h.signalled(deletion)

	// The gone namespace's tenant: removed with its rows, a deletion Operation for its
	// application and one for its AppProject.
	h.g.Eventually(func() error {
		_, err := h.store.GetTenant(h.ctx, h.db, doomedTenant.ID)
		return err
	}, eventually, poll).Should(MatchError(db.ErrNotFound))
	h.g.Expect(h.operations(db.OperationResourceApplication, string(inDoomed.UID))).To(HaveLen(2))
	h.g.Expect(h.operations(db.OperationResourceAppProject, doomedTenant.ID)).To(HaveLen(1))

	// The deployment that exists is untouched, across several sweeps.
	h.g.Consistently(func() error {
		_, err := h.store.GetApplication(h.ctx, h.db, tenant.ID, string(control.UID))
		return err
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	h.g.Expect(h.operations(db.OperationResourceApplication, string(control.UID))).To(HaveLen(1))
	h.g.Expect(sweepCounter(t, "gitops_backend_sweep_removed_total", "GitOpsDeployment")).To(BeNumerically(">=", before+1))
	h.g.Expect(sweepCounter(t, "gitops_backend_sweep_runs_total", "")).To(BeNumerically(">=", 2))
}

// deleteNamespace deletes a namespace as the namespace controller would (this package's
// control plane runs no kube-controller-manager): its CRs first, then its finalizer.
func deleteNamespace(h *harness, name string) {
	h.t.Helper()
	h.g.Expect(cp.Client.DeleteAllOf(h.ctx, &v1.GitOpsDeployment{}, client.InNamespace(name))).To(Succeed())
	h.g.Eventually(func() ([]v1.GitOpsDeployment, error) {
		list := &v1.GitOpsDeploymentList{}
		err := cp.Client.List(h.ctx, list, client.InNamespace(name))
		return list.Items, err
	}, eventually, poll).Should(BeEmpty())
	ns := &corev1.Namespace{}
	h.g.Expect(cp.Client.Get(h.ctx, keyOf("", name), ns)).To(Succeed())
	h.g.Expect(cp.Client.Delete(h.ctx, ns)).To(Succeed())
	h.g.Expect(cp.Client.Get(h.ctx, keyOf("", name), ns)).To(Succeed())
	ns.Spec.Finalizers = nil
	h.g.Expect(cp.Client.SubResource("finalize").Update(h.ctx, ns)).To(Succeed())
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(h.ctx, keyOf("", name), &corev1.Namespace{}))
	}, eventually, poll).Should(BeTrue(), "namespace %s is deleted", name)
}

// sweepCounter reads a counter of the controller-runtime registry (kind "": unlabelled).
func sweepCounter(t *testing.T, name, kind string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if kind == "" {
				return m.GetCounter().GetValue()
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestSweepReconcilesAgainWhatLostItsRows deletes the rows a reconcile of a GitOpsDeployment
// wrote, as a database that lost its last transactions would (restored from a backup, or
// failed over to an asynchronous replica): nothing about the CR changes, so only the
// sweep, which finds a CR without rows, brings them back. A deployment whose rows are there
// is not touched.
func TestSweepReconcilesAgainWhatLostItsRows(t *testing.T) {
	t.Parallel()
	h := startBackend(t, func(o *app.Options) { o.SweepInterval = time.Second })
	before := sweepCounter(t, "gitops_backend_sweep_requeued_total", "GitOpsDeployment")
	lost := h.newDeployment("lost", v1.GitOpsDeploymentSpecTypeAutomated)
	control := h.newDeployment("control", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(lost.UID)
	h.application(control.UID)
	tenant := h.tenantRow()

	// The application row goes, and its mapping with it (ON DELETE CASCADE); so does the
	// operation written in the same transaction.
	_, err := h.db.NewDelete().Model((*db.Application)(nil)).Where("tenant_id = ? AND id = ?", tenant.ID, string(lost.UID)).Exec(h.ctx)
	h.g.Expect(err).NotTo(HaveOccurred())
	_, err = h.db.NewDelete().Model((*db.Operation)(nil)).Where("resource_id = ?", string(lost.UID)).Exec(h.ctx)
	h.g.Expect(err).NotTo(HaveOccurred())

	app := h.application(lost.UID)
	h.g.Expect(app.Spec.Source.Path).To(Equal(lost.Spec.Source.Path))
	_, err = h.store.GetDeploymentMapping(h.ctx, h.db, tenant.ID, string(lost.UID))
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Eventually(func() []db.Operation { return h.operations(db.OperationResourceApplication, string(lost.UID)) }, eventually, poll).Should(HaveLen(1))
	h.g.Expect(sweepCounter(t, "gitops_backend_sweep_requeued_total", "GitOpsDeployment")).To(BeNumerically(">=", before+1))

	h.g.Consistently(func() []db.Operation {
		return h.operations(db.OperationResourceApplication, string(control.UID))
	}, 3*time.Second, 200*time.Millisecond).Should(HaveLen(1))
}
