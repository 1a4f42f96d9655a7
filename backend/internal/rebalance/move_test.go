package rebalance_test

import (
	"os"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
	"github.com/gitops-service/gitops-service/backend/internal/rebalance"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutArgoCDCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

// target names what an operation is for.
type target struct {
	Type db.OperationResourceType
	ID   string
}

func TestMoveSignalsBothInstancesForEverythingOfTheTenant(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb := dbtest.NewDB(t)
	key, err := secretbox.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	ring, err := secretbox.NewKeyring("test", map[string][]byte{"test": key})
	g.Expect(err).NotTo(HaveOccurred())
	store := db.NewStore(ring)
	instance := func() *db.EngineInstance {
		name := cp.NewNamespace(t, "argocd-")
		ns := &corev1.Namespace{}
		g.Expect(cp.Client.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
		_, ei, err := store.RegisterEngineInstance(ctx, bdb, "home", name, string(ns.UID))
		g.Expect(err).NotTo(HaveOccurred())
		return ei
	}
	from, to := instance(), instance()

	tenant, err := store.GetOrCreateTenant(ctx, bdb, uuid.NewString(), "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(store.SetTenantEngineInstance(ctx, bdb, tenant.ID, from.ID)).To(Succeed())
	env := &db.ManagedEnvironment{TenantID: tenant.ID, Name: "staging"}
	g.Expect(store.CreateManagedEnvironment(ctx, bdb, env, &db.ClusterCredentials{Host: "https://api.example.com:6443", BearerToken: "t"})).To(Succeed())
	app := &db.Application{TenantID: tenant.ID, Name: db.ApplicationName(uuid.NewString()), EngineInstanceID: from.ID,
		Spec: argov1alpha1.ApplicationSpec{Source: &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/a.git", Path: "app"},
			Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "team-a"}}}
	_, err = store.UpsertApplication(ctx, bdb, app)
	g.Expect(err).NotTo(HaveOccurred())
	cred := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: from.ID, RepositoryURL: "https://git.example.com/a.git",
		Username: "u", Password: "p"}
	g.Expect(store.CreateRepositoryCredential(ctx, bdb, cred)).To(Succeed())

	mover := &rebalance.Mover{DB: bdb, Store: store, Signal: &opsignal.Signaller{DB: bdb, Store: store, GCExpirationSeconds: 3600,
		Clusters: &opsignal.Clusters{Local: cp.Client, Own: "home", Base: cp.Config, Scheme: cp.Scheme, DB: bdb, Store: store, TTL: time.Hour}}}
	move, err := mover.Move(ctx, tenant.ID, to.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(move).To(Equal(&db.TenantMove{TenantID: tenant.ID, From: from.ID, To: to.ID, ApplicationIDs: []string{app.ID},
		ManagedEnvironmentIDs: []string{env.ID}, RepositoryCredentialIDs: []string{cred.ID}}))

	waiting := func(instance *db.EngineInstance) []target {
		ops, err := store.ListWaitingOperations(ctx, bdb, instance.ID)
		g.Expect(err).NotTo(HaveOccurred())
		var got []target
		for _, op := range ops {
			g.Expect(op.OwnerTenantID).To(Equal(tenant.ID))
			got = append(got, target{op.ResourceType, op.ResourceID})
		}
		sort.Slice(got, func(i, j int) bool { return got[i].Type < got[j].Type })
		return got
	}
	everything := []target{
		{db.OperationResourceApplication, app.ID},
		{db.OperationResourceAppProject, tenant.ID},
		{db.OperationResourceManagedEnvironment, env.ID},
		{db.OperationResourceRepositoryCredential, cred.ID},
	}
	sort.Slice(everything, func(i, j int) bool { return everything[i].Type < everything[j].Type })
	// The new instance creates everything; the old one lets the Application go, then the
	// AppProjects, and the credential operations remove the Secrets.
	g.Expect(waiting(to)).To(Equal(everything))
	g.Expect(waiting(from)).To(Equal(everything))

	// Each instance's signal is up with its Operation CR in the instance's namespace.
	for _, instance := range []*db.EngineInstance{from, to} {
		sig, err := store.GetSignal(ctx, bdb, instance.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sig.CRCreated).To(BeTrue())
		cr := &v1.Operation{}
		g.Expect(cp.Client.Get(ctx, client.ObjectKey{Namespace: instance.NamespaceName, Name: v1.OperationName(sig.OperationID)}, cr)).To(Succeed())
		g.Expect(cr.Spec.OperationID).To(Equal(sig.OperationID))
	}

	// No second move while this one is under way; moving it where it is does nothing.
	_, err = mover.Move(ctx, tenant.ID, from.ID)
	g.Expect(err).To(MatchError(db.ErrMoveInProgress))
	g.Expect(mover.Move(ctx, tenant.ID, to.ID)).To(BeNil())
}

func TestMovingATenantNeverPlacedSignalsOnlyItsNewInstance(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	name := cp.NewNamespace(t, "argocd-")
	ns := &corev1.Namespace{}
	g.Expect(cp.Client.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
	_, to, err := store.RegisterEngineInstance(ctx, bdb, "home", name, string(ns.UID))
	g.Expect(err).NotTo(HaveOccurred())
	tenant, err := store.GetOrCreateTenant(ctx, bdb, uuid.NewString(), "team-b")
	g.Expect(err).NotTo(HaveOccurred())

	mover := &rebalance.Mover{DB: bdb, Store: store, Signal: &opsignal.Signaller{DB: bdb, Store: store, GCExpirationSeconds: 3600,
		Clusters: &opsignal.Clusters{Local: cp.Client, Own: "home", Base: cp.Config, Scheme: cp.Scheme, DB: bdb, Store: store, TTL: time.Hour}}}
	move, err := mover.Move(ctx, tenant.ID, to.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(move.From).To(BeEmpty())
	ops, err := store.ListWaitingOperations(ctx, bdb, to.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops).To(HaveLen(1))
	g.Expect(ops[0].ResourceType).To(Equal(db.OperationResourceAppProject))
	g.Expect(ops[0].ResourceID).To(Equal(tenant.ID))
}
