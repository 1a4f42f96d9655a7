package install

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

const previousVersion = "v0.0.0-previous"

// TestUpgrade installs the previous release by its own guide, deploys from Git, then
// upgrades to this build as the current guide says: the schema is migrated once and
// clean, every Argo CD Application stays the same object, and the statuses keep following
// Argo CD (a new commit reaches the cluster and the status).
func TestUpgrade(t *testing.T) {
	previous := os.Getenv("GITOPS_PREVIOUS_RELEASE_DIR")
	previousSrc := os.Getenv("GITOPS_PREVIOUS_SOURCE_DIR")
	if previous == "" || previousSrc == "" {
		t.Fatal("GITOPS_PREVIOUS_RELEASE_DIR and GITOPS_PREVIOUS_SOURCE_DIR name the previous release and its source (make test-install builds them)")
	}
	g := NewWithT(t)
	ctx := context.Background()
	e := newEnvironment(t, [2]string{filepath.Join(previous, "images"), previousVersion})

	t.Log("installing the previous release by its own guide")
	e.runGuide(t, previousSrc, InstallBlocks, previous)
	expectRunning(t, e, previousVersion)
	tenants := []string{"upgrade-a", "upgrade-b"}
	for _, ns := range tenants {
		expectDeploys(t, e.k8s, tenantNamespace(t, e.k8s, ns), "app", e.repoURL)
	}
	before := applicationUIDs(t, e.k8s)
	g.Expect(before).To(HaveLen(len(tenants)))
	schemaBefore := schemaVersion(t, e)

	t.Log("upgrading to this build")
	e.runGuide(t, e.root, UpgradeBlocks, e.release)
	expectRunning(t, e, releaseVersion)

	g.Expect(schemaVersion(t, e)).To(BeNumerically(">=", schemaBefore), "the schema moves forward only")
	g.Expect(applicationUIDs(t, e.k8s)).To(Equal(before), "the upgrade deleted or re-created an Argo CD Application")

	// A new commit, deployed by naming it: the upgraded backend and agent carry the change
	// to the same Applications, and the status follows what Argo CD synced. (Waiting for
	// Argo CD to notice a new commit of a branch would take up to its polling period plus
	// its ls-remote cache, minutes.)
	revision, err := e.git.Commit("apps", map[string]string{
		"hello/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  greeting: hello after the upgrade\n",
	}, "after the upgrade")
	g.Expect(err).NotTo(HaveOccurred())
	for _, ns := range tenants {
		// Right after a rollout, kube-proxy may still send the webhook's traffic to a pod
		// that is gone (until its next sync): the write is retried as a client would.
		g.Eventually(func() error {
			var depl v1.GitOpsDeployment
			if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &depl); err != nil {
				return err
			}
			depl.Spec.Source.TargetRevision = revision
			return e.k8s.Update(ctx, &depl)
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "updating %s/app", ns)
	}
	for _, ns := range tenants {
		g.Eventually(func(g Gomega) {
			var depl v1.GitOpsDeployment
			g.Expect(e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &depl)).To(Succeed())
			g.Expect(depl.Status.Sync.Revision).To(Equal(revision), "status: %+v", depl.Status)
			g.Expect(depl.Status.Sync.Status).To(BeEquivalentTo(v1.SyncStatusCodeSynced))
			g.Expect(depl.Status.Health.Status).To(BeEquivalentTo(v1.HealthStatusCodeHealthy))
			var cm unstructured.Unstructured
			cm.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
			g.Expect(e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, &cm)).To(Succeed())
			greeting, _, _ := unstructured.NestedString(cm.Object, "data", "greeting")
			g.Expect(greeting).To(Equal("hello after the upgrade"))
		}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "deployment %s/app after the upgrade", ns)
	}
	g.Expect(applicationUIDs(t, e.k8s)).To(Equal(before), "an Application was re-created after the upgrade")
}

// expectRunning waits until every Deployment of the service runs version, all replicas
// available.
func expectRunning(t *testing.T, e *environment, version string) {
	t.Helper()
	// One token for every scrape: the polls below read, they do not create.
	token, err := e.scraper.Token(context.Background(), "default")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Eventually(func(g Gomega) {
		for _, binary := range []string{"backend", "cluster-agent", "appstudio-controller"} {
			var d unstructured.Unstructured
			d.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
			g.Expect(e.k8s.Get(context.Background(), client.ObjectKey{Namespace: serviceNS, Name: "gitops-service-" + binary}, &d)).To(Succeed())
			replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			for _, field := range []string{"updatedReplicas", "availableReplicas", "replicas"} {
				n, _, _ := unstructured.NestedInt64(d.Object, "status", field)
				g.Expect(n).To(Equal(replicas), "%s of %s", field, binary)
			}
			var pods corev1.PodList
			g.Expect(e.k8s.List(context.Background(), &pods, client.InNamespace(serviceNS),
				client.MatchingLabels{"app.kubernetes.io/name": binary})).To(Succeed())
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				_, body, err := e.scraper.Scrape(context.Background(), p, metricsPort(p), token)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(body).To(ContainSubstring(`version="`+version+`"`), "the build %s serves in %s", binary, p.Name)
			}
		}
	}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "the service at %s", version)
}

// applicationUIDs are the UIDs of the Argo CD Applications by name.
func applicationUIDs(t *testing.T, k8s client.Client) map[string]types.UID {
	t.Helper()
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationList"})
	if err := k8s.List(context.Background(), &list, client.InNamespace("gitops-service-argocd")); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, a := range list.Items {
		uids[a.GetName()] = a.GetUID()
	}
	return uids
}

// schemaVersion is the database's migration version; it fails on a dirty schema (a
// migration that stopped half-way).
func schemaVersion(t *testing.T, e *environment) int64 {
	t.Helper()
	conn, err := Connect(context.Background(), e.c, "gitops")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var version int64
	var dirty bool
	if err := conn.QueryRow(context.Background(), "SELECT version, dirty FROM schema_migrations").Scan(&version, &dirty); err != nil {
		t.Fatal(err)
	}
	if dirty {
		t.Fatalf("the schema is dirty at version %d", version)
	}
	return version
}
