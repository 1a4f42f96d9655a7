package app_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend/app"
)

func keyOf(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}

func (h *harness) newDeployment(name string, typ v1.GitOpsDeploymentSpecType, mutate ...func(*v1.GitOpsDeployment)) *v1.GitOpsDeployment {
	h.t.Helper()
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.tenant},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "environments/dev"},
			Type:   typ,
		},
	}
	for _, m := range mutate {
		m(depl)
	}
	h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
	return depl
}

// application waits for the application row of a GitOpsDeployment.
func (h *harness) application(uid types.UID) *db.Application {
	h.t.Helper()
	tenant := h.tenantRow()
	var app *db.Application
	h.g.Eventually(func() error {
		var err error
		app, err = h.store.GetApplication(h.ctx, h.db, tenant.ID, string(uid))
		return err
	}, eventually, poll).Should(Succeed())
	return app
}

func (h *harness) operations(typ db.OperationResourceType, id string) []db.Operation {
	h.t.Helper()
	ops, err := h.store.ListOperationsForResource(h.ctx, h.db, typ, id)
	h.g.Expect(err).NotTo(HaveOccurred())
	return ops
}

// signalled waits until an Operation CR stands for op: the CR of its engine instance's
// signal, which stays up here (no cluster-agent takes it down), so that one CR stands for
// every operation written after the first.
func (h *harness) signalled(op db.Operation) {
	h.t.Helper()
	h.g.Expect(op.State).To(Equal(db.OperationWaiting))
	h.g.Eventually(func(g Gomega) {
		sig, err := h.store.GetSignal(h.ctx, h.db, op.EngineInstanceID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sig.CRCreated).To(BeTrue())
		cr := &v1.Operation{}
		g.Expect(cp.Client.Get(h.ctx, keyOf(h.engine, v1.OperationName(sig.OperationID)), cr)).To(Succeed())
		g.Expect(cr.Spec.OperationID).To(Equal(sig.OperationID))
	}, eventually, poll).Should(Succeed())
}

// finish marks an operation Completed as the cluster-agent does, with its notification.
func (h *harness) finish(op db.Operation) {
	h.t.Helper()
	_, err := h.store.UpdateOperationStates(h.ctx, h.db, op.EngineInstanceID, []string{op.ID}, db.OperationCompleted, "done", notify.OperationChanged)
	h.g.Expect(err).NotTo(HaveOccurred())
}

// update changes a GitOpsDeployment, retrying on conflicts with the controller's status writes.
func (h *harness) update(depl *v1.GitOpsDeployment, mutate func(*v1.GitOpsDeployment)) {
	h.t.Helper()
	h.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := h.get(depl)
		mutate(latest)
		return cp.Client.Update(h.ctx, latest)
	})).To(Succeed())
}

func (h *harness) get(depl *v1.GitOpsDeployment) *v1.GitOpsDeployment {
	h.t.Helper()
	got := &v1.GitOpsDeployment{}
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(depl), got)).To(Succeed())
	return got
}

