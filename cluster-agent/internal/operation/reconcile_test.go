package operation

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// recorder is a Handler that returns a fixed outcome and remembers its targets.
type recorder struct {
	outcome Outcome
	err     error
	targets []Target
}

func (h *recorder) Handle(_ context.Context, t Target) (Outcome, error) {
	h.targets = append(h.targets, t)
	return h.outcome, h.err
}

func TestReconcileResourceWritesTheHandlersOutcomeOnThePendingOperations(t *testing.T) {
	tests := []struct {
		name        string
		outcome     Outcome
		wantState   db.OperationState
		wantMessage string
		wantResult  ctrl.Result
	}{
		{name: "completed", outcome: Completed("Argo CD Application x is up to date"),
			wantState: db.OperationCompleted, wantMessage: "Argo CD Application x is up to date"},
		{name: "failed with a user error", outcome: Failed("Argo CD rejected Application x: bad"),
			wantState: db.OperationFailed, wantMessage: "Argo CD rejected Application x: bad"},
		// Waiting is not done: the operations are In_Progress and the resource is looked at again.
		{name: "waiting for Argo CD", outcome: Waiting("waiting for Argo CD to prune", 700*time.Millisecond),
			wantState: db.OperationInProgress, wantMessage: "waiting for Argo CD to prune", wantResult: ctrl.Result{RequeueAfter: 700 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := &recorder{outcome: tt.outcome}
			f := newFixture(t, map[db.OperationResourceType]Handler{db.OperationResourceApplication: h})
			resource := uuid.NewString()
			first := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, resource, "", db.OperationWaiting)
			second := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, resource, "", db.OperationInProgress)

			res, err := f.r.Reconcile(f.ctx, Request{ResourceType: db.OperationResourceApplication, ResourceID: resource})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res).To(Equal(tt.wantResult))
			// One handler run carries out every pending operation of the resource.
			g.Expect(h.targets).To(HaveLen(1))
			for _, id := range []string{first.ID, second.ID} {
				op := f.get(id)
				g.Expect(op.State).To(Equal(tt.wantState), "operation %s", id)
				g.Expect(op.HumanReadableState).To(Equal(tt.wantMessage))
				// Only a finished operation starts its garbage-collection clock.
				g.Expect(op.GCExpiresAt.IsZero()).To(Equal(!tt.wantState.Finished()))
			}
		})
	}
}

func TestReconcileResourceCarriesOutOnlyThisInstancesUnfinishedOperations(t *testing.T) {
	g := NewWithT(t)
	h := &recorder{outcome: Completed("done")}
	f := newFixture(t, map[db.OperationResourceType]Handler{db.OperationResourceApplication: h})
	other := f.otherInstance()
	resource := uuid.NewString()
	theirs := f.operation(other.InstanceID, db.OperationResourceApplication, resource, "", db.OperationWaiting)
	finished := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, resource, "", db.OperationFailed)
	ours := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, resource, "", db.OperationWaiting)

	_, err := f.r.Reconcile(f.ctx, Request{ResourceType: db.OperationResourceApplication, ResourceID: resource})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.get(ours.ID).State).To(Equal(db.OperationCompleted))
	// Another instance's operation on the same resource is that instance's agent's to do.
	g.Expect(f.get(theirs.ID).State).To(Equal(db.OperationWaiting))
	g.Expect(f.get(theirs.ID).HumanReadableState).To(Equal("waiting for the cluster-agent"))
	// A finished operation is never reopened, nor its state rewritten.
	g.Expect(f.get(finished.ID).State).To(Equal(db.OperationFailed))
	g.Expect(f.get(finished.ID).HumanReadableState).To(Equal("waiting for the cluster-agent"))
}

