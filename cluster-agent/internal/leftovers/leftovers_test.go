package leftovers

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/orphans"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/agenttest"
)

// One API server (Argo CD's CRDs) and one PostgreSQL for the package. The API server is
// also the destination the leftovers are removed from.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutServiceCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

func TestServiceAccountDefaultsToArgoCDsApplicationController(t *testing.T) {
	g := NewWithT(t)
	g.Expect((&Remover{}).serviceAccount()).To(Equal("argocd-application-controller"))
	g.Expect((&Remover{ArgoCDServiceAccount: "my-argocd"}).serviceAccount()).To(Equal("my-argocd"))
}

func TestLiveApplicationsListIgnoresTheVersion(t *testing.T) {
	cm := orphans.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}
	live := &liveApplications{resources: map[liveResource]bool{
		{destinationName: "managed-env-1", resource: orphans.Resource{Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}}:                     true,
		{destinationServer: argocd.InClusterServer, resource: orphans.Resource{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "web"}}: true,
	}}
	tests := []struct {
		name        string
		destName    string
		destServer  string
		resource    orphans.Resource
		wantTracked bool
	}{
		{name: "same destination and object", destName: "managed-env-1", resource: cm, wantTracked: true},
		// Argo CD may list another version of the same object.
		{name: "another version", destName: "managed-env-1", resource: orphans.Resource{Version: "v2", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}, wantTracked: true},
		// The same name on another cluster is another object.
		{name: "another destination", destName: "managed-env-2", resource: cm, wantTracked: false},
		{name: "in-cluster by server", destServer: argocd.InClusterServer,
			resource: orphans.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}, wantTracked: true},
		{name: "another group", destServer: argocd.InClusterServer,
			resource: orphans.Resource{Group: "extensions", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}, wantTracked: false},
		{name: "another namespace", destName: "managed-env-1", resource: orphans.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team-b", Name: "settings"}, wantTracked: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(live.lists(tt.destName, tt.destServer, tt.resource)).To(Equal(tt.wantTracked))
		})
	}
}

func TestRemovedEventSaysWhatWasRemovedInTheDestinationNamespace(t *testing.T) {
	g := NewWithT(t)
	l := &db.Leftovers{ApplicationName: "gitopsdepl-1", DestinationNamespace: "team-a"}
	removed := []orphans.Resource{
		{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "a"},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"},
	}
	ev := removedEvent(l, removed)
	g.Expect(ev.Namespace).To(Equal("team-a"))
	g.Expect(ev.GenerateName).To(Equal("gitops-service-leftovers-"))
	// An Event's namespace must match its object's: the namespace itself.
	g.Expect(ev.InvolvedObject).To(Equal(corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "team-a", Namespace: "team-a"}))
	g.Expect(ev.Reason).To(Equal(EventReason))
	g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))
	g.Expect(ev.Count).To(Equal(int32(1)))
	g.Expect(ev.Message).To(Equal("Removed what Argo CD Application gitopsdepl-1 left behind when its GitOpsDeployment was deleted: " +
		"ConfigMap team-a/a, Deployment team-a/web (annotate a resource managed-gitops.redhat.com/keep-orphaned=true to keep it)"))

	// A long list is cut.
	var many []orphans.Resource
	for i := range 12 {
		many = append(many, orphans.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: string(rune('a' + i))})
	}
	g.Expect(removedEvent(l, many).Message).To(ContainSubstring("(and 2 more)"))
}

// fixture is a Remover on a real database and API server.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	db    *bun.DB
	store *db.Store
	r     *Remover
	dest  string // the destination namespace
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	id := agenttest.Instance(t, cp, bdb, store)
	r := &Remover{Client: cp.Client, APIReader: cp.Client, Config: cp.Config, DB: bdb, Store: store, Identity: id}
	return &fixture{t: t, ctx: ctx, db: bdb, store: store, r: r, dest: cp.NewNamespace(t, "team-")}
}

// clusterSecret writes the cluster Secret of a managed environment on the test API server,
// with the admin credentials, as Argo CD would use them.
func (f *fixture) clusterSecret(name, server string) {
	f.t.Helper()
	cfg := argov1alpha1.ClusterConfig{TLSClientConfig: argov1alpha1.TLSClientConfig{
		CAData: cp.Config.CAData, CertData: cp.Config.CertData, KeyData: cp.Config.KeyData}}
	data, err := json.Marshal(cfg)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.r.Identity.Namespace, Name: name,
			Labels: map[string]string{argocd.LabelSecretType: argocd.SecretTypeCluster}},
		Data: map[string][]byte{"server": []byte(server), "config": data},
	}
	NewWithT(f.t).Expect(cp.Client.Create(f.ctx, sec)).To(Succeed())
}