func TestDeploymentBecomesApplicationRowAndOperation(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("app", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.Source.TargetRevision = "main"
		d.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue}}
	})
	app := h.application(depl.UID)
	tenant := h.tenantRow()

	h.g.Expect(app.Name).To(Equal("gitopsdepl-" + string(depl.UID)))
	spec := app.Spec
	h.g.Expect(spec.Source.RepoURL).To(Equal("https://github.com/example/gitops"))
	h.g.Expect(spec.Source.Path).To(Equal("environments/dev"))
	h.g.Expect(spec.Source.TargetRevision).To(Equal("main"))
	h.g.Expect(spec.Destination).To(Equal(argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: h.tenant}))
	h.g.Expect(spec.Project).To(Equal("app-project-" + tenant.ID))
	h.g.Expect(spec.SyncPolicy.Automated).To(Equal(&argov1alpha1.SyncPolicyAutomated{Prune: true, SelfHeal: true, AllowEmpty: true}))
	h.g.Expect([]string(spec.SyncPolicy.SyncOptions)).To(Equal([]string{"PrunePropagationPolicy=background", "CreateNamespace=true"}))
	h.g.Expect(spec.SyncPolicy.Retry.Limit).To(BeEquivalentTo(-1))
	h.g.Expect(spec.SyncPolicy.Retry.Backoff.Duration).To(Equal("5s"))
	h.g.Expect(*spec.SyncPolicy.Retry.Backoff.Factor).To(BeEquivalentTo(2))
	h.g.Expect(spec.SyncPolicy.Retry.Backoff.MaxDuration).To(Equal("3m"))

	ops := h.operations(db.OperationResourceApplication, string(depl.UID))
	h.g.Expect(ops).To(HaveLen(1))
	h.g.Expect(ops[0].State).To(Equal(db.OperationWaiting))
	h.g.Expect(ops[0].OwnerTenantID).To(Equal(tenant.ID))
	h.g.Expect(ops[0].GCExpirationSeconds).To(Equal(60), "the harness's --operation-retention")
	cr := &v1.Operation{}
	h.g.Eventually(func() error {
		return cp.Client.Get(h.ctx, keyOf(h.engine, v1.OperationName(ops[0].ID)), cr)
	}, eventually, poll).Should(Succeed())
	h.g.Expect(cr.Spec.OperationID).To(Equal(ops[0].ID))

	repos, err := h.store.ListAppProjectRepositories(h.ctx, h.db, tenant.ID)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(repos).To(ConsistOf("https://github.com/example/gitops"))
}

func TestManualDeploymentHasNoAutomatedPolicy(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("manual", v1.GitOpsDeploymentSpecTypeManual)
	app := h.application(depl.UID)
	h.g.Expect(app.Spec.SyncPolicy.Automated).To(BeNil())
}

func TestOnlyRealChangesCreateOperations(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("app", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(depl.UID)
	h.g.Eventually(func() []db.Operation { return h.operations(db.OperationResourceApplication, string(depl.UID)) }, eventually, poll).Should(HaveLen(1))

	// A status notification reconciles the deployment again: no new operation.
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc"})
	h.g.Eventually(func() v1.SyncStatusCode { return h.get(depl).Status.Sync.Status }, eventually, poll).Should(Equal(v1.SyncStatusCodeSynced))
	h.g.Expect(h.operations(db.OperationResourceApplication, string(depl.UID))).To(HaveLen(1))
	// Once the operation is no longer Waiting, it does not even open a transaction: the rows
	// are read in one statement and found as the deployment asks.
	// Its state comes with the rows, in the same statement.
	h.finish(h.operations(db.OperationResourceApplication, string(depl.UID))[0])
	began, stateReads := h.transactions(), h.stateReads()
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "def"})
	h.g.Eventually(func() string { return h.get(depl).Status.Sync.Revision }, eventually, poll).Should(Equal("def"))
	h.g.Expect(h.transactions()).To(Equal(began), "no transaction for a deployment whose rows are as it asks")
	h.g.Expect(h.stateReads()).To(Equal(stateReads), "no read of the state apart from the rows")

	// A spec change that changes the Application does create one.
	h.update(depl, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "environments/staging" })
	h.g.Eventually(func() []db.Operation { return h.operations(db.OperationResourceApplication, string(depl.UID)) }, eventually, poll).Should(HaveLen(2))
	h.g.Expect(h.application(depl.UID).Spec.Source.Path).To(Equal("environments/staging"))
	h.g.Expect(h.transactions()).To(BeNumerically(">", began), "written in a transaction")
}

