package opsignal_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutArgoCDCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

func newStore(t *testing.T) *db.Store {
	t.Helper()
	key, err := secretbox.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secretbox.NewKeyring("test", map[string][]byte{"test": key})
	if err != nil {
		t.Fatal(err)
	}
	return db.NewStore(ring)
}

// userKubeconfig is stored credentials of a new client-certificate user in groups.
func userKubeconfig(t *testing.T, name string, groups ...string) *db.ClusterCredentials {
	t.Helper()
	data, _, err := cp.ClientCertKubeconfig(name, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return &db.ClusterCredentials{Host: cp.Config.Host, Kubeconfig: db.Secret(data)}
}

func TestClustersReachEachEngineClusterWithItsOwnCredentials(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb, store := dbtest.NewDB(t), newStore(t)
	clusters := &opsignal.Clusters{Local: cp.Client, Own: "home", Base: cp.Config, Scheme: cp.Scheme, DB: bdb, Store: store, TTL: time.Hour}
	readNamespace := func(c client.Client) error {
		return c.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{})
	}

	// The service's own cluster: the backend's client.
	home, err := store.GetOrCreateEngineCluster(ctx, bdb, "home", "")
	g.Expect(err).NotTo(HaveOccurred())
	c, err := clusters.For(ctx, home.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(BeIdenticalTo(cp.Client))

	// Another cluster registered before its credentials were stored: refused, not signalled
	// through the backend's own API server.
	registered, err := store.GetOrCreateEngineCluster(ctx, bdb, "east", "")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = clusters.For(ctx, registered.ID)
	g.Expect(err).To(MatchError(And(ContainSubstring(`engine cluster "east" is not the backend's own ("home")`),
		ContainSubstring("set-cluster-credentials --cluster east"))))

	// With its credentials stored: those, not the backend's. This user may do nothing, so
	// the API server names it in its refusal.
	east, err := store.SetEngineClusterCredentials(ctx, bdb, "east", userKubeconfig(t, "east-signaller"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(east.ID).To(Equal(registered.ID))
	eastClient, err := clusters.For(ctx, east.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readNamespace(eastClient)).To(MatchError(ContainSubstring(`User "east-signaller" cannot get resource "namespaces"`)))

	// Kept between calls; built again after Forget, from credentials rotated meanwhile.
	again, err := clusters.For(ctx, east.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(eastClient))
	_, err = store.SetEngineClusterCredentials(ctx, bdb, "east", userKubeconfig(t, "east-admin", "system:masters"))
	g.Expect(err).NotTo(HaveOccurred())
	again, err = clusters.For(ctx, east.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readNamespace(again)).NotTo(Succeed(), "the kept client still uses the old credentials")
	clusters.Forget(east.ID)
	rotated, err := clusters.For(ctx, east.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rotated).NotTo(BeIdenticalTo(eastClient))
	g.Expect(readNamespace(rotated)).To(Succeed())
}

func TestClustersPickUpRotatedCredentialsAfterTheirTTL(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb, store := dbtest.NewDB(t), newStore(t)
	clusters := &opsignal.Clusters{Local: cp.Client, Base: cp.Config, Scheme: cp.Scheme, DB: bdb, Store: store, TTL: 200 * time.Millisecond}
	west, err := store.SetEngineClusterCredentials(ctx, bdb, "west", userKubeconfig(t, "west-signaller"))
	g.Expect(err).NotTo(HaveOccurred())
	first, err := clusters.For(ctx, west.ID)
	g.Expect(err).NotTo(HaveOccurred())

	_, err = store.SetEngineClusterCredentials(ctx, bdb, "west", userKubeconfig(t, "west-admin", "system:masters"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		c, err := clusters.For(ctx, west.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c).NotTo(BeIdenticalTo(first))
		g.Expect(c.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{})).To(Succeed())
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
}

func TestClustersSayWhichClusterTheyCannotReach(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb, store := dbtest.NewDB(t), newStore(t)
	clusters := &opsignal.Clusters{Local: cp.Client, Base: cp.Config, Scheme: cp.Scheme, DB: bdb, Store: store}

	// A kubeconfig whose current context names nothing: the error names the cluster and
	// quotes nothing of the kubeconfig.
	broken := &db.ClusterCredentials{Host: cp.Config.Host,
		Kubeconfig: "apiVersion: v1\nkind: Config\ncurrent-context: secret-context-name\n"}
	north, err := store.SetEngineClusterCredentials(ctx, bdb, "north", broken)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = clusters.For(ctx, north.ID)
	g.Expect(err).To(MatchError(ContainSubstring(`engine cluster "north"`)))
	g.Expect(err.Error()).NotTo(ContainSubstring("secret-context-name"))

	_, err = clusters.For(ctx, "00000000-0000-0000-0000-000000000000")
	g.Expect(err).To(MatchError(db.ErrNotFound))
}
