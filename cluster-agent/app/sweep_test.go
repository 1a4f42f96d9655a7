package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/sweep"
)

// TestSweepDeletesOrphanedApplicationsAndHandsBackStuckOperations: a labelled Argo CD
// Application without a row is deleted (through an Application operation), an unlabelled
// one and one with a row are left alone, and a pending operation that nothing signalled is
// handed back to the operation controller and carried out.
func TestSweepDeletesOrphanedApplicationsAndHandsBackStuckOperations(t *testing.T) {
	t.Parallel()
	e := startAgent(t, true, func(o *agent.Options) { o.SweepInterval = time.Second })
	g := e.g()
	tenant := e.tenant()
	spec := argocd.ApplicationSpec(argocd.ApplicationInput{
		RepoURL: "https://github.com/example/gitops", Path: "dev", TargetRevision: "main",
		Destination: argocd.Destination{Namespace: "team-a"}, Project: argocd.AppProjectName(tenant.ID),
	})

	// An Application the agent made, whose row was deleted without an operation.
	orphanID := uuid.NewString()
	orphan := argocd.Application(e.ns, argocd.ApplicationName(types.UID(orphanID)), orphanID, tenant.ID, spec)
	g.Expect(e.c.Create(e.ctx, orphan)).To(Succeed())
	// Someone else's Application in the namespace.
	foreign := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "not-ours", Namespace: e.ns},
		Spec:       *spec.DeepCopy(),
	}
	g.Expect(e.c.Create(e.ctx, foreign)).To(Succeed())
	// A live application with its row.
	live := e.application(tenant, uuid.NewString(), "https://github.com/example/gitops", "prod", "team-a", true)
	e.completed(e.signal(db.OperationResourceApplication, live.ID, tenant.ID).ID)

	// A row and a pending operation whose CR was never created, older than the grace period.
	late := e.application(tenant, uuid.NewString(), "https://github.com/example/gitops", "stage", "team-a", true)
	op := &db.Operation{EngineInstanceID: e.id.InstanceID, ResourceType: db.OperationResourceApplication, ResourceID: late.ID,
		OwnerTenantID: tenant.ID, GCExpirationSeconds: 3600}
	g.Expect(e.store.CreateOperation(e.ctx, e.db, op)).To(Succeed())
	_, err := e.db.NewUpdate().Table("operations").Set("created_at = now() - interval '5 minutes'").Where("id = ?", op.ID).Exec(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKeyFromObject(orphan), &argov1alpha1.Application{}))
	}, timeout, interval).Should(BeTrue(), "the orphaned Application is deleted")
	ops, err := e.store.ListOperationsForResource(e.ctx, e.db, db.OperationResourceApplication, orphanID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops).To(HaveLen(1))
	e.completed(ops[0].ID)

	// The sweep hands it to the operation controller, which carries it out.
	e.completed(op.ID)
	e.argoApp(late.Name)

	g.Consistently(func() error {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(foreign), &argov1alpha1.Application{}); err != nil {
			return err
		}
		return e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: live.Name}, &argov1alpha1.Application{})
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "Applications not ours, or with a row, stay")
	ops, err = e.store.ListOperationsForResource(e.ctx, e.db, db.OperationResourceApplication, live.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops).To(HaveLen(1), "no operation for an Application with a row")
}