// A deployment created while the backend watches is written at once: its first reconcile
// does not look for a row that cannot exist yet; the next one, bringing Argo CD's report,
// reads the row it wrote.
func TestANewDeploymentIsWrittenWithoutLookingForItsRow(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	// Once the backend has written a first deployment, its watch is past its initial list.
	first := h.newDeployment("first", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(first.UID)
	before := h.appliedReads()
	depl := h.newDeployment("app", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(depl.UID)
	op := h.onlyOperation(depl.UID)
	h.g.Expect(h.appliedReads()).To(Equal(before), "the first reconcile looked for the row")

	h.finish(op)
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc"})
	h.g.Eventually(func() string { return h.get(depl).Status.Sync.Revision }, eventually, poll).Should(Equal("abc"))
	h.g.Expect(h.appliedReads()).To(BeNumerically(">", before), "the status-bringing reconcile reads the row it wrote")
}

// appliedReads counts the reads of a deployment's rows before writing (GetAppliedApplication).
func (h *harness) appliedReads() int64 { return h.statementCalls(`%as waiting%`) }

// transactions counts the transactions begun in the harness's database so far.
func (h *harness) transactions() int64 { return h.statementCalls("begin") }

// stateReads counts the reads of an application's state on its own (GetApplicationState).
func (h *harness) stateReads() int64 { return h.statementCalls(`select "appstate".%`) }

// statementCalls counts the calls of the statements like pattern (lower case) in the
// harness's database so far.
func (h *harness) statementCalls(pattern string) int64 {
	h.t.Helper()
	_, err := h.db.ExecContext(h.ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	h.g.Expect(err).NotTo(HaveOccurred())
	var n int64
	h.g.Expect(h.db.NewRaw(`SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = current_database() AND lower(s.query) LIKE ?`, pattern).Scan(h.ctx, &n)).To(Succeed())
	return n
}

// writeState stores an application state as the cluster-agent does, with its notification.
func (h *harness) writeState(uid types.UID, st *db.ApplicationState) {
	h.t.Helper()
	st.ApplicationID = string(uid)
	_, err := h.store.RecordApplicationState(h.ctx, h.db, st, notify.ApplicationStateChanged)
	h.g.Expect(err).NotTo(HaveOccurred())
}

func TestStatusFollowsApplicationState(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("app", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(depl.UID)

	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	h.writeState(depl.UID, &db.ApplicationState{
		Health: db.HealthDegraded, HealthMessage: "deployment has no ready replicas",
		SyncStatus: db.SyncStatusOutOfSync, Revision: "0123abcd",
		Resources: []argov1alpha1.ResourceStatus{{
			Version: "v1", Kind: "ConfigMap", Namespace: h.tenant, Name: "settings",
			Status: argov1alpha1.SyncStatusCodeSynced, Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusHealthy},
		}},
		Conditions: []argov1alpha1.ApplicationCondition{{Type: argov1alpha1.ApplicationConditionSyncError, Message: "one or more objects failed to apply"}},
		ReconciledState: &argov1alpha1.ComparedTo{
			Source:      argov1alpha1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "environments/dev", TargetRevision: "HEAD"},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: h.tenant},
		},
		OperationState: &argov1alpha1.OperationState{
			Phase: "Failed", Message: "one or more objects failed to apply", StartedAt: started,
			Operation: argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "0123abcd", Prune: true}},
		},
	})

	h.g.Eventually(func() v1.HealthStatusCode { return h.get(depl).Status.Health.Status }, eventually, poll).Should(Equal(v1.HealthStatusCodeDegraded))
	status := h.get(depl).Status
	h.g.Expect(status.Health.Message).To(Equal("deployment has no ready replicas"))
	h.g.Expect(status.Sync).To(Equal(v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync, Revision: "0123abcd"}))
	h.g.Expect(status.Resources).To(Equal([]v1.ResourceStatus{{
		Version: "v1", Kind: "ConfigMap", Namespace: h.tenant, Name: "settings",
		Status: v1.SyncStatusCodeSynced, Health: &v1.HealthStatus{Status: v1.HealthStatusCodeHealthy},
	}}))
	h.g.Expect(status.ReconciledState.Source).To(Equal(v1.GitOpsDeploymentSource{RepoURL: "https://github.com/example/gitops", Path: "environments/dev", Branch: "HEAD"}))
	h.g.Expect(status.ReconciledState.Destination).To(Equal(v1.GitOpsDeploymentDestination{Namespace: h.tenant}))
	h.g.Expect(status.OperationState).NotTo(BeNil())
	h.g.Expect(string(status.OperationState.Phase)).To(Equal("Failed"))
	h.g.Expect(status.OperationState.Operation.Sync.Revision).To(Equal("0123abcd"))
	h.g.Expect(status.ObservedGeneration).To(Equal(depl.Generation))
	syncErr := findCondition(status.Conditions, v1.GitOpsDeploymentConditionSyncError)
	h.g.Expect(syncErr).NotTo(BeNil())
	h.g.Expect(syncErr.Status).To(Equal(v1.GitOpsConditionStatusTrue))
	h.g.Expect(syncErr.Reason).To(Equal(v1.GitOpsDeploymentReasonSyncError))
	h.g.Expect(syncErr.Message).To(Equal("one or more objects failed to apply"))
	// Argo CD's first report is the Ready condition's news; its failure has its own Event.
	h.g.Eventually(func() []string { return h.events(depl) }, eventually, poll).Should(ContainElement(
		"Warning SyncError one or more objects failed to apply"))
	h.g.Expect(h.events(depl)).NotTo(ContainElement(ContainSubstring("SyncStatusChanged")))

	// The error clears in Argo CD: the condition stays, resolved.
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "0123abcd"})
	h.g.Eventually(func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionSyncError)
	}, eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusFalse),
		HaveField("Reason", v1.GitOpsDeploymentReasonSyncErrorResolved),
	))
	h.g.Expect(h.get(depl).Status.Health.Status).To(Equal(v1.HealthStatusCodeHealthy))
	h.g.Eventually(func() []string { return h.events(depl) }, eventually, poll).Should(ContainElements(
		"Normal SyncStatusChanged Sync status OutOfSync → Synced at revision 0123abcd; health Degraded → Healthy",
		"Normal SyncErrorResolved SyncError resolved",
	))
	// A repeated state records nothing new.
	recorded := len(h.events(depl))
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "0123abcd"})
	h.g.Consistently(func() []string { return h.events(depl) }, "2s", poll).Should(HaveLen(recorded))
}