// configMap creates a ConfigMap in the destination namespace, as the deleted Application
// deployed it (with its tracking id) unless annotations say otherwise.
func (f *fixture) configMap(application, name string, annotations map[string]string) orphans.Resource {
	f.t.Helper()
	r := orphans.Resource{Version: "v1", Kind: "ConfigMap", Namespace: f.dest, Name: name}
	all := map[string]string{orphans.AnnotationTrackingID: orphans.TrackingID(application, r)}
	for k, v := range annotations {
		all[k] = v
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.dest, Name: name, Annotations: all}}
	NewWithT(f.t).Expect(cp.Client.Create(f.ctx, cm)).To(Succeed())
	return r
}

func (f *fixture) exists(name string) bool {
	f.t.Helper()
	err := cp.Client.Get(f.ctx, client.ObjectKey{Namespace: f.dest, Name: name}, &corev1.ConfigMap{})
	if client.IgnoreNotFound(err) != nil {
		f.t.Fatal(err)
	}
	return err == nil
}

func (f *fixture) record(l *db.Leftovers) {
	f.t.Helper()
	l.EngineInstanceID = f.r.Identity.InstanceID
	if l.DestinationNamespace == "" {
		l.DestinationNamespace = f.dest
	}
	NewWithT(f.t).Expect(f.store.RecordLeftovers(f.ctx, f.db, l)).To(Succeed())
}

// recorded are the records still there (due within a day and a half).
func (f *fixture) recorded() []string {
	f.t.Helper()
	due, err := f.store.DueLeftovers(f.ctx, f.db, f.r.Identity.InstanceID, time.Now().Add(36*time.Hour), 100)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, l := range due {
		names = append(names, l.ApplicationName)
	}
	return names
}

func (f *fixture) events() []corev1.Event {
	f.t.Helper()
	list := &corev1.EventList{}
	NewWithT(f.t).Expect(cp.Client.List(f.ctx, list, client.InNamespace(f.dest))).To(Succeed())
	return list.Items
}

func TestRunRemovesOnlyWhatTheDeletedApplicationStillTracks(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	const app, env = "gitopsdepl-deleted", "managed-env-one"
	f.clusterSecret(env, cp.Config.Host+"?managedEnvironment=one")
	ours := f.configMap(app, "ours", nil)
	kept := f.configMap(app, "kept", map[string]string{orphans.AnnotationKeep: "true"})
	taken := f.configMap(app, "taken", map[string]string{orphans.AnnotationTrackingID: "gitopsdepl-other:/ConfigMap:" + f.dest + "/taken"})
	listed := f.configMap(app, "listed", nil)
	// A live Application on the same destination lists one of them.
	live := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: f.r.Identity.Namespace, Name: "gitopsdepl-live"},
		Spec: argov1alpha1.ApplicationSpec{Destination: argov1alpha1.ApplicationDestination{Name: env, Namespace: f.dest}, Project: "default"}}
	g.Expect(cp.Client.Create(f.ctx, live)).To(Succeed())
	live.Status.Resources = []argov1alpha1.ResourceStatus{{Version: "v1", Kind: "ConfigMap", Namespace: f.dest, Name: "listed"}}
	g.Expect(cp.Client.Update(f.ctx, live)).To(Succeed())
	f.record(&db.Leftovers{ApplicationName: app, DestinationName: env, RemoveAfter: time.Now().Add(-time.Minute),
		Resources: []orphans.Resource{ours, kept, taken, listed}})
	// Not due yet: left to its owners for the grace period.
	f.record(&db.Leftovers{ApplicationName: "gitopsdepl-later", DestinationName: env, RemoveAfter: time.Now().Add(time.Hour),
		Resources: []orphans.Resource{ours}})

	g.Expect(f.r.Run(f.ctx)).To(Succeed())
	g.Expect(f.exists("ours")).To(BeFalse())
	g.Expect(f.exists("kept")).To(BeTrue(), "opted out")
	g.Expect(f.exists("taken")).To(BeTrue(), "another Application deployed it since")
	g.Expect(f.exists("listed")).To(BeTrue(), "a live Application lists it")
	g.Expect(f.recorded()).To(Equal([]string{"gitopsdepl-later"}), "the handled record is dropped")

	events := f.events()
	g.Expect(events).To(HaveLen(1))
	g.Expect(events[0].Reason).To(Equal(EventReason))
	g.Expect(events[0].Message).To(ContainSubstring("ConfigMap " + f.dest + "/ours"))
	g.Expect(events[0].Message).NotTo(ContainSubstring("kept"))
}