func TestReconcileResourceDoesNotRunTheHandlerWithoutPendingOperations(t *testing.T) {
	g := NewWithT(t)
	h := &recorder{outcome: Completed("done")}
	f := newFixture(t, map[db.OperationResourceType]Handler{db.OperationResourceApplication: h})
	resource := uuid.NewString()
	f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, resource, "", db.OperationCompleted)
	f.operation(f.otherInstance().InstanceID, db.OperationResourceApplication, resource, "", db.OperationWaiting)

	res, err := f.r.Reconcile(f.ctx, Request{ResourceType: db.OperationResourceApplication, ResourceID: resource})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{}))
	g.Expect(h.targets).To(BeEmpty())
}

func TestReconcileResourceGivesTheHandlerTheNewestOwnerTenant(t *testing.T) {
	g := NewWithT(t)
	h := &recorder{outcome: Completed("done")}
	f := newFixture(t, map[db.OperationResourceType]Handler{db.OperationResourceAppProject: h})
	older, newer := f.tenant(), f.tenant()
	resource := uuid.NewString()
	a := f.operation(f.r.Identity.InstanceID, db.OperationResourceAppProject, resource, older, db.OperationWaiting)
	f.age(a.ID, "1 minute")
	f.operation(f.r.Identity.InstanceID, db.OperationResourceAppProject, resource, newer, db.OperationWaiting)
	// The newest operation is a system one (the sweep's): it names no tenant.
	f.operation(f.r.Identity.InstanceID, db.OperationResourceAppProject, resource, "", db.OperationWaiting)

	_, err := f.r.Reconcile(f.ctx, Request{ResourceType: db.OperationResourceAppProject, ResourceID: resource})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.targets).To(Equal([]Target{{ResourceID: resource, TenantID: newer}}))
}

func TestReconcileResourceFailsOperationsOfATypeWithoutAHandler(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, map[db.OperationResourceType]Handler{})
	resource := uuid.NewString()
	op := f.operation(f.r.Identity.InstanceID, db.OperationResourceSyncOperation, resource, "", db.OperationWaiting)

	_, err := f.r.Reconcile(f.ctx, Request{ResourceType: db.OperationResourceSyncOperation, ResourceID: resource})
	g.Expect(err).NotTo(HaveOccurred(), "nothing to retry")
	got := f.get(op.ID)
	g.Expect(got.State).To(Equal(db.OperationFailed))
	g.Expect(got.HumanReadableState).To(Equal(`unsupported resource type "SyncOperation"`))
}

func TestReconcileResourceRetriesAHandlerErrorUntilTheRetryLimit(t *testing.T) {
	boom := errors.New("the API server said no")
	tests := []struct {
		name       string
		retryLimit time.Duration
		// ages of the pending operations (PostgreSQL intervals)
		ages        []string
		wantStates  []db.OperationState
		wantMessage []string
		wantErr     bool
	}{
		// An internal error keeps the operations In_Progress with a generic message (never
		// the error itself, which users would see) and returns it, for a retry with backoff.
		{name: "no retry limit retries forever", retryLimit: 0, ages: []string{"10 hours"},
			wantStates: []db.OperationState{db.OperationInProgress}, wantMessage: []string{MessageInternalError}, wantErr: true},
		{name: "younger than the limit is retried", retryLimit: time.Hour, ages: []string{"1 minute"},
			wantStates: []db.OperationState{db.OperationInProgress}, wantMessage: []string{MessageInternalError}, wantErr: true},
		// A poison operation is failed, and with nothing left to retry the error is not returned.
		{name: "older than the limit is given up on", retryLimit: time.Hour, ages: []string{"2 hours"},
			wantStates: []db.OperationState{db.OperationFailed}, wantMessage: []string{fmt.Sprintf(MessageGaveUp, time.Hour)}, wantErr: false},
		// Only the expired ones fail; a younger operation of the same resource is retried.
		{name: "an expired and a younger one", retryLimit: time.Hour, ages: []string{"2 hours", "5 minutes"},
			wantStates:  []db.OperationState{db.OperationFailed, db.OperationInProgress},
			wantMessage: []string{fmt.Sprintf(MessageGaveUp, time.Hour), MessageInternalError}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := &recorder{err: boom}
			f := newFixture(t, map[db.OperationResourceType]Handler{db.OperationResourceApplication: h})
			f.r.RetryLimit = tt.retryLimit
			resource := uuid.NewString()
			var ids []string
			for _, age := range tt.ages {
				op := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, resource, "", db.OperationWaiting)
				f.age(op.ID, age)
				ids = append(ids, op.ID)
			}

			_, err := f.r.Reconcile(f.ctx, Request{ResourceType: db.OperationResourceApplication, ResourceID: resource})
			if tt.wantErr {
				g.Expect(err).To(MatchError(boom))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			for i, id := range ids {
				op := f.get(id)
				g.Expect(op.State).To(Equal(tt.wantStates[i]), "operation aged %s", tt.ages[i])
				g.Expect(op.HumanReadableState).To(Equal(tt.wantMessage[i]))
			}
		})
	}
}