// events lists the Events of an object as "<type> <reason> <message>".
func (h *harness) events(obj client.Object) []string {
	h.t.Helper()
	list := &corev1.EventList{}
	h.g.Expect(cp.Client.List(h.ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == obj.GetUID() {
			out = append(out, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	return out
}

func findCondition(list []v1.GitOpsDeploymentCondition, typ v1.GitOpsDeploymentConditionType) *v1.GitOpsDeploymentCondition {
	for i := range list {
		if list[i].Type == typ {
			return &list[i]
		}
	}
	return nil
}

func TestUnusablePathIsReportedAndDeploysNothing(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("root", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "/" })
	h.g.Eventually(func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred)
	}, eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusTrue),
		HaveField("Reason", v1.GitOpsDeploymentReasonErrorOccurred),
		HaveField("Message", ContainSubstring("spec.source.path")),
	))
	apps, err := h.store.ListApplications(h.ctx, h.db, h.tenantRowOrEmpty())
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(apps).To(BeEmpty())

	// Fixing the path deploys and resolves the condition.
	h.update(depl, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "environments/dev" })
	h.application(depl.UID)
	h.g.Eventually(func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred)
	}, eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusFalse),
		HaveField("Reason", v1.GitOpsDeploymentReasonErrorOccurredResolved),
	))
}

// tenantRowOrEmpty is the tenant id, or "" when the tenant was never created.
func (h *harness) tenantRowOrEmpty() string {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(nsGVK)
	h.g.Expect(cp.Client.Get(h.ctx, keyOf("", h.tenant), ns)).To(Succeed())
	tenant, err := h.store.GetTenantByNamespaceUID(h.ctx, h.db, string(ns.UID))
	if errors.Is(err, db.ErrNotFound) {
		return "00000000-0000-0000-0000-000000000000"
	}
	h.g.Expect(err).NotTo(HaveOccurred())
	return tenant.ID
}