// TestSweepHandsBackAnOperationWhoseStateWasLost: an operation the agent finished goes back
// to Waiting, as when the database lost the transaction that finished it. No event brings
// it back to the operation controller; the sweep does once it is older than the grace
// period, and the operation is finished again.
func TestSweepHandsBackAnOperationWhoseStateWasLost(t *testing.T) {
	t.Parallel()
	e := startAgent(t, true, func(o *agent.Options) { o.SweepInterval = time.Second })
	g := e.g()
	tenant := e.tenant()
	app := e.application(tenant, uuid.NewString(), "https://github.com/example/gitops", "prod", "team-a", true)
	op := e.signal(db.OperationResourceApplication, app.ID, tenant.ID)
	e.completed(op.ID)

	_, err := e.db.NewUpdate().Table("operations").
		Set("state = 'Waiting', human_readable_state = 'lost', gc_expires_at = NULL, created_at = now() - interval '5 minutes'").
		Where("id = ?", op.ID).Exec(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func(g Gomega) {
		row := e.operation(op.ID)
		g.Expect(row.State).To(Equal(db.OperationCompleted))
		g.Expect(row.HumanReadableState).NotTo(Equal("lost"))
	}, timeout, interval).Should(Succeed(), "the sweep hands the operation back and it is finished again")
}

