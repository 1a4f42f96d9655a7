package sweep

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/agenttest"
)

// One API server (the service's CRDs for Operation CRs, Argo CD's for Applications and
// AppProjects) and one PostgreSQL for the package.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{}, &cp, func() int { return dbtest.Main(m) }))
}

func TestSweepFindingSaysWhatTheSweepFound(t *testing.T) {
	tests := []struct {
		name  string
		owner string
		rt    db.OperationResourceType
		want  string
	}{
		// No owner: the row is gone and the handler deletes the object.
		{name: "orphan", owner: "", rt: db.OperationResourceApplication, want: "orphaned Application"},
		{name: "orphaned cluster Secret", owner: "", rt: db.OperationResourceManagedEnvironment, want: "orphaned ManagedEnvironment"},
		// An owner: the row exists and the handler applies it again.
		{name: "changed by hand", owner: "t1", rt: db.OperationResourceAppProject, want: "AppProject changed by hand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(sweepFinding(tt.owner, tt.rt)).To(Equal(tt.want))
		})
	}
}

func TestBatchSizeDefault(t *testing.T) {
	g := NewWithT(t)
	g.Expect((&Sweeper{}).batchSize()).To(Equal(DefaultBatchSize))
	g.Expect((&Sweeper{BatchSize: -1}).batchSize()).To(Equal(DefaultBatchSize))
	g.Expect((&Sweeper{BatchSize: 7}).batchSize()).To(Equal(7))
}

// fixture is a Sweeper on a real database and API server, recording what it hands back
// to the operation controller.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	db       *bun.DB
	store    *db.Store
	s        *Sweeper
	requeued []string
	signals  int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	f := &fixture{t: t, ctx: context.Background(), db: bdb, store: store}
	f.s = &Sweeper{Client: cp.Client, APIReader: cp.Client, DB: bdb, Store: store, Identity: agenttest.Instance(t, cp, bdb, store),
		Requeue: func(op *db.Operation) { f.requeued = append(f.requeued, op.ID) }, TakeSignal: func() { f.signals++ }}
	return f
}

// tenant creates a tenant placed on instanceID.
func (f *fixture) tenant(instanceID string) *db.Tenant {
	f.t.Helper()
	return agenttest.Tenant(f.t, f.db, f.store, instanceID)
}

func (f *fixture) row(tenant *db.Tenant) *db.Application {
	f.t.Helper()
	id := uuid.NewString()
	row := &db.Application{ID: id, TenantID: tenant.ID, Name: argocd.ApplicationName(types.UID(id)), EngineInstanceID: tenant.EngineInstanceID,
		Spec: argocd.ApplicationSpec(argocd.ApplicationInput{RepoURL: "https://example.com/repo.git", Path: "app",
			Destination: argocd.Destination{Namespace: "team-a"}, Project: argocd.AppProjectName(tenant.ID)})}
	_, err := f.store.UpsertApplication(f.ctx, f.db, row)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return row
}

// argoApp creates an Argo CD Application in the engine namespace with labels.
func (f *fixture) argoApp(name string, labels map[string]string) {
	f.t.Helper()
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: f.s.Identity.Namespace, Name: name, Labels: labels},
		Spec: argov1alpha1.ApplicationSpec{Source: &argov1alpha1.ApplicationSource{RepoURL: "https://example.com/repo.git"},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"}, Project: "default"}}
	NewWithT(f.t).Expect(cp.Client.Create(f.ctx, app)).To(Succeed())
}

// project creates the tenant's local AppProject as the agent writes it (with the hash of its spec).
func (f *fixture) project(tenantID string, mutate func(*argov1alpha1.AppProject)) {
	f.t.Helper()
	p := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: f.s.Identity.Namespace, Name: argocd.AppProjectName(tenantID),
		Labels: map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelTenantID: tenantID}},
		Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"https://example.com/repo.git"},
			Destinations: []argov1alpha1.ApplicationDestination{{Server: argocd.InClusterServer, Namespace: "team-a"}}}}
	p.Annotations = map[string]string{argocd.AnnotationDataHash: argocd.ProjectSpecHash(p.Spec)}
	if mutate != nil {
		mutate(p)
	}
	NewWithT(f.t).Expect(cp.Client.Create(f.ctx, p)).To(Succeed())
}

func (f *fixture) secret(name string, labels map[string]string) {
	f.t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.s.Identity.Namespace, Name: name, Labels: labels},
		Data: map[string][]byte{"server": []byte("https://cluster.example.com")}}
	NewWithT(f.t).Expect(cp.Client.Create(f.ctx, sec)).To(Succeed())
}

