package argoapp

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	"github.com/gitops-service/gitops-service/backend-shared/orphans"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/agenttest"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
)

func TestHandleAppliesTheApplicationOfARowOnThisInstance(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.row("team-a")

	out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(operation.Completed(fmt.Sprintf("Argo CD Application %s is up to date", row.Name))))

	app := f.argoApp(row.Name)
	g.Expect(app).NotTo(BeNil())
	g.Expect(app.Labels).To(HaveKeyWithValue(argocd.LabelApplicationID, row.ID))
	g.Expect(app.Labels).To(HaveKeyWithValue(argocd.LabelTenantID, f.tenant.ID))
	g.Expect(app.Labels).To(HaveKeyWithValue(argocd.LabelManagedBy, argocd.ManagedByValue))
	// Deleting it later must prune what it deployed.
	g.Expect(hasArgoFinalizer(app)).To(BeTrue())
	g.Expect(app.Spec.Source.RepoURL).To(Equal(testRepo))
	g.Expect(app.Spec.Destination).To(Equal(argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"}))
	// The tenant's AppProject is applied before its Applications, which name it.
	project := &argov1alpha1.AppProject{}
	g.Expect(cp.Client.Get(f.ctx, client.ObjectKey{Namespace: f.apps.Identity.Namespace, Name: app.Spec.Project}, project)).To(Succeed())
	// No refresh was asked for.
	g.Expect(app.Annotations).NotTo(HaveKey(argov1alpha1.AnnotationKeyRefresh))
}

func TestHandleOnAnotherClusterPointsInClusterDestinationsAtTheServiceCluster(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.apps.Identity.ServiceClusterAPIURL = "https://service.example.com:6443"
	f.apps.Projects.Identity = f.apps.Identity
	row := f.row("team-a")

	_, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	// The row says in-cluster; this Argo CD reaches the tenants' namespaces at the service's server.
	g.Expect(f.argoApp(row.Name).Spec.Destination.Server).To(Equal("https://service.example.com:6443"))
}

func TestHandleAsksArgoCDToRefreshOncePerRequest(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.row("team-a")
	refresh := func(request string) {
		t.Helper()
		row.Refresh = request
		_, err := f.store.UpsertApplication(f.ctx, f.db, row)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
		g.Expect(err).NotTo(HaveOccurred())
	}
	// Argo CD removes its refresh annotation once it has refreshed.
	argoRefreshes := func() {
		f.argoUpdate(row.Name, func(app *argov1alpha1.Application) {
			delete(app.Annotations, argov1alpha1.AnnotationKeyRefresh)
		})
	}

	refresh("request-1")
	app := f.argoApp(row.Name)
	g.Expect(app.Annotations).To(HaveKeyWithValue(argov1alpha1.AnnotationKeyRefresh, argov1alpha1.RefreshTypeNormal))
	g.Expect(app.Annotations).To(HaveKeyWithValue(argocd.AnnotationRefreshHandled, "request-1"))
	argoRefreshes()

	// The same request again (any other change of the row): no second refresh.
	refresh("request-1")
	g.Expect(f.argoApp(row.Name).Annotations).NotTo(HaveKey(argov1alpha1.AnnotationKeyRefresh))

	refresh("request-2")
	app = f.argoApp(row.Name)
	g.Expect(app.Annotations).To(HaveKeyWithValue(argov1alpha1.AnnotationKeyRefresh, argov1alpha1.RefreshTypeNormal))
	g.Expect(app.Annotations).To(HaveKeyWithValue(argocd.AnnotationRefreshHandled, "request-2"))
}

func TestHandleWaitsForThePreviousApplicationOfARecreatedRowToGo(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.row("team-a")
	_, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	// Deleted (Argo CD's finalizer holds it while it prunes) while the row exists again.
	g.Expect(cp.Client.Delete(f.ctx, f.argoApp(row.Name))).To(Succeed())

	out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(operation.Waiting(
		fmt.Sprintf("waiting for the previous Argo CD Application %s to be deleted", row.Name), f.apps.PollInterval)))
	g.Expect(f.argoApp(row.Name).DeletionTimestamp).NotTo(BeNil(), "applied over the one being deleted")
}