// TestSweepTakesASignalTheDatabaseBroughtBack: the agent took its signal down, and the
// database lost that transaction (a crash with asynchronous commit). The signal is up again
// with its CR long gone, so an operation written under it gets no CR and no event brings it
// to the operation controller; the sweep has the controller take the signal, and the
// operation is carried out well within the sweep's grace period for stuck operations.
func TestSweepTakesASignalTheDatabaseBroughtBack(t *testing.T) {
	t.Parallel()
	e := startAgent(t, true, func(o *agent.Options) { o.SweepInterval = time.Second })
	g := e.g()
	tenant := e.tenant()
	first := e.application(tenant, uuid.NewString(), "https://github.com/example/gitops", "prod", "team-a", true)
	e.completed(e.signal(db.OperationResourceApplication, first.ID, tenant.ID).ID)
	g.Eventually(func() error {
		_, err := e.store.GetSignal(e.ctx, e.db, e.id.InstanceID)
		return err
	}, timeout, interval).Should(MatchError(db.ErrNotFound), "the agent takes its signal down")

	// The lost transaction: the signal is back, its CR was created long ago.
	_, err := e.db.NewInsert().Model(&db.OperationSignal{EngineInstanceID: e.id.InstanceID, OperationID: uuid.NewString(), CRCreated: true}).Exec(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	second := e.application(tenant, uuid.NewString(), "https://github.com/example/gitops", "stage", "team-a", true)
	op := e.signal(db.OperationResourceApplication, second.ID, tenant.ID)
	g.Expect(op.Signalled).To(BeFalse(), "the backend raises no signal while one is up")

	e.completed(op.ID)
	// Within a few runs of the sweep (every second here), long before the grace period
	// after which it hands back operations of any state.
	g.Expect(time.Since(op.CreatedAt)).To(BeNumerically("<", 10*time.Second), "carried out by the sweep's taking of the signal")
	g.Expect(sweep.DefaultOperationGrace).To(BeNumerically(">", 10*time.Second))
	g.Expect(e.argoApp(second.Name).Spec.Source.Path).To(Equal("stage"), "the Application of the operation is applied")
}

// TestSweepDeletesOrphanedSecretsAndAppProjects: the service's cluster Secret, repository
// Secrets and AppProjects whose managed environment, repository credential or tenant has
// no row are deleted through operations; those with rows stay, and are put back when
// edited by hand.
func TestSweepDeletesOrphanedSecretsAndAppProjects(t *testing.T) {
	t.Parallel()
	e := startAgent(t, true, func(o *agent.Options) { o.SweepInterval = time.Second })
	g := e.g()
	tenant := e.tenant()

	// Live: an environment with its cluster Secret, the tenant's AppProject.
	liveEnv := e.managedEnvironment(tenant)
	e.completed(e.signal(db.OperationResourceManagedEnvironment, liveEnv.ID, tenant.ID).ID)
	_, err := e.store.AddAppProjectDestination(e.ctx, e.db, tenant.ID, liveEnv.ID)
	g.Expect(err).NotTo(HaveOccurred())
	e.completed(e.signal(db.OperationResourceAppProject, tenant.ID, tenant.ID).ID)

	// Orphans: written as the agent writes them, for rows that do not exist.
	goneTenant, goneEnv, goneCred := uuid.NewString(), uuid.NewString(), uuid.NewString()
	cluster, err := argocd.ClusterSecret(e.ns, argocd.Cluster{ManagedEnvironmentID: goneEnv, TenantID: goneTenant,
		APIURL: envAPIURL, BearerToken: "orphan-token"})
	g.Expect(err).NotTo(HaveOccurred())
	orphans := []client.Object{cluster}
	for _, s := range argocd.RepositorySecrets(e.ns, argocd.Repository{RepositoryCredentialID: goneCred, TenantID: goneTenant,
		URL: "https://github.com/example/private", Username: "u", Password: "p"}) {
		orphans = append(orphans, s)
	}
	local, remote := argocd.AppProjects(e.ns, goneTenant, argocd.InClusterServer, []string{"https://github.com/example/gitops"},
		[]argocd.ProjectDestination{{Namespace: "team-x"}, {ManagedEnvironmentID: goneEnv, Namespace: "*"}})
	orphans = append(orphans, local, remote)
	for _, o := range orphans {
		g.Expect(e.c.Create(e.ctx, o)).To(Succeed())
	}

	for _, o := range orphans {
		g.Eventually(func() bool {
			return apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)))
		}, timeout, interval).Should(BeTrue(), "orphan %s is deleted", o.GetName())
	}
	for typ, id := range map[db.OperationResourceType]string{db.OperationResourceManagedEnvironment: goneEnv,
		db.OperationResourceRepositoryCredential: goneCred, db.OperationResourceAppProject: goneTenant} {
		ops, err := e.store.ListOperationsForResource(e.ctx, e.db, typ, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ops).To(HaveLen(1), "one %s operation for the orphan", typ)
	}

	g.Consistently(func() error {
		if _, err := e.secret(argocd.ClusterSecretName(liveEnv.ID)); err != nil {
			return err
		}
		return e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: argocd.RemoteAppProjectName(tenant.ID)}, &argov1alpha1.AppProject{})
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "objects with rows stay")
	ops, err := e.store.ListOperationsForResource(e.ctx, e.db, db.OperationResourceManagedEnvironment, liveEnv.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops).To(HaveLen(1), "no sweep operation for an environment with a row")

	// Hand edits: a cluster Secret pointed elsewhere, an AppProject opened to any repository.
	secret, err := e.secret(argocd.ClusterSecretName(liveEnv.ID))
	g.Expect(err).NotTo(HaveOccurred())
	wantServer := string(secret.Data["server"])
	secret.Data["server"] = []byte("https://attacker.example.com")
	g.Expect(e.c.Update(e.ctx, secret)).To(Succeed())
	project := &argov1alpha1.AppProject{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: argocd.RemoteAppProjectName(tenant.ID)}, project)).To(Succeed())
	wantRepos := project.Spec.SourceRepos
	project.Spec.SourceRepos = []string{"*"}
	g.Expect(e.c.Update(e.ctx, project)).To(Succeed())

	g.Eventually(func() (string, error) {
		s, err := e.secret(argocd.ClusterSecretName(liveEnv.ID))
		if err != nil {
			return "", err
		}
		return string(s.Data["server"]), nil
	}, timeout, interval).Should(Equal(wantServer), "the cluster Secret is restored")
	g.Eventually(func() ([]string, error) {
		p := &argov1alpha1.AppProject{}
		err := e.c.Get(e.ctx, client.ObjectKeyFromObject(project), p)
		return p.Spec.SourceRepos, err
	}, timeout, interval).Should(Equal(wantRepos), "the AppProject is restored")
}