// ops are the operations about a resource, newest first.
func (f *fixture) ops(rt db.OperationResourceType, id string) []db.Operation {
	f.t.Helper()
	ops, err := f.store.ListOperationsForResource(f.ctx, f.db, rt, id)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return ops
}

func (f *fixture) run() Result {
	f.t.Helper()
	res, err := f.s.Run(f.ctx)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return res
}

// hasCR says whether the Operation CR of an operation exists.
func (f *fixture) hasCR(operationID string) bool {
	f.t.Helper()
	err := cp.Client.Get(f.ctx, client.ObjectKey{Namespace: f.s.Identity.Namespace, Name: v1.OperationName(operationID)}, &v1.Operation{})
	if client.IgnoreNotFound(err) != nil {
		f.t.Fatal(err)
	}
	return err == nil
}

func TestRunSignalsTheDeletionOfAnApplicationWithoutARowOnce(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	orphan := uuid.NewString()
	f.argoApp(argocd.ApplicationName(types.UID(orphan)), map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelApplicationID: orphan})

	res := f.run()
	g.Expect(res.Applications).To(Equal(1))
	ops := f.ops(db.OperationResourceApplication, orphan)
	g.Expect(ops).To(HaveLen(1))
	g.Expect(ops[0].EngineInstanceID).To(Equal(f.s.Identity.InstanceID))
	g.Expect(ops[0].State).To(Equal(db.OperationWaiting))
	// No owner tenant: the handler deletes the Application.
	g.Expect(ops[0].OwnerTenantID).To(BeEmpty())
	g.Expect(ops[0].HumanReadableState).To(Equal("waiting for the cluster-agent (orphaned Application found by the sweep)"))
	g.Expect(ops[0].GCExpirationSeconds).To(Equal(DefaultGCExpirationSeconds))
	g.Expect(f.hasCR(ops[0].ID)).To(BeTrue(), "the operation controller is woken by its CR")

	// While that operation is pending, the next run does not signal it again.
	res = f.run()
	g.Expect(res.Applications).To(BeZero())
	g.Expect(f.ops(db.OperationResourceApplication, orphan)).To(HaveLen(1))
}

func TestRunLeavesAloneWhatIsNotAnOrphanOfTheService(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	tenant := f.tenant(f.s.Identity.InstanceID)
	row := f.row(tenant)
	f.project(tenant.ID, nil)
	// The row's own Application.
	f.argoApp(row.Name, map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelApplicationID: row.ID, argocd.LabelTenantID: tenant.ID})
	// Someone else's Applications: without the service's label, or with an id that is not one.
	foreign := uuid.NewString()
	f.argoApp("theirs", map[string]string{argocd.LabelApplicationID: foreign})
	f.argoApp("not-an-id", map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelApplicationID: "app-1"})

	res := f.run()
	g.Expect(res).To(Equal(Result{}))
	g.Expect(f.ops(db.OperationResourceApplication, row.ID)).To(BeEmpty())
	g.Expect(f.ops(db.OperationResourceApplication, foreign)).To(BeEmpty())
}

func TestRunRestoresWhatWasDeletedByHand(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	tenant := f.tenant(f.s.Identity.InstanceID)
	row := f.row(tenant)

	// Neither the Application nor the tenant's AppProjects exist.
	res := f.run()
	g.Expect(res.Restored).To(Equal(2))
	g.Expect(res.Applications).To(BeZero())
	for _, rt := range []db.OperationResourceType{db.OperationResourceApplication, db.OperationResourceAppProject} {
		id := row.ID
		if rt == db.OperationResourceAppProject {
			id = tenant.ID
		}
		ops := f.ops(rt, id)
		g.Expect(ops).To(HaveLen(1), "%s", rt)
		// With the owner tenant, so that the handler applies the row again.
		g.Expect(ops[0].OwnerTenantID).To(Equal(tenant.ID))
		g.Expect(ops[0].HumanReadableState).To(Equal("waiting for the cluster-agent (" + string(rt) + " changed by hand found by the sweep)"))
	}

	// Restoring the Application failed (the row cannot be applied): the sweep does not
	// repeat the failure every run.
	app := f.ops(db.OperationResourceApplication, row.ID)[0]
	_, err := f.store.UpdateOperationStates(f.ctx, f.db, f.s.Identity.InstanceID, []string{app.ID}, db.OperationFailed, "Argo CD rejected it", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())
	proj := f.ops(db.OperationResourceAppProject, tenant.ID)[0]
	_, err = f.store.UpdateOperationStates(f.ctx, f.db, f.s.Identity.InstanceID, []string{proj.ID}, db.OperationCompleted, "done", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())
	res = f.run()
	g.Expect(f.ops(db.OperationResourceApplication, row.ID)).To(HaveLen(1), "a failed restore was repeated")
	// A completed one that did not bring the object back is tried again.
	g.Expect(f.ops(db.OperationResourceAppProject, tenant.ID)).To(HaveLen(2))
	g.Expect(res.Restored).To(Equal(1))
}