func TestHandleDeletesTheApplicationOfADeletedRowAndWaitsForArgoCD(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		// what the second look says while Argo CD's finalizer holds the Application
		wantAfter time.Duration
	}{
		{name: "within the deletion timeout", timeout: time.Hour, wantAfter: 250 * time.Millisecond},
		// Zero waits for Argo CD forever: the finalizer is never removed.
		{name: "without a deletion timeout", timeout: 0, wantAfter: 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			f.apps.DeletionTimeout = tt.timeout
			row := f.row("team-a")
			_, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
			g.Expect(err).NotTo(HaveOccurred())
			f.deleteRow(row)

			waiting := operation.Waiting(fmt.Sprintf("waiting for Argo CD to prune the resources of Application %s and delete it", row.Name), tt.wantAfter)
			out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal(waiting))
			app := f.argoApp(row.Name)
			g.Expect(app.DeletionTimestamp).NotTo(BeNil(), "deleted")

			out, err = f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal(waiting))
			g.Expect(hasArgoFinalizer(f.argoApp(row.Name))).To(BeTrue(), "Argo CD still has time to prune")
		})
	}
}

func TestHandleRemovesArgoCDsFinalizerPastTheDeletionTimeoutAndRecordsLeftovers(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.apps.DeletionTimeout = time.Nanosecond
	f.apps.OrphanGracePeriod = 15 * time.Minute
	row := f.row("team-a")
	_, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	// What Argo CD last listed, and a finalizer of someone else that must stay.
	f.argoUpdate(row.Name, func(app *argov1alpha1.Application) {
		app.Finalizers = append(app.Finalizers, "example.com/hold")
		app.Status.Resources = []argov1alpha1.ResourceStatus{
			{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"},
			{Version: "v1", Kind: "Namespace", Name: "team-a"},
			{Version: "v1", Kind: "ConfigMap", Namespace: "team-b", Name: "elsewhere"},
		}
	})
	f.deleteRow(row)
	_, err = f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())

	out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.State).To(Equal(db.OperationCompleted))
	g.Expect(out.Message).To(Equal(fmt.Sprintf("Argo CD Application %s deleted, but Argo CD did not finish pruning its resources within 1ns, "+
		"so its finalizer was removed: %s: ConfigMap team-a/settings, Namespace team-a, ConfigMap team-b/elsewhere; "+
		"those in the destination namespace still left in 15m0s are removed unless annotated %s=true",
		row.Name, argocd.MessageResourcesMayRemain, orphans.AnnotationKeep)))
	app := f.argoApp(row.Name)
	g.Expect(app).NotTo(BeNil(), "held by the other finalizer")
	g.Expect(app.Finalizers).To(Equal([]string{"example.com/hold"}), "only Argo CD's finalizers are removed")

	// Only what was in the destination namespace is recorded for the leftovers remover.
	due, err := f.store.DueLeftovers(f.ctx, f.db, f.apps.Identity.InstanceID, time.Now().Add(time.Hour), 10)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(due).To(HaveLen(1))
	g.Expect(due[0].ApplicationName).To(Equal(row.Name))
	g.Expect(due[0].DestinationServer).To(Equal(argocd.InClusterServer))
	g.Expect(due[0].DestinationNamespace).To(Equal("team-a"))
	g.Expect(due[0].Resources).To(Equal([]orphans.Resource{{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}}))
	g.Expect(due[0].RemoveAfter).To(BeTemporally("~", time.Now().Add(15*time.Minute), time.Minute))
	notYet, err := f.store.DueLeftovers(f.ctx, f.db, f.apps.Identity.InstanceID, time.Now(), 10)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(notYet).To(BeEmpty(), "left to their owners for the grace period")
}

func TestHandleWithoutAGracePeriodRecordsNoLeftovers(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.apps.DeletionTimeout = time.Nanosecond
	row := f.row("team-a")
	_, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	f.argoUpdate(row.Name, func(app *argov1alpha1.Application) {
		app.Status.Resources = []argov1alpha1.ResourceStatus{{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}}
	})
	f.deleteRow(row)
	_, err = f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())

	out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	// The resources are named, but nothing promises to remove them.
	g.Expect(out.Message).To(HaveSuffix(": ConfigMap team-a/settings"))
	g.Expect(f.argoApp(row.Name)).To(BeNil(), "gone once Argo CD's finalizer was removed")
	due, err := f.store.DueLeftovers(f.ctx, f.db, f.apps.Identity.InstanceID, time.Now().Add(24*time.Hour), 10)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(due).To(BeEmpty())

	// Nothing left: the deletion is done.
	out, err = f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(operation.Completed(fmt.Sprintf("Argo CD Application %s deleted", row.Name))))
}

