package engine

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// One API server (for the engine namespace) and one PostgreSQL for the package.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

func TestServiceServerIsInClusterUnlessTheAgentRunsElsewhere(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Identity{}.ServiceServer()).To(Equal(argocd.InClusterServer))
	g.Expect(Identity{ServiceClusterAPIURL: "https://service.example.com:6443"}.ServiceServer()).To(Equal("https://service.example.com:6443"))
}

func TestApplicationPointsInClusterDestinationsAtTheServiceCluster(t *testing.T) {
	inCluster := argov1alpha1.ApplicationSpec{Project: "p", Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"}}
	managed := argov1alpha1.ApplicationSpec{Project: "p", Destination: argov1alpha1.ApplicationDestination{Name: "managed-env-1", Namespace: "team-a"}}
	tests := []struct {
		name       string
		id         Identity
		spec       argov1alpha1.ApplicationSpec
		wantServer string
		wantName   string
	}{
		{name: "on the service's cluster", id: Identity{Namespace: "argocd"}, spec: inCluster, wantServer: argocd.InClusterServer},
		// The database keeps saying in-cluster; only this agent rewrites it.
		{name: "on another cluster", id: Identity{Namespace: "argocd", ServiceClusterAPIURL: "https://service.example.com:6443"},
			spec: inCluster, wantServer: "https://service.example.com:6443"},
		{name: "a managed environment is left alone", id: Identity{Namespace: "argocd", ServiceClusterAPIURL: "https://service.example.com:6443"},
			spec: managed, wantName: "managed-env-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			app := tt.id.Application("gitopsdepl-1", "app-1", "tenant-1", tt.spec)
			g.Expect(app.Namespace).To(Equal("argocd"))
			g.Expect(app.Name).To(Equal("gitopsdepl-1"))
			g.Expect(app.Labels).To(HaveKeyWithValue(argocd.LabelApplicationID, "app-1"))
			g.Expect(app.Labels).To(HaveKeyWithValue(argocd.LabelTenantID, "tenant-1"))
			g.Expect(app.Spec.Destination.Server).To(Equal(tt.wantServer))
			g.Expect(app.Spec.Destination.Name).To(Equal(tt.wantName))
			g.Expect(app.Spec.Destination.Namespace).To(Equal("team-a"))
		})
	}
	// The row's spec itself is not changed.
	NewWithT(t).Expect(inCluster.Destination.Server).To(Equal(argocd.InClusterServer))
}

func TestBindFlagsDefaultsToThePodNamespace(t *testing.T) {
	tests := []struct {
		name, env, want string
	}{
		{name: "from the downward API", env: "argocd-from-pod", want: "argocd-from-pod"},
		{name: "without it", env: "", want: DefaultNamespace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Setenv(EnvPodNamespace, tt.env)
			var o Options
			fs := flag.NewFlagSet("agent", flag.ContinueOnError)
			o.BindFlags(fs)
			g.Expect(fs.Parse(nil)).To(Succeed())
			g.Expect(o.Namespace).To(Equal(tt.want))
			g.Expect(o.ClusterName).To(Equal(DefaultCluster))
			g.Expect(o.ServiceClusterKubeconfig).To(BeEmpty())
		})
	}
}

func TestRegisterIdentifiesTheInstanceByTheNamespaceUID(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	ns := &corev1.Namespace{}
	g.Expect(cp.Client.Get(ctx, client.ObjectKey{Name: cp.NewNamespace(t, "argocd-")}, ns)).To(Succeed())

	id, err := Register(ctx, cp.Client, bdb, store, Options{Namespace: ns.Name, ClusterName: "default"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id.Namespace).To(Equal(ns.Name))
	g.Expect(id.NamespaceUID).To(Equal(string(ns.UID)))
	g.Expect(id.ClusterName).To(Equal("default"))
	g.Expect(id.ServiceClusterAPIURL).To(BeEmpty())
	ei, err := store.GetEngineInstance(ctx, bdb, id.InstanceID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ei.NamespaceUID).To(Equal(string(ns.UID)))
	g.Expect(ei.EngineClusterID).To(Equal(id.ClusterID))

	// A restart finds the same instance.
	again, err := Register(ctx, cp.Client, bdb, store, Options{Namespace: ns.Name, ClusterName: "default"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(id))
}

func TestRegisterRefusesWhatCannotBeAnInstance(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "no namespace", opts: Options{ClusterName: "default"}, wantErr: "must not be empty"},
		{name: "no cluster name", opts: Options{Namespace: "argocd"}, wantErr: "must not be empty"},
		{name: "a namespace that does not exist", opts: Options{Namespace: "missing-" + uuid.NewString()[:8], ClusterName: "default"},
			wantErr: "reading engine namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Register(ctx, cp.Client, bdb, store, tt.opts)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
	instances, err := store.ListEngineInstances(ctx, bdb)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(instances).To(BeEmpty())
}

func TestRegisterOnAnotherClusterNeedsTheBackendsCredentialsForIt(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	ns := cp.NewNamespace(t, "argocd-")
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("service-ca"), 0o600)).To(Succeed())
	kubeconfig := writeKubeconfig(t, dir, "service", "{token: inline-token}")

	// Without them the backend cannot signal this instance: nothing is registered.
	_, err := Register(ctx, cp.Client, bdb, store, Options{Namespace: ns, ClusterName: "remote", ServiceClusterKubeconfig: kubeconfig})
	g.Expect(err).To(MatchError(ContainSubstring("set-cluster-credentials --cluster remote")))
	instances, err := store.ListEngineInstances(ctx, bdb)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(instances).To(BeEmpty(), "rolled back")

	// A kubeconfig that cannot be read fails before anything is written.
	_, err = Register(ctx, cp.Client, bdb, store, Options{Namespace: ns, ClusterName: "remote", ServiceClusterKubeconfig: filepath.Join(dir, "missing")})
	g.Expect(err).To(HaveOccurred())
}

func TestRowDestinationSaysInClusterForTheServicesCluster(t *testing.T) {
	const remote = "https://service.example.com:6443"
	local := Identity{Namespace: "argocd", TenantAPIURL: "https://10.96.0.1:443"}
	onRemote := Identity{Namespace: "argocd", ServiceClusterAPIURL: remote}
	tests := []struct {
		name string
		id   Identity
		dest argov1alpha1.ApplicationDestination
		want string
	}{
		{name: "the tenant's own entry", id: local, dest: argov1alpha1.ApplicationDestination{Server: argocd.TenantServer("https://10.96.0.1:443", "t1"), Namespace: "team-a"}, want: argocd.InClusterServer},
		{name: "another tenant's entry", id: local, dest: argov1alpha1.ApplicationDestination{Server: argocd.TenantServer("https://10.96.0.1:443", "t2"), Namespace: "team-a"}, want: argocd.TenantServer("https://10.96.0.1:443", "t2")},
		{name: "in-cluster", id: local, dest: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"}, want: argocd.InClusterServer},
		{name: "the service's cluster from another engine cluster", id: onRemote, dest: argov1alpha1.ApplicationDestination{Server: remote, Namespace: "team-a"}, want: argocd.InClusterServer},
		{name: "a managed environment", id: local, dest: argov1alpha1.ApplicationDestination{Server: "https://other:6443?managedEnvironment=e1", Namespace: "team-a"}, want: "https://other:6443?managedEnvironment=e1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.id.RowDestination("t1", tt.dest).Server).To(Equal(tt.want))
		})
	}
}