func TestRunDoesNotRestoreTheAppProjectOfATenantThatHasOne(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	tenant := f.tenant(f.s.Identity.InstanceID)
	row := f.row(tenant)
	f.argoApp(row.Name, map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelApplicationID: row.ID, argocd.LabelTenantID: tenant.ID})
	// Only the remote one: a tenant needs one of its two when it deploys to one side only.
	f.project(tenant.ID, func(p *argov1alpha1.AppProject) { p.Name = argocd.RemoteAppProjectName(tenant.ID) })

	res := f.run()
	g.Expect(res.Restored).To(BeZero())
	g.Expect(f.ops(db.OperationResourceAppProject, tenant.ID)).To(BeEmpty())
}

func TestRunPutsBackAnAppProjectChangedByHand(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*argov1alpha1.AppProject)
	}{
		{name: "a repository added", mutate: func(p *argov1alpha1.AppProject) { p.Spec.SourceRepos = append(p.Spec.SourceRepos, "*") }},
		// An AppProject without the hash was not written by the agent as it is.
		{name: "the hash removed", mutate: func(p *argov1alpha1.AppProject) { p.Annotations = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			tenant := f.tenant(f.s.Identity.InstanceID)
			f.project(tenant.ID, tt.mutate)

			res := f.run()
			g.Expect(res.Restored).To(Equal(1))
			g.Expect(res.AppProjects).To(BeZero(), "not deleted: the tenant exists")
			ops := f.ops(db.OperationResourceAppProject, tenant.ID)
			g.Expect(ops).To(HaveLen(1))
			g.Expect(ops[0].OwnerTenantID).To(Equal(tenant.ID))
		})
	}
}

func TestRunHandsTheObjectsOfATenantServedElsewhereToItsHandler(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	other := agenttest.Instance(t, cp, f.db, f.store)
	moved := f.tenant(other.InstanceID)
	// Its AppProject here is as the agent wrote it, but the tenant is now another instance's.
	f.project(moved.ID, nil)

	res := f.run()
	g.Expect(res.Restored).To(Equal(1))
	ops := f.ops(db.OperationResourceAppProject, moved.ID)
	g.Expect(ops).To(HaveLen(1))
	g.Expect(ops[0].EngineInstanceID).To(Equal(f.s.Identity.InstanceID), "this instance's handler removes what is left here")
}