func TestInvalidChangeKeepsTheRunningApplication(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("app", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(depl.UID)

	h.update(depl, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "" })
	h.g.Eventually(func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred)
	}, eventually, poll).Should(HaveField("Status", v1.GitOpsConditionStatusTrue))
	h.g.Expect(h.application(depl.UID).Spec.Source.Path).To(Equal("environments/dev"))
	h.g.Expect(h.operations(db.OperationResourceApplication, string(depl.UID))).To(HaveLen(1))
}

func TestMissingManagedEnvironmentIsReported(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("remote", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.Destination = v1.ApplicationDestination{Environment: "prod-cluster", Namespace: "prod"}
	})
	h.g.Eventually(func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred)
	}, eventually, poll).Should(HaveField("Message", ContainSubstring(`GitOpsDeploymentManagedEnvironment "prod-cluster"`)))
}

func TestDeletionWithoutFinalizerRemovesTheApplication(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("app", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(depl.UID)
	tenant := h.tenantRow()

	h.g.Expect(cp.Client.Delete(h.ctx, depl)).To(Succeed())
	h.g.Eventually(func() error {
		_, err := h.store.GetApplication(h.ctx, h.db, tenant.ID, string(depl.UID))
		return err
	}, eventually, poll).Should(MatchError(db.ErrNotFound))
	ops := h.operations(db.OperationResourceApplication, string(depl.UID))
	h.g.Expect(ops).To(HaveLen(2), "the creation's and the deletion's")
	h.signalled(ops[0])
}

// deleteWithFinalizer creates a deployment with the resources finalizer, lets its
// Application be created, deletes it and returns the operation that deletes the Application.
func (h *harness) deleteWithFinalizer() (*v1.GitOpsDeployment, db.Operation) {
	h.t.Helper()
	depl := h.newDeployment("app", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Finalizers = []string{v1.FinalizerResourcesFinalizer}
	})
	h.application(depl.UID)
	for _, op := range h.operations(db.OperationResourceApplication, string(depl.UID)) {
		h.finish(op)
	}
	h.g.Expect(cp.Client.Delete(h.ctx, depl)).To(Succeed())
	var deletion db.Operation
	h.g.Eventually(func() []db.Operation {
		ops := h.operations(db.OperationResourceApplication, string(depl.UID))
		if len(ops) > 0 {
			deletion = ops[0] // newest first
		}
		return ops
	}, eventually, poll).Should(HaveLen(2))
	return depl, deletion
}

func TestFinalizerHoldsTheDeploymentUntilTheApplicationIsGone(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl, deletion := h.deleteWithFinalizer()
	h.g.Consistently(func() error { return cp.Client.Get(h.ctx, client.ObjectKeyFromObject(depl), &v1.GitOpsDeployment{}) },
		time.Second, poll).Should(Succeed(), "held by the finalizer while the Application is deleted")

	h.finish(deletion)
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(depl), &v1.GitOpsDeployment{}))
	}, eventually, poll).Should(BeTrue())
	h.g.Expect(h.events(depl)).NotTo(ContainElement(HavePrefix("Warning ResourcesMayRemain")), "Argo CD pruned everything")
}

func TestFinalizedDeploymentReportsResourcesThatMayRemain(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl, deletion := h.deleteWithFinalizer()

	// The cluster-agent had to remove Argo CD's finalizer.
	state := "Argo CD Application x deleted, but Argo CD did not finish pruning its resources within 5m0s, so its finalizer was removed: " +
		argocd.MessageResourcesMayRemain + ": ConfigMap " + h.tenant + "/settings"
	_, err := h.store.UpdateOperationStates(h.ctx, h.db, deletion.EngineInstanceID, []string{deletion.ID}, db.OperationCompleted, state, notify.OperationChanged)
	h.g.Expect(err).NotTo(HaveOccurred())

	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(depl), &v1.GitOpsDeployment{}))
	}, eventually, poll).Should(BeTrue())
	h.g.Expect(h.events(depl)).To(ContainElement("Warning ResourcesMayRemain " + state))
}