func TestRunFindsTheDestinationByServer(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	const app = "gitopsdepl-by-server"
	server := cp.Config.Host + "?managedEnvironment=two"
	f.clusterSecret("managed-env-two", server)
	ours := f.configMap(app, "ours", nil)
	f.record(&db.Leftovers{ApplicationName: app, DestinationServer: server, RemoveAfter: time.Now().Add(-time.Minute),
		Resources: []orphans.Resource{ours}})

	g.Expect(f.r.Run(f.ctx)).To(Succeed())
	g.Expect(f.exists("ours")).To(BeFalse())
	g.Expect(f.recorded()).To(BeEmpty())
}

func TestRunDropsRecordsWithNothingToRemove(t *testing.T) {
	tests := []struct {
		name   string
		record func(f *fixture, app string) *db.Leftovers
	}{
		// Its environment was deleted, and with it the cluster Secret.
		{name: "the destination's cluster Secret is gone", record: func(f *fixture, app string) *db.Leftovers {
			return &db.Leftovers{ApplicationName: app, DestinationName: "managed-env-" + uuid.NewString()}
		}},
		{name: "no cluster Secret has the destination's server", record: func(f *fixture, app string) *db.Leftovers {
			return &db.Leftovers{ApplicationName: app, DestinationServer: "https://gone.example.com:6443"}
		}},
		// Re-created under the same name: the resources are its again.
		{name: "the Application exists again", record: func(f *fixture, app string) *db.Leftovers {
			again := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: f.r.Identity.Namespace, Name: app},
				Spec: argov1alpha1.ApplicationSpec{Destination: argov1alpha1.ApplicationDestination{Name: "managed-env-again", Namespace: f.dest}, Project: "default"}}
			NewWithT(f.t).Expect(cp.Client.Create(f.ctx, again)).To(Succeed())
			f.clusterSecret("managed-env-again", cp.Config.Host)
			return &db.Leftovers{ApplicationName: app, DestinationName: "managed-env-again"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			app := "gitopsdepl-" + uuid.NewString()[:8]
			ours := f.configMap(app, "ours", nil)
			l := tt.record(f, app)
			l.RemoveAfter = time.Now().Add(-time.Minute)
			l.Resources = []orphans.Resource{ours}
			f.record(l)

			g.Expect(f.r.Run(f.ctx)).To(Succeed())
			g.Expect(f.exists("ours")).To(BeTrue())
			g.Expect(f.recorded()).To(BeEmpty())
			g.Expect(f.events()).To(BeEmpty())
		})
	}
}

func TestRunRetriesAFailureUntilItGivesUp(t *testing.T) {
	tests := []struct {
		name        string
		removeAfter time.Duration // before now
		wantKept    bool
	}{
		{name: "a recent record is retried", removeAfter: time.Hour, wantKept: true},
		// Past GiveUpAfter an unreachable destination is no longer tried.
		{name: "an old record is dropped", removeAfter: GiveUpAfter + time.Hour, wantKept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			f.clusterSecret("managed-env-down", cp.Config.Host)
			f.r.NewClient = func(*rest.Config) (client.Client, error) { return nil, errors.New("destination unreachable") }
			ours := f.configMap("gitopsdepl-x", "ours", nil)
			f.record(&db.Leftovers{ApplicationName: "gitopsdepl-x", DestinationName: "managed-env-down",
				RemoveAfter: time.Now().Add(-tt.removeAfter), Resources: []orphans.Resource{ours}})

			// One failing record does not fail the run.
			g.Expect(f.r.Run(f.ctx)).To(Succeed())
			g.Expect(f.exists("ours")).To(BeTrue())
			g.Expect(len(f.recorded()) == 1).To(Equal(tt.wantKept))
		})
	}
}

func TestRunWithNothingDueDoesNothing(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	// No API call is made: a Remover without a client would fail otherwise.
	f.r.Client = nil
	g.Expect(f.r.Run(f.ctx)).To(Succeed())
}

func TestTaskRunsTheRemoverUnderItsName(t *testing.T) {
	g := NewWithT(t)
	task := (&Remover{Interval: time.Minute}).Task()
	g.Expect(task.Name).To(Equal("leftovers"))
	g.Expect(task.Interval).To(Equal(time.Minute))
}

