package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	cp *ControlPlane
	pg *Postgres
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if cp, err = StartControlPlane(Options{ControllerManager: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	if pg, err = StartPostgres(PostgresOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = pg.Stop() }()
	return m.Run()
}

func newNamespace(t *testing.T) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := cp.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestControllerManagerCollectsGarbage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns.Name}}
	g.Expect(cp.Client.Create(ctx, owner)).To(Succeed())
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent", Namespace: ns.Name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
	}}
	g.Expect(cp.Client.Create(ctx, dependent)).To(Succeed())

	g.Expect(cp.Client.Delete(ctx, owner)).To(Succeed())
	g.Eventually(func() bool {
		err := cp.Client.Get(ctx, client.ObjectKeyFromObject(dependent), &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "the garbage collector deletes the dependent")
}

func TestControllerManagerFinishesNamespaceDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	g.Expect(cp.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns.Name}})).To(Succeed())
	g.Expect(cp.Client.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}))
	}, 60*time.Second, 200*time.Millisecond).Should(BeTrue(), "the namespace controller empties and removes the namespace")
}

func TestControllerManagerFillsServiceAccountTokens(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns.Name}}
	g.Expect(cp.Client.Create(ctx, sa)).To(Succeed())
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer-token", Namespace: ns.Name,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: sa.Name}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	g.Expect(cp.Client.Create(ctx, secret)).To(Succeed())

	var token []byte
	g.Eventually(func() []byte {
		got := &corev1.Secret{}
		_ = cp.Client.Get(ctx, client.ObjectKeyFromObject(secret), got)
		token = got.Data[corev1.ServiceAccountTokenKey]
		return token
	}, 30*time.Second, 100*time.Millisecond).ShouldNot(BeEmpty(), "the token controller fills the Secret")

	// The token authenticates as the ServiceAccount against the API server.
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = string(token)
	c, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	err = c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "x"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "authenticated but not authorised, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("system:serviceaccount:" + ns.Name + ":deployer"))
}

func TestCoreKindsAreInTheGitopsCategory(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	g.Expect(err).NotTo(HaveOccurred())
	list, err := dc.ServerResourcesForGroupVersion("managed-gitops.redhat.com/v1alpha1")
	g.Expect(err).NotTo(HaveOccurred())
	inCategory := map[string]bool{}
	for _, r := range list.APIResources {
		for _, c := range r.Categories {
			if c == "gitops" {
				inCategory[r.Kind] = true
			}
		}
	}
	g.Expect(inCategory).To(Equal(map[string]bool{
		"GitOpsDeployment":                     true,
		"GitOpsDeploymentSyncRun":              true,
		"GitOpsDeploymentManagedEnvironment":   true,
		"GitOpsDeploymentRepositoryCredential": true,
	}))
}

func TestPostgresGivesEachTestItsOwnDatabase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a, b := pg.NewDatabase(t, ""), pg.NewDatabase(t, "")
	g.Expect(a).NotTo(Equal(b))
	g.Expect(execSQL(ctx, a, "CREATE TABLE only_in_a (id int)")).To(Succeed())
	g.Expect(execSQL(ctx, b, "SELECT 1 FROM only_in_a")).To(MatchError(ContainSubstring(`relation "only_in_a" does not exist`)))
	// pg_stat_statements is loaded, for the benchmarks' query counts.
	g.Expect(execSQL(ctx, a, "CREATE EXTENSION pg_stat_statements; SELECT count(*) FROM pg_stat_statements")).To(Succeed())
}