func TestRecreatingANameGivesCleanIncarnations(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	var uids []types.UID
	for range 3 {
		depl := h.newDeployment("again", v1.GitOpsDeploymentSpecTypeAutomated)
		uids = append(uids, depl.UID)
		h.application(depl.UID)
		h.g.Expect(cp.Client.Delete(h.ctx, depl)).To(Succeed())
		h.g.Eventually(func() bool {
			return apierrors.IsNotFound(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(depl), &v1.GitOpsDeployment{}))
		}, eventually, poll).Should(BeTrue())
	}
	last := h.newDeployment("again", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(last.UID)
	tenant := h.tenantRow()
	h.g.Eventually(func() []string {
		apps, err := h.store.ListApplications(h.ctx, h.db, tenant.ID)
		h.g.Expect(err).NotTo(HaveOccurred())
		var ids []string
		for _, a := range apps {
			ids = append(ids, a.ID)
		}
		return ids
	}, eventually, poll).Should(Equal([]string{string(last.UID)}))
	for _, uid := range uids {
		h.g.Expect(h.operations(db.OperationResourceApplication, string(uid))).To(HaveLen(2), "created and deleted")
	}
}

// TestANameRecreatedWhileTheBackendWasDownReplacesItsEarlierIncarnation: a GitOpsDeployment
// deleted and created again under the same name while no backend watched leaves the earlier
// incarnation's row behind; the new incarnation's first write removes it, with the
// Operation that deletes its Argo CD Application, without waiting for a sweep (none runs
// here).
func TestANameRecreatedWhileTheBackendWasDownReplacesItsEarlierIncarnation(t *testing.T) {
	t.Parallel()
	h := &harness{t: t, g: NewWithT(t), ctx: context.Background()}
	cfg := dbtest.NewConfig(t)
	h.db = dbtest.Open(t, cfg)
	keyring := testKeyring(t)
	h.store = db.NewStore(keyring.ring)
	h.tenant = cp.NewNamespace(t, "tenant-")
	h.engine = cp.NewNamespace(t, "argocd-")
	opts := &app.Options{Database: cfg, EngineNamespace: h.engine, EngineCluster: "default", MaxConcurrentReconciles: 2,
		OperationRetention: time.Minute, KeysFile: keyring.file}

	var earlier *v1.GitOpsDeployment
	t.Run("first backend", func(t *testing.T) {
		cp.RunManager(t, []string{h.tenant, h.engine}, opts.Setup, app.ManagerOptions) // stops when this subtest ends
		earlier = h.newDeployment("again", v1.GitOpsDeploymentSpecTypeAutomated)
		h.application(earlier.UID)
		h.g.Eventually(func() []db.Operation { return h.operations(db.OperationResourceApplication, string(earlier.UID)) },
			eventually, poll).Should(HaveLen(1))
	})

	// While no backend runs: the deployment goes and comes back under its name.
	h.g.Expect(cp.Client.Delete(h.ctx, h.get(earlier))).To(Succeed())
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(earlier), &v1.GitOpsDeployment{}))
	}, eventually, poll).Should(BeTrue())
	later := h.newDeployment("again", v1.GitOpsDeploymentSpecTypeAutomated)
	tenant := h.tenantRow()
	_, err := h.store.GetApplication(h.ctx, h.db, tenant.ID, string(earlier.UID))
	h.g.Expect(err).NotTo(HaveOccurred(), "nobody removed the earlier row yet")

	cp.RunManager(t, []string{h.tenant, h.engine}, opts.Setup, app.ManagerOptions)
	h.application(later.UID)
	h.g.Eventually(func() error {
		_, err := h.store.GetApplication(h.ctx, h.db, tenant.ID, string(earlier.UID))
		return err
	}, eventually, poll).Should(MatchError(db.ErrNotFound))
	_, err = h.store.GetDeploymentMapping(h.ctx, h.db, tenant.ID, string(earlier.UID))
	h.g.Expect(err).To(MatchError(db.ErrNotFound))
	h.g.Expect(h.operations(db.OperationResourceApplication, string(earlier.UID))).To(HaveLen(2), "created and deleted")
	h.g.Expect(h.operations(db.OperationResourceApplication, string(later.UID))).To(HaveLen(1), "created")
}

var nsGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

func TestReadyWaitsForArgoCDToCompareTheCurrentSpec(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("ready", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(depl.UID)
	ready := func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, outcome.TypeReady)
	}
	h.g.Eventually(ready, eventually, poll).Should(And(Not(BeNil()),
		HaveField("Status", v1.GitOpsConditionStatusFalse), HaveField("Reason", v1.GitOpsDeploymentReasonType("Progressing"))))
	h.g.Expect(findCondition(h.get(depl).Status.Conditions, outcome.TypeReconciling)).NotTo(BeNil())
	h.g.Expect(h.get(depl).Status.ObservedGeneration).To(BeZero(), "nothing was compared yet")

	compared := func(path string) *argov1alpha1.ComparedTo {
		return &argov1alpha1.ComparedTo{
			Source:      argov1alpha1.ApplicationSource{RepoURL: depl.Spec.Source.RepoURL, Path: path, TargetRevision: "HEAD"},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: h.tenant},
		}
	}
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc",
		ReconciledState: compared(depl.Spec.Source.Path)})
	h.g.Eventually(ready, eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusTrue), HaveField("Reason", v1.GitOpsDeploymentReasonType("Deployed"))))
	h.g.Expect(h.get(depl).Status.ObservedGeneration).To(Equal(depl.Generation))
	h.g.Expect(findCondition(h.get(depl).Status.Conditions, outcome.TypeReconciling)).To(BeNil())

	// A new spec: not Ready, and its generation not observed, until Argo CD compares it.
	h.update(depl, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "environments/staging" })
	h.g.Eventually(ready, eventually, poll).Should(HaveField("Status", v1.GitOpsConditionStatusFalse))
	updated := h.get(depl)
	h.g.Expect(updated.Status.ObservedGeneration).To(Equal(depl.Generation))
	h.g.Expect(updated.Generation).To(Equal(depl.Generation + 1))
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "def",
		ReconciledState: compared("environments/staging")})
	h.g.Eventually(ready, eventually, poll).Should(HaveField("Status", v1.GitOpsConditionStatusTrue))
	h.g.Expect(h.get(depl).Status.ObservedGeneration).To(Equal(updated.Generation))
}

// TestANewDeploymentIsReconcilingWithoutAStatusWrite: from its creation on, a
// GitOpsDeployment reads as in progress to kstatus and kubectl wait (the CRD's default
// status), and the backend writes no status until Argo CD has reported.
func TestANewDeploymentIsReconcilingWithoutAStatusWrite(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("quiet", v1.GitOpsDeploymentSpecTypeAutomated)
	h.g.Expect(findCondition(depl.Status.Conditions, outcome.TypeReconciling)).To(
		HaveField("Status", v1.GitOpsConditionStatusTrue), "the answer to the create")
	verdict, err := judge(h, depl, "")
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(verdict.KStatus).To(Equal(status.InProgressStatus))

	h.application(depl.UID)
	h.g.Consistently(func() string { return h.get(depl).ResourceVersion }, "2s", poll).Should(Equal(depl.ResourceVersion),
		"no status write while Argo CD has compared nothing")

	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc",
		ReconciledState: &argov1alpha1.ComparedTo{
			Source:      argov1alpha1.ApplicationSource{RepoURL: depl.Spec.Source.RepoURL, Path: depl.Spec.Source.Path},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: h.tenant},
		}})
	ready := func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, outcome.TypeReady)
	}
	h.g.Eventually(ready, eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusTrue), HaveField("LastTransitionTime", Not(BeNil()))))
	h.g.Expect(findCondition(h.get(depl).Status.Conditions, outcome.TypeReconciling)).To(BeNil())
	verdict, err = judge(h, depl, "")
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(verdict.KStatus).To(Equal(status.CurrentStatus), "what kubectl wait and Flux read once it is deployed")
}