func TestRunReachesTheInClusterDestinationAsArgoCD(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	const app = "gitopsdepl-in-cluster"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.r.Identity.Namespace, Name: DefaultArgoCDServiceAccount}}
	g.Expect(cp.Client.Create(f.ctx, sa)).To(Succeed())
	ours := f.configMap(app, "ours", nil)
	f.record(&db.Leftovers{ApplicationName: app, DestinationServer: argocd.InClusterServer, RemoveAfter: time.Now().Add(-time.Minute),
		Resources: []orphans.Resource{ours}})

	// Argo CD's ServiceAccount may not touch the namespace: neither may the remover, and
	// the record stays for another try.
	g.Expect(f.r.Run(f.ctx)).To(Succeed())
	g.Expect(f.exists("ours")).To(BeTrue(), "removed with more than Argo CD's rights")
	g.Expect(f.recorded()).To(Equal([]string{app}))

	// Granted what Argo CD would prune with, it removes the leftover.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: f.dest, Name: "argocd-prune"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "delete"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: f.dest, Name: "argocd-prune"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}}}
	g.Expect(cp.Client.Create(f.ctx, role)).To(Succeed())
	g.Expect(cp.Client.Create(f.ctx, binding)).To(Succeed())
	g.Eventually(func() bool {
		g.Expect(f.r.Run(f.ctx)).To(Succeed())
		return f.exists("ours")
	}, 30*time.Second, 200*time.Millisecond).Should(BeFalse())
	g.Expect(f.recorded()).To(BeEmpty())
	// Without the right to create Events there, the removal is still done; only the Event is missing.
	g.Expect(f.events()).To(BeEmpty())
}

// A destination that hangs (a tenant's cluster that accepts connections and never answers)
// holds up its own records only: another destination's are removed while it hangs, and its
// second record is not tried in the same run.
func TestRunGoesOnWhileADestinationHangs(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.r.DestinationTimeout = 3 * time.Second
	hung := "https://" + testenv.StallingListener(t)
	f.clusterSecret("managed-env-hung", hung)
	f.clusterSecret("managed-env-fine", cp.Config.Host+"?managedEnvironment=fine")
	theirs := f.configMap("gitopsdepl-hung", "theirs", nil)
	ours := f.configMap("gitopsdepl-fine", "ours", nil)
	// The hung destination's records are due first.
	for i, app := range []string{"gitopsdepl-hung", "gitopsdepl-hung-2"} {
		f.record(&db.Leftovers{ApplicationName: app, DestinationName: "managed-env-hung",
			RemoveAfter: time.Now().Add(-time.Hour - time.Duration(i)*time.Minute), Resources: []orphans.Resource{theirs}})
	}
	f.record(&db.Leftovers{ApplicationName: "gitopsdepl-fine", DestinationName: "managed-env-fine",
		RemoveAfter: time.Now().Add(-time.Minute), Resources: []orphans.Resource{ours}})

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- f.r.Run(f.ctx) }()
	g.Eventually(func() bool { return f.exists("ours") }, 2*time.Second, 50*time.Millisecond).Should(BeFalse(),
		"the other destination's leftovers are removed while one hangs")
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
	g.Expect(time.Since(start)).To(BeNumerically("<", 6*time.Second), "the hung destination's second record waits for the next run")
	g.Expect(f.exists("theirs")).To(BeTrue())
	g.Expect(f.recorded()).To(ConsistOf("gitopsdepl-hung", "gitopsdepl-hung-2"))
}

func TestByDestinationPutsTheServicesClusterFirst(t *testing.T) {
	tenant := argocd.TenantServer("https://10.96.0.1:443", "t1")
	due := []db.Leftovers{
		{ApplicationName: "a", DestinationName: "managed-env-1"},
		{ApplicationName: "b", DestinationServer: argocd.InClusterServer},
		{ApplicationName: "c", DestinationName: "managed-env-1"},
		{ApplicationName: "d", DestinationServer: tenant},
		{ApplicationName: "e", DestinationServer: "https://remote:6443?managedEnvironment=2"},
	}
	var got [][]string
	for _, group := range byDestination(due) {
		var names []string
		for _, l := range group {
			names = append(names, l.ApplicationName)
		}
		got = append(got, names)
	}
	NewWithT(t).Expect(got).To(Equal([][]string{{"b"}, {"d"}, {"a", "c"}, {"e"}}))
}