func TestRunSignalsTheDeletionOfCredentialsAndProjectsWithoutARow(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	env, cred, tenant := uuid.NewString(), uuid.NewString(), uuid.NewString()
	managed := map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range managed {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	f.secret(argocd.ClusterSecretName(env), with(map[string]string{argocd.LabelSecretType: argocd.SecretTypeCluster, argocd.LabelManagedEnvironmentID: env}))
	// Two repository Secrets per credential: one operation.
	f.secret(argocd.RepositorySecretName(cred), with(map[string]string{argocd.LabelSecretType: argocd.SecretTypeRepository, argocd.LabelRepositoryCredID: cred}))
	f.secret(argocd.RepositorySecretName(cred)+"-remote", with(map[string]string{argocd.LabelSecretType: argocd.SecretTypeRepository, argocd.LabelRepositoryCredID: cred}))
	f.project(tenant, nil)
	// A Secret without the service's label is never touched.
	unmanaged := uuid.NewString()
	f.secret("someone-elses", map[string]string{argocd.LabelSecretType: argocd.SecretTypeCluster, argocd.LabelManagedEnvironmentID: unmanaged})

	res := f.run()
	g.Expect(res.ClusterSecrets).To(Equal(1))
	g.Expect(res.RepositorySecrets).To(Equal(1))
	g.Expect(res.AppProjects).To(Equal(1))
	g.Expect(f.ops(db.OperationResourceManagedEnvironment, env)).To(HaveLen(1))
	g.Expect(f.ops(db.OperationResourceRepositoryCredential, cred)).To(HaveLen(1))
	g.Expect(f.ops(db.OperationResourceAppProject, tenant)).To(HaveLen(1))
	g.Expect(f.ops(db.OperationResourceManagedEnvironment, unmanaged)).To(BeEmpty())
	for _, op := range f.ops(db.OperationResourceManagedEnvironment, env) {
		g.Expect(op.OwnerTenantID).To(BeEmpty(), "deleted, not applied")
		g.Expect(op.HumanReadableState).To(ContainSubstring("orphaned ManagedEnvironment"))
	}
}

func TestRunHandsBackOperationsPendingPastTheGracePeriod(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.s.OperationGrace = time.Minute
	create := func(state db.OperationState, age string) *db.Operation {
		op := &db.Operation{EngineInstanceID: f.s.Identity.InstanceID, ResourceType: db.OperationResourceAppProject,
			ResourceID: uuid.NewString(), State: state, HumanReadableState: "waiting"}
		g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
		_, err := f.db.NewUpdate().Model((*db.Operation)(nil)).Set("created_at = now() - ?::interval", age).Where("id = ?", op.ID).Exec(f.ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return op
	}
	stuck := create(db.OperationInProgress, "10 minutes")
	lost := create(db.OperationWaiting, "5 minutes")
	create(db.OperationWaiting, "1 second")           // the backend is about to create its CR
	create(db.OperationCompleted, "1 hour")           // finished
	other := agenttest.Instance(t, cp, f.db, f.store) // another instance's: its agent's to hand back
	g.Expect(f.store.CreateOperation(f.ctx, f.db, &db.Operation{EngineInstanceID: other.InstanceID,
		ResourceType: db.OperationResourceAppProject, ResourceID: uuid.NewString(), HumanReadableState: "waiting"})).To(Succeed())

	res := f.run()
	g.Expect(res.OperationsRequeued).To(Equal(2))
	g.Expect(f.requeued).To(ConsistOf(stuck.ID, lost.ID))
	g.Expect(f.signals).To(Equal(1), "the signal is taken once after handing them back")
}

func TestRunTakesNoSignalWhenNothingIsPending(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	res := f.run()
	g.Expect(res.OperationsRequeued).To(BeZero())
	g.Expect(f.signals).To(BeZero())

	// Without a Requeue, operations are never handed back.
	f.s.Requeue = nil
	op := &db.Operation{EngineInstanceID: f.s.Identity.InstanceID, ResourceType: db.OperationResourceAppProject,
		ResourceID: uuid.NewString(), HumanReadableState: "waiting"}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
	f.s.OperationGrace = time.Nanosecond
	res = f.run()
	g.Expect(res.OperationsRequeued).To(BeZero())
	g.Expect(f.signals).To(BeZero())
}

func TestRunTakesTheSignalWhenItIsUpOrAnOperationWaits(t *testing.T) {
	tests := []struct {
		name     string
		state    db.OperationState // of one fresh operation ("": none)
		signalUp bool
		want     bool
	}{
		{name: "nothing pending, no signal", want: false},
		{name: "a finished operation", state: db.OperationCompleted, want: false},
		// Its handler waits for Argo CD; the controller requeues it itself.
		{name: "a fresh operation in progress", state: db.OperationInProgress, want: false},
		// Written under a signal the controller no longer takes, or put back to Waiting by
		// a database that lost the state write.
		{name: "a fresh Waiting operation", state: db.OperationWaiting, want: true},
		// The database lost the transaction that took the signal down: the backend raises
		// no other while it is up, so nothing else would create a CR.
		{name: "a signal up without operations", state: db.OperationCompleted, signalUp: true, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			if tt.state != "" {
				op := &db.Operation{EngineInstanceID: f.s.Identity.InstanceID, ResourceType: db.OperationResourceAppProject,
					ResourceID: uuid.NewString(), State: tt.state, HumanReadableState: "waiting"}
				g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
				if tt.signalUp {
					raised, err := f.store.RaiseSignal(f.ctx, f.db, op)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(raised).To(BeTrue())
				}
			}
			res := f.run()
			g.Expect(res.OperationsRequeued).To(BeZero(), "nothing is past the grace period")
			g.Expect(res.SignalTaken).To(Equal(tt.want))
			g.Expect(f.signals).To(Equal(map[bool]int{false: 0, true: 1}[tt.want]))
		})
	}
}

func TestRunUsesTheConfiguredRetentionForItsOperations(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.s.GCExpirationSeconds = 42
	orphan := uuid.NewString()
	f.argoApp(argocd.ApplicationName(types.UID(orphan)), map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelApplicationID: orphan})
	f.run()
	ops := f.ops(db.OperationResourceApplication, orphan)
	g.Expect(ops).To(HaveLen(1))
	g.Expect(ops[0].GCExpirationSeconds).To(Equal(42))
}