// TestABurstOfChangesCostsOneOperationCR: the first operation raises the engine instance's
// signal with its CR; while the signal is up (no cluster-agent takes it down here), the
// operations of later changes are written under it without a CR of their own.
func TestABurstOfChangesCostsOneOperationCR(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	var ops []db.Operation
	for i := range 5 {
		depl := h.newDeployment(fmt.Sprintf("app-%d", i), v1.GitOpsDeploymentSpecTypeAutomated)
		h.application(depl.UID)
		ops = append(ops, h.onlyOperation(depl.UID))
	}
	h.g.Expect(h.oneOperationCR(ops).Spec.OperationID).To(Equal(ops[0].ID), "the first change's")
}

// onlyOperation waits until the deployment with uid has its one Application operation, and
// returns it.
func (h *harness) onlyOperation(uid types.UID) db.Operation {
	h.t.Helper()
	h.g.Eventually(func() []db.Operation {
		return h.operations(db.OperationResourceApplication, string(uid))
	}, eventually, poll).Should(HaveLen(1))
	return h.operations(db.OperationResourceApplication, string(uid))[0]
}

// oneOperationCR waits until an Operation CR stands for each of ops, and returns the one
// Operation CR of the engine namespace: the burst's.
func (h *harness) oneOperationCR(ops []db.Operation) v1.Operation {
	h.t.Helper()
	for _, op := range ops {
		h.signalled(op)
	}
	crs := &v1.OperationList{}
	h.g.Expect(cp.Client.List(h.ctx, crs, client.InNamespace(h.engine))).To(Succeed())
	h.g.Expect(crs.Items).To(HaveLen(1), "one Operation CR for %d changes", len(ops))
	return crs.Items[0]
}

// TestABurstOfDeploymentsSharesItsWritingTransactions: deployments created at once are
// written together, several to a transaction with one raise of the signal, and each is
// written as if alone: its row, its operation under the one Operation CR, and its status
// once the cluster-agent reports.
func TestABurstOfDeploymentsSharesItsWritingTransactions(t *testing.T) {
	t.Parallel()
	h := startBackend(t, func(o *app.Options) { o.MaxConcurrentReconciles = 8 })
	const n = 40
	before := h.transactions()
	raisesBefore := h.statementCalls("with raised as %")
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- cp.Client.Create(h.ctx, &v1.GitOpsDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: h.tenant},
				Spec: v1.GitOpsDeploymentSpec{
					Source: v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: fmt.Sprintf("apps/%d", i)},
					Type:   v1.GitOpsDeploymentSpecTypeAutomated,
				},
			})
		}()
	}
	for range n {
		h.g.Expect(<-errs).To(Succeed())
	}
	var ops []db.Operation
	for i := range n {
		depl := h.get(&v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: h.tenant}})
		row := h.application(depl.UID)
		h.g.Expect(row.Spec.Source.Path).To(Equal(fmt.Sprintf("apps/%d", i)))
		ops = append(ops, h.onlyOperation(depl.UID))
	}
	h.oneOperationCR(ops)
	h.g.Expect(h.transactions()-before).To(BeNumerically("<", n), "deployments shared transactions")
	h.g.Expect(h.statementCalls("with raised as %")-raisesBefore).To(BeNumerically("<", n), "transactions raised the signal once")

	for i, op := range ops {
		h.finish(op)
		h.writeState(types.UID(op.ResourceID), &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: fmt.Sprintf("rev-%d", i)})
	}
	for i, op := range ops {
		depl := h.get(&v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: h.tenant}})
		h.g.Expect(string(depl.UID)).To(Equal(op.ResourceID))
		h.g.Eventually(func() string { return h.get(depl).Status.Sync.Revision }, eventually, poll).Should(Equal(fmt.Sprintf("rev-%d", i)))
	}
}