func TestHandleDeletesApplicationsFoundByLabelToo(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.row("team-a")
	// An Application of the row under another name (someone copied it): it carries the row's id.
	copied := f.apps.Identity.Application("copy-of-"+row.ID[:8], row.ID, f.tenant.ID, row.Spec)
	copied.Finalizers = nil
	g.Expect(cp.Client.Create(f.ctx, copied)).To(Succeed())
	f.deleteRow(row)

	out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.State).To(Equal(db.OperationInProgress))
	g.Expect(out.Message).To(Equal(fmt.Sprintf("waiting for Argo CD to prune the resources of Application %s and delete it", copied.Name)))
	g.Expect(f.argoApp(copied.Name)).To(BeNil())
}

func TestHandleReleasesAMovedApplicationOnlyOnceTheNewInstanceAdoptedIt(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.row("team-a")
	_, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	other := agenttest.Instance(t, cp, f.db, f.store)
	_, err = f.store.MoveTenant(f.ctx, f.db, f.tenant.ID, other.InstanceID)
	g.Expect(err).NotTo(HaveOccurred())

	// Until Argo CD there compared it, the resources would be without an Argo CD.
	out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(operation.Waiting(fmt.Sprintf("waiting for engine instance %s to adopt Argo CD Application %s before letting it go here",
		other.InstanceID, row.Name), f.apps.PollInterval)))
	app := f.argoApp(row.Name)
	g.Expect(app).NotTo(BeNil())
	g.Expect(app.DeletionTimestamp).To(BeNil())

	// A state written by the new instance's agent before Argo CD compared does not count.
	state := &db.ApplicationState{ApplicationID: row.ID, EngineInstanceID: other.InstanceID}
	_, err = f.store.RecordApplicationState(f.ctx, f.db, state, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	out, err = f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.State).To(Equal(db.OperationInProgress))

	state.ReconciledState = &argov1alpha1.ComparedTo{Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"}}
	_, err = f.store.RecordApplicationState(f.ctx, f.db, state, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	out, err = f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(operation.Completed(fmt.Sprintf(
		"Argo CD Application %s let go: engine instance %s adopted it; its resources were left in place", row.Name, other.InstanceID))))
	// Without Argo CD's finalizer it went at once, pruning nothing.
	g.Expect(f.argoApp(row.Name)).To(BeNil())
	moved, err := f.store.LocateApplicationOnceTenantFree(f.ctx, f.db, row.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(moved.MovingFromEngineInstanceID).To(BeEmpty(), "the move is recorded as done")
	g.Expect(moved.EngineInstanceID).To(Equal(other.InstanceID))

	out, err = f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(operation.Completed(fmt.Sprintf(
		"application %s is served by engine instance %s; nothing to let go here", row.Name, other.InstanceID))))
}

func TestHandleLetsGoAtOnceOfAnApplicationLeftByAnOlderMove(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.row("team-a")
	other := agenttest.Instance(t, cp, f.db, f.store)
	// Left here, with Argo CD's finalizer, although the row is on another instance and not
	// moving from this one.
	left := f.apps.Identity.Application(row.Name, row.ID, f.tenant.ID, row.Spec)
	g.Expect(cp.Client.Create(f.ctx, left)).To(Succeed())
	_, err := f.store.MoveTenant(f.ctx, f.db, f.tenant.ID, other.InstanceID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.store.FinishApplicationMove(f.ctx, f.db, row.ID, f.apps.Identity.InstanceID)).To(Succeed())

	out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.State).To(Equal(db.OperationCompleted))
	g.Expect(out.Message).To(HavePrefix(fmt.Sprintf("Argo CD Application %s let go", row.Name)))
	g.Expect(f.argoApp(row.Name)).To(BeNil())
}

func TestHandleFailsAnApplicationTheAPIServerRejects(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.row("team-a")
	// An admission policy of the engine cluster refuses the Application as invalid: no
	// retry can fix that, so the operation fails with the API server's reason.
	invalid := metav1.StatusReasonInvalid
	fail := admissionv1.Fail
	name := "refuse-" + f.apps.Identity.Namespace
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"argoproj.io"}, APIVersions: []string{"*"}, Resources: []string{"applications"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Reason: &invalid, Message: "destinations in team-a are not allowed"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: f.apps.Identity.Namespace}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		g.Expect(cp.Client.Create(f.ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), o) })
	}
	// Policies take effect shortly after they are written.
	probe := f.apps.Identity.Application("probe", row.ID, f.tenant.ID, row.Spec)
	g.Eventually(func() error { return cp.Client.Create(f.ctx, probe.DeepCopy(), client.DryRunAll) }, 30*time.Second, 100*time.Millisecond).
		Should(MatchError(ContainSubstring("destinations in team-a are not allowed")))

	out, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.State).To(Equal(db.OperationFailed))
	g.Expect(out.Message).To(HavePrefix(fmt.Sprintf("Argo CD rejected Application %s: ", row.Name)))
	g.Expect(out.Message).To(ContainSubstring("destinations in team-a are not allowed"))
	g.Expect(out.Message).NotTo(ContainSubstring("applying Argo CD Application"), "the client's wrapping is not shown")
	g.Expect(f.argoApp(row.Name)).To(BeNil())
}