// TestSweepRestoresObjectsDeletedByHand: an Application, the tenant's AppProjects, a cluster
// Secret and repository Secrets deleted by hand while their rows exist are put back through
// operations with the owner tenant; nothing is signalled while they are all there.
func TestSweepRestoresObjectsDeletedByHand(t *testing.T) {
	t.Parallel()
	e := startAgent(t, true, func(o *agent.Options) { o.SweepInterval = time.Second })
	g := e.g()
	tenant := e.tenant()

	env := e.managedEnvironment(tenant)
	_, err := e.store.AddAppProjectDestination(e.ctx, e.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	app := e.application(tenant, uuid.NewString(), "https://github.com/example/gitops", "prod", "team-a", true)
	app.ManagedEnvironmentID = env.ID
	_, err = e.store.UpsertApplication(e.ctx, e.db, app)
	g.Expect(err).NotTo(HaveOccurred())
	cred := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: e.id.InstanceID,
		RepositoryURL: "https://github.com/example/private", Username: "bot", Password: repoPasswd}
	g.Expect(e.store.CreateRepositoryCredential(e.ctx, e.db, cred)).To(Succeed())
	signalled := map[db.OperationResourceType]string{
		db.OperationResourceManagedEnvironment: env.ID, db.OperationResourceRepositoryCredential: cred.ID,
		db.OperationResourceAppProject: tenant.ID, db.OperationResourceApplication: app.ID,
	}
	for typ, id := range signalled {
		e.completed(e.signal(typ, id, tenant.ID).ID)
	}
	operations := func(typ db.OperationResourceType) []db.Operation {
		ops, err := e.store.ListOperationsForResource(e.ctx, e.db, typ, signalled[typ])
		g.Expect(err).NotTo(HaveOccurred())
		return ops
	}
	// The sweep runs every second from the start, so it may have applied a row itself
	// before the test signalled it: count from what there is once everything exists.
	before := map[db.OperationResourceType]int{}
	total := 0
	for typ := range signalled {
		before[typ] = len(operations(typ))
		total += before[typ]
	}
	g.Consistently(func() int {
		n := 0
		for typ := range signalled {
			n += len(operations(typ))
		}
		return n
	}, 3*time.Second, 200*time.Millisecond).Should(Equal(total), "nothing is restored while everything is there")

	putBack := func(deleted []client.Object) {
		for _, o := range deleted {
			g.Expect(e.c.Delete(e.ctx, o)).To(Succeed())
		}
		for _, o := range deleted {
			g.Eventually(func() (types.UID, error) {
				back := o.DeepCopyObject().(client.Object)
				err := e.c.Get(e.ctx, client.ObjectKeyFromObject(o), back)
				return back.GetUID(), err
			}, timeout, interval).Should(And(Not(BeEmpty()), Not(Equal(o.GetUID()))), "%s is put back", o.GetName())
		}
	}
	// The AppProjects alone first: an Application operation applies its tenant's
	// AppProjects too, so with both gone at once either restore may bring them back.
	var projects []client.Object
	for _, name := range []string{argocd.AppProjectName(tenant.ID), argocd.RemoteAppProjectName(tenant.ID)} {
		project := &argov1alpha1.AppProject{}
		g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, project)).To(Succeed())
		projects = append(projects, project)
	}
	putBack(projects)

	application := e.argoApp(app.Name)
	application.Finalizers = nil // no Argo CD here to remove its finalizer
	g.Expect(e.c.Update(e.ctx, application)).To(Succeed())
	deleted := []client.Object{application}
	for _, name := range []string{argocd.ClusterSecretName(env.ID), argocd.RepositorySecretName(cred.ID), argocd.RemoteRepositorySecretName(cred.ID)} {
		secret, err := e.secret(name)
		g.Expect(err).NotTo(HaveOccurred())
		deleted = append(deleted, secret)
	}
	putBack(deleted)
	for typ := range signalled {
		ops := operations(typ)
		g.Expect(ops).To(HaveLen(before[typ]+1), "one restoring %s operation", typ)
		for _, op := range ops {
			g.Expect(op.OwnerTenantID).To(Equal(tenant.ID))
		}
	}
}