func TestUpdateWritesOnlyOperationsWhoseStateChanged(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	resource := uuid.NewString()
	same := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, resource, "", db.OperationInProgress)
	_, err := f.db.NewUpdate().Model((*db.Operation)(nil)).Set("human_readable_state = ?", "pruning").
		Set("updated_at = now() - interval '1 hour'").Where("id = ?", same.ID).Exec(f.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	same = f.get(same.ID)
	changed := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, resource, "", db.OperationWaiting)

	out, err := f.r.update(f.ctx, []db.Operation{*same, *changed}, db.OperationInProgress, "pruning")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveLen(2))
	// The unchanged one is not written: no transaction, no notification, no new updated_at.
	g.Expect(f.get(same.ID).UpdatedAt).To(BeTemporally("==", same.UpdatedAt))
	g.Expect(out[0].UpdatedAt).To(BeTemporally("==", same.UpdatedAt))
	g.Expect(f.get(changed.ID).State).To(Equal(db.OperationInProgress))
	g.Expect(out[1].State).To(Equal(db.OperationInProgress))
	g.Expect(out[1].HumanReadableState).To(Equal("pruning"))
}

func TestTakeSignalQueuesWaitingOperationsAndTakesTheSignalDownWhenQuiet(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	a := f.raise(db.OperationResourceApplication, uuid.NewString())
	b := f.raise(db.OperationResourceRepositoryCredential, uuid.NewString())
	// Not Waiting: the signal takes only Waiting operations.
	f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, uuid.NewString(), "", db.OperationInProgress)

	res, err := f.r.Reconcile(f.ctx, Request{Signal: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(SignalPollInterval))
	g.Expect(f.queued()).To(ConsistOf(
		Request{ResourceType: a.ResourceType, ResourceID: a.ResourceID},
		Request{ResourceType: b.ResourceType, ResourceID: b.ResourceID}))

	// Looks that find nothing new keep the signal up until signalQuietPolls of them.
	for i := 0; i < signalQuietPolls; i++ {
		_, err := f.store.GetSignal(f.ctx, f.db, f.r.Identity.InstanceID)
		g.Expect(err).NotTo(HaveOccurred(), "the signal went down after %d quiet looks", i)
		res, err = f.r.Reconcile(f.ctx, Request{Signal: true})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(f.queued()).To(BeEmpty(), "an operation was queued twice")
	}
	g.Expect(res).To(Equal(ctrl.Result{}), "the last look takes the signal down and stops polling")
	_, err = f.store.GetSignal(f.ctx, f.db, f.r.Identity.InstanceID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	g.Expect(f.r.taken).To(BeNil(), "the next signal starts afresh")
	g.Expect(f.r.looks).To(BeZero())
}

func TestTakeSignalKeepsTheSignalUpForAnOperationItsLooksMissed(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	f.raise(db.OperationResourceApplication, uuid.NewString())
	_, err := f.r.Reconcile(f.ctx, Request{Signal: true})
	g.Expect(err).NotTo(HaveOccurred())
	f.queued()

	// An operation whose transaction committed late: created long before the newest one
	// taken, so the partial looks (created since newest - slack) do not see it.
	late := f.operation(f.r.Identity.InstanceID, db.OperationResourceAppProject, uuid.NewString(), "", db.OperationWaiting)
	f.age(late.ID, "1 hour")
	for i := 1; i < signalQuietPolls; i++ {
		_, err = f.r.Reconcile(f.ctx, Request{Signal: true})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(f.queued()).To(BeEmpty(), "a partial look found the late operation")
	}
	// The check before the signal goes down reads every Waiting operation and finds it.
	res, err := f.r.Reconcile(f.ctx, Request{Signal: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(SignalPollInterval))
	g.Expect(f.queued()).To(Equal([]Request{{ResourceType: late.ResourceType, ResourceID: late.ResourceID}}))
	_, err = f.store.GetSignal(f.ctx, f.db, f.r.Identity.InstanceID)
	g.Expect(err).NotTo(HaveOccurred(), "the signal went down with an operation nobody queued")
}

// raise writes a Waiting operation of the fixture's instance and raises the signal, as
// the backend does (the CR itself is not needed by takeSignal).
func (f *fixture) raise(rt db.OperationResourceType, resourceID string) *db.Operation {
	f.t.Helper()
	op := f.operation(f.r.Identity.InstanceID, rt, resourceID, "", db.OperationWaiting)
	_, err := f.store.RaiseSignal(f.ctx, f.db, op)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return op
}

func TestMapOperationMapsACRToItsResourceAndTheSignal(t *testing.T) {
	f := newFixture(t, nil)
	self := f.r.Identity
	other := f.otherInstance()
	resource := uuid.NewString()
	waiting := f.operation(self.InstanceID, db.OperationResourceApplication, resource, "", db.OperationWaiting)
	inProgress := f.operation(self.InstanceID, db.OperationResourceApplication, resource, "", db.OperationInProgress)
	completed := f.operation(self.InstanceID, db.OperationResourceApplication, resource, "", db.OperationCompleted)
	theirs := f.operation(other.InstanceID, db.OperationResourceApplication, resource, "", db.OperationWaiting)
	unknown := uuid.NewString()
	theirReason := Reject(self, self.Namespace, theirs, &db.EngineInstance{EngineClusterID: other.ClusterID, NamespaceName: other.Namespace, NamespaceUID: other.NamespaceUID})

	cr := func(ns, id string, status v1.OperationStatus) *v1.Operation {
		return &v1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1.OperationName(id)},
			Spec: v1.OperationSpec{OperationID: id}, Status: status}
	}
	resourceReqs := []Request{{Signal: true}, {ResourceType: db.OperationResourceApplication, ResourceID: resource}}
	tests := []struct {
		name string
		cr   *v1.Operation
		want []Request
	}{
		{name: "a waiting operation", cr: cr(self.Namespace, waiting.ID, v1.OperationStatus{}), want: resourceReqs},
		// One In_Progress that no queue holds (an agent restarted) is carried out too.
		{name: "an operation in progress", cr: cr(self.Namespace, inProgress.ID, v1.OperationStatus{}), want: resourceReqs},
		{name: "a finished operation", cr: cr(self.Namespace, completed.ID, v1.OperationStatus{}), want: nil},
		// A CR to reject goes by its own key, so that its reconcile writes the reason.
		{name: "another instance's operation", cr: cr(self.Namespace, theirs.ID, v1.OperationStatus{}),
			want: []Request{{OperationCR: client.ObjectKey{Namespace: self.Namespace, Name: v1.OperationName(theirs.ID)}}}},
		// ...but not again once the reason is written.
		{name: "another instance's operation already rejected", cr: cr(self.Namespace, theirs.ID,
			v1.OperationStatus{State: v1.OperationStateFailed, Message: theirReason}), want: nil},
		{name: "a CR in another namespace", cr: cr("elsewhere", waiting.ID, v1.OperationStatus{}),
			want: []Request{{OperationCR: client.ObjectKey{Namespace: "elsewhere", Name: v1.OperationName(waiting.ID)}}}},
		// Checked again by the CR's own reconcile, which rejects it.
		{name: "an unknown operation", cr: cr(self.Namespace, unknown, v1.OperationStatus{}),
			want: []Request{{OperationCR: client.ObjectKey{Namespace: self.Namespace, Name: v1.OperationName(unknown)}}}},
		{name: "not an operation id", cr: cr(self.Namespace, "not-a-uuid", v1.OperationStatus{}),
			want: []Request{{OperationCR: client.ObjectKey{Namespace: self.Namespace, Name: v1.OperationName("not-a-uuid")}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(f.r.mapOperation(f.ctx, tt.cr)).To(Equal(tt.want))
		})
	}
}

func TestReconcileCRRejectsWhatItCannotCarryOut(t *testing.T) {
	f := newFixture(t, nil)
	self := f.r.Identity
	other := f.otherInstance()
	theirs := f.operation(other.InstanceID, db.OperationResourceApplication, uuid.NewString(), "", db.OperationWaiting)
	unknown := uuid.NewString()
	tests := []struct {
		name string
		id   string
		want string
	}{
		{name: "an operation that does not exist", id: unknown,
			want: fmt.Sprintf("rejected: operation %s does not exist in the database", unknown)},
		{name: "not an operation id", id: "not-a-uuid",
			want: "rejected: spec.operationID is not a valid operation id"},
		{name: "another instance's operation", id: theirs.ID,
			want: fmt.Sprintf("rejected: operation belongs to another engine instance (namespace %q)", other.Namespace)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cr := f.createCR(self.Namespace, "op-"+uuid.NewString()[:8], tt.id)
			_, err := f.r.Reconcile(f.ctx, Request{OperationCR: client.ObjectKeyFromObject(cr)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cp.Client.Get(f.ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
			g.Expect(cr.Status.State).To(Equal(v1.OperationStateFailed))
			g.Expect(cr.Status.Message).To(Equal(tt.want))
			g.Expect(cr.Status.ObservedGeneration).To(Equal(cr.Generation))
			g.Expect(f.queued()).To(BeEmpty())
		})
	}
	// A rejected operation's row is not touched: it is the other instance's.
	NewWithT(t).Expect(f.get(theirs.ID).State).To(Equal(db.OperationWaiting))
}

func TestReconcileCRRejectsACRInAnotherNamespace(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	op := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, uuid.NewString(), "", db.OperationWaiting)
	elsewhere := cp.NewNamespace(t, "elsewhere-")
	cr := f.createCR(elsewhere, v1.OperationName(op.ID), op.ID)

	_, err := f.r.Reconcile(f.ctx, Request{OperationCR: client.ObjectKeyFromObject(cr)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.Client.Get(f.ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
	g.Expect(cr.Status.State).To(Equal(v1.OperationStateFailed))
	g.Expect(cr.Status.Message).To(Equal(fmt.Sprintf(
		"rejected: the Operation is in namespace %q, but this cluster-agent serves the engine instance in namespace %q", elsewhere, f.r.Identity.Namespace)))
	g.Expect(f.get(op.ID).State).To(Equal(db.OperationWaiting), "the row is left alone")
	g.Expect(f.queued()).To(BeEmpty())
}

func TestReconcileCRQueuesAnUnfinishedOperationOfThisInstance(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	op := f.operation(f.r.Identity.InstanceID, db.OperationResourceRepositoryCredential, uuid.NewString(), "", db.OperationWaiting)
	cr := f.createCR(f.r.Identity.Namespace, v1.OperationName(op.ID), op.ID)

	_, err := f.r.Reconcile(f.ctx, Request{OperationCR: client.ObjectKeyFromObject(cr)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.queued()).To(Equal([]Request{{Signal: true}, {ResourceType: op.ResourceType, ResourceID: op.ResourceID}}))
	g.Expect(cp.Client.Get(f.ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
	g.Expect(cr.Status).To(Equal(v1.OperationStatus{}), "an accepted CR gets no status: the state is in the row")
}

func TestReconcileCRDeletesAFinishedCRWhoseRowWasCollected(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	gone := uuid.NewString()
	cr := f.createCR(f.r.Identity.Namespace, v1.OperationName(gone), gone)
	cr.Status = v1.OperationStatus{State: v1.OperationStateCompleted, Message: "done"}
	g.Expect(cp.Client.Status().Update(f.ctx, cr)).To(Succeed())

	_, err := f.r.Reconcile(f.ctx, Request{OperationCR: client.ObjectKeyFromObject(cr)})
	g.Expect(err).NotTo(HaveOccurred())
	err = cp.Client.Get(f.ctx, client.ObjectKeyFromObject(cr), &v1.Operation{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the CR is still there: %v", err)
}

func TestReconcileCRIgnoresACRThatIsGone(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	_, err := f.r.Reconcile(f.ctx, Request{OperationCR: client.ObjectKey{Namespace: f.r.Identity.Namespace, Name: "operation-gone"}})
	g.Expect(err).NotTo(HaveOccurred())
}

func (f *fixture) createCR(ns, name, operationID string) *v1.Operation {
	f.t.Helper()
	cr := &v1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.OperationSpec{OperationID: operationID}}
	NewWithT(f.t).Expect(cp.Client.Create(f.ctx, cr)).To(Succeed())
	return cr
}

func TestReconcileCRWritesARejectionOnce(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	theirs := f.operation(f.otherInstance().InstanceID, db.OperationResourceApplication, uuid.NewString(), "", db.OperationWaiting)
	cr := f.createCR(f.r.Identity.Namespace, v1.OperationName(theirs.ID), theirs.ID)
	_, err := f.r.Reconcile(f.ctx, Request{OperationCR: client.ObjectKeyFromObject(cr)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.Client.Get(f.ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
	g.Expect(cr.Status.State).To(Equal(v1.OperationStateFailed))
	written := cr.ResourceVersion

	// The same reason again (a resync, a restart): no write.
	_, err = f.r.Reconcile(f.ctx, Request{OperationCR: client.ObjectKeyFromObject(cr)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.Client.Get(f.ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
	g.Expect(cr.ResourceVersion).To(Equal(written))
	g.Expect(f.get(theirs.ID).State).To(Equal(db.OperationWaiting), "the other instance's row is never touched")
}

// unreadable is a Store whose pending operations cannot be listed (the database is down).
type unreadable struct{ Store }

func (unreadable) ListPendingOperations(context.Context, bun.IDB, string) ([]db.Operation, error) {
	return nil, errors.New("connection refused")
}

func TestResyncQueuesTheSignalAndThePendingOperations(t *testing.T) {
	tests := []struct {
		name string
		down bool
		want func(waiting, inProgress *db.Operation) []Request
	}{
		{name: "database up", want: func(waiting, inProgress *db.Operation) []Request {
			return []Request{{Signal: true},
				{ResourceType: waiting.ResourceType, ResourceID: waiting.ResourceID},
				{ResourceType: inProgress.ResourceType, ResourceID: inProgress.ResourceID}}
		}},
		// A start during an outage of the database still takes the signal once it is back:
		// a signal left up gets no new CR.
		{name: "database down", down: true, want: func(_, _ *db.Operation) []Request {
			return []Request{{Signal: true}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, nil)
			waiting := f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, uuid.NewString(), "", db.OperationWaiting)
			inProgress := f.operation(f.r.Identity.InstanceID, db.OperationResourceAppProject, uuid.NewString(), "", db.OperationInProgress)
			f.operation(f.r.Identity.InstanceID, db.OperationResourceApplication, uuid.NewString(), "", db.OperationCompleted)
			if tt.down {
				f.r.Store = unreadable{f.r.Store}
			}
			g.Expect(f.r.resync(f.ctx, f.q)).To(Succeed())
			g.Expect(f.queued()).To(ConsistOf(tt.want(waiting, inProgress)))
		})
	}
}