// deletedAt is a DeletionTimestamp for awaitDeletion, which reads only the Application.
func deletedAt(ago time.Duration, finalizers ...string) *argov1alpha1.Application {
	ts := metav1.NewTime(time.Now().Add(-ago))
	return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "gitopsdepl-x", DeletionTimestamp: &ts, Finalizers: finalizers}}
}

func TestAwaitDeletionLooksAgainNoLaterThanTheTimeout(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		poll    time.Duration
		ago     time.Duration
		// bounds of the returned requeue interval
		min, max time.Duration
	}{
		{name: "plenty of time: the poll interval", timeout: time.Hour, poll: 2 * time.Second, ago: time.Minute,
			min: 2 * time.Second, max: 2 * time.Second},
		// Close to the timeout: look again right when it expires, not a whole poll later.
		{name: "the timeout is near", timeout: 10 * time.Second, poll: time.Minute, ago: 8 * time.Second,
			min: time.Second, max: 2 * time.Second},
		// Never a busy loop, however close the timeout.
		{name: "at least 100ms", timeout: 10 * time.Second, poll: time.Minute, ago: 9*time.Second + 950*time.Millisecond,
			min: 100 * time.Millisecond, max: 100 * time.Millisecond},
		{name: "no timeout: the poll interval", timeout: 0, poll: 3 * time.Second, ago: 48 * time.Hour,
			min: 3 * time.Second, max: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a := &Applications{DeletionTimeout: tt.timeout, PollInterval: tt.poll}
			forced, after, err := a.awaitDeletion(t.Context(), deletedAt(tt.ago, "resources-finalizer.argocd.argoproj.io"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(forced).To(BeFalse())
			g.Expect(after).To(BeNumerically(">=", tt.min))
			g.Expect(after).To(BeNumerically("<=", tt.max))
		})
	}
}

func TestAwaitDeletionPastTheTimeoutWithoutArgoCDsFinalizerTouchesNothing(t *testing.T) {
	g := NewWithT(t)
	// No client, no store: an Application past the timeout without Argo CD's finalizer
	// (someone else's holds it) needs no write, only reporting that the deletion was forced.
	a := &Applications{DeletionTimeout: time.Minute, PollInterval: time.Second}
	forced, after, err := a.awaitDeletion(t.Context(), deletedAt(time.Hour, "example.com/hold"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(forced).To(BeTrue())
	g.Expect(after).To(Equal(time.Second))
}

// An Application is applied only once a change of its tenant's AppProject that began
// before has let go of the tenant's lock (its writes then show in the cache).
func TestHandleWaitsForTheTenantsLockHolder(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	// The tenant's AppProject exists and admits the row's repository and destination: the
	// wait is all that stands between the operation and its apply.
	first := f.row("team-a")
	_, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: first.ID, TenantID: f.tenant.ID})
	g.Expect(err).NotTo(HaveOccurred())
	row := f.row("team-a")
	entered, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		held <- f.store.WithTenantLock(f.ctx, f.db, f.tenant.ID, func(context.Context, bun.Tx) error {
			close(entered)
			<-release
			return nil
		})
	}()
	g.Eventually(entered, 5*time.Second).Should(BeClosed())

	handled := make(chan error, 1)
	go func() {
		_, err := f.apps.Handle(f.ctx, operation.Target{ResourceID: row.ID, TenantID: f.tenant.ID})
		handled <- err
	}()
	g.Consistently(handled, 500*time.Millisecond).ShouldNot(Receive(), "while the tenant's lock is held")
	g.Expect(f.argoApp(row.Name)).To(BeNil())
	close(release)
	g.Eventually(held, 5*time.Second).Should(Receive(BeNil()))
	g.Eventually(handled, 10*time.Second).Should(Receive(BeNil()))
	g.Expect(f.argoApp(row.Name)).NotTo(BeNil())
}
