package install

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/scheme"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
	"github.com/gitops-service/gitops-service/tests-e2e/node"
)

var keep = flag.Bool("install.keep", false, "Leave the node running after the test (remove it with `bin/tools/cluster down -name gitops-install -state-dir DIR`).")

// The release the test installs: make test-install builds it (make release) with these.
const (
	releaseVersion = "v0.0.0"
	imageRepo      = "localhost/gitops-service"
	serviceNS      = "gitops-service"
)

// TestInstallGuide installs the service on a real one-node cluster by running the install
// blocks of docs/install.md, then checks what an operator and a tenant would: the
// Deployments available, the webhooks answering, a GitOpsDeployment deployed from Git,
// metrics served, and leadership handed over when a leader's pod goes.
func TestInstallGuide(t *testing.T) {
	e := newEnvironment(t)
	ctx, k8s, database, repoURL := context.Background(), e.k8s, e.db, e.repoURL
	t.Log("running the install guide")
	e.runGuide(t, e.root, InstallBlocks, e.release)

	t.Run("every Deployment is available with its replicas", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			var list appsv1.DeploymentList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(serviceNS))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(3))
			for _, d := range list.Items {
				g.Expect(d.Status.AvailableReplicas).To(Equal(*d.Spec.Replicas), "Deployment %s", d.Name)
				g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(2), "Deployment %s", d.Name)
			}
		}).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})

	t.Run("the webhook refuses what only it checks", func(t *testing.T) {
		g := NewWithT(t)
		ns := tenantNamespace(t, k8s, "webhook")
		depl := gitOpsDeployment(ns, "elsewhere", repoURL)
		depl.Spec.Destination.Namespace = "kube-system"
		// Ready webhook pods reach the Service's rules within a sync of kube-proxy.
		g.Eventually(func() error { return k8s.Create(ctx, depl.DeepCopy()) }).WithTimeout(30 * time.Second).WithPolling(time.Second).
			Should(MatchError(ContainSubstring("can only deploy to its own namespace")))
	})

	t.Run("a GitOpsDeployment deploys from Git", func(t *testing.T) {
		expectDeploys(t, k8s, tenantNamespace(t, k8s, "tenant-a"), "first", repoURL)
	})

	t.Run("every binary serves its metrics, to a scraper RBAC allows only", func(t *testing.T) {
		g := NewWithT(t)
		token, err := e.scraper.Token(ctx, "default")
		g.Expect(err).NotTo(HaveOccurred())
		for _, binary := range []string{"backend", "cluster-agent", "appstudio-controller"} {
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(serviceNS), client.MatchingLabels{"app.kubernetes.io/name": binary})).To(Succeed())
			g.Expect(pods.Items).NotTo(BeEmpty(), binary)
			for _, p := range pods.Items {
				code, body, err := e.scraper.Scrape(ctx, p, metricsPort(p), token)
				g.Expect(err).NotTo(HaveOccurred(), "metrics of %s", p.Name)
				g.Expect(code).To(Equal(http.StatusOK), "metrics of %s", p.Name)
				g.Expect(body).To(ContainSubstring(`gitops_service_build_info{binary="`+binary+`"`), "metrics of %s", p.Name)
				g.Expect(body).To(ContainSubstring(`version="`+releaseVersion+`"`), "metrics of %s", p.Name)
				code, body, err = e.scraper.Scrape(ctx, p, metricsPort(p), "")
				g.Expect(err).NotTo(HaveOccurred(), "metrics of %s without a token", p.Name)
				g.Expect(code).To(Equal(http.StatusUnauthorized), "metrics of %s without a token", p.Name)
				g.Expect(body).NotTo(ContainSubstring("gitops_service_build_info"))
			}
		}
	})

	t.Run("while PostgreSQL is away, the backends stay in their Service: every write is admitted, and deploys once it is back", func(t *testing.T) {
		g := NewWithT(t)
		backendReady := func() (ready int, err error) {
			var pods corev1.PodList
			if err := k8s.List(ctx, &pods, client.InNamespace(serviceNS), client.MatchingLabels{"app.kubernetes.io/name": "backend"}); err != nil {
				return 0, err
			}
			for _, p := range pods.Items {
				for _, cond := range p.Status.Conditions {
					if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			return ready, nil
		}
		g.Expect(backendReady()).To(Equal(2))
		g.Expect(database.Stop()).To(Succeed())
		// Longer than the readiness probe takes to fail (3 periods of 10 s).
		g.Consistently(backendReady).WithTimeout(40*time.Second).WithPolling(2*time.Second).Should(Equal(2), "backends left their Service without their database")
		// 200 writes through admission: 10 deployments, each in a tenant namespace of its own,
		// and then changes of their labels.
		const deployments, writes = 10, 200
		names := make([]client.ObjectKey, deployments)
		for i := range deployments {
			names[i] = client.ObjectKey{Namespace: tenantNamespace(t, k8s, fmt.Sprintf("failover-%d", i)), Name: "app"}
			g.Expect(k8s.Create(ctx, gitOpsDeployment(names[i].Namespace, names[i].Name, repoURL))).To(Succeed(), "a write refused while PostgreSQL is away")
		}
		for i := deployments; i < writes; i++ {
			g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				depl := &v1.GitOpsDeployment{}
				if err := k8s.Get(ctx, names[i%deployments], depl); err != nil {
					return err
				}
				depl.Labels = map[string]string{"write": strconv.Itoa(i)}
				return k8s.Update(ctx, depl)
			})).To(Succeed(), "write %d refused while PostgreSQL is away", i)
		}
		g.Expect(database.Start()).To(Succeed())
		for _, key := range names {
			g.Eventually(func() (v1.GitOpsConditionStatus, error) {
				depl := &v1.GitOpsDeployment{}
				if err := k8s.Get(ctx, key, depl); err != nil {
					return "", err
				}
				for _, c := range depl.Status.Conditions {
					if c.Type == v1.GitOpsDeploymentConditionType("Ready") {
						return c.Status, nil
					}
				}
				return "", nil
			}).WithTimeout(4*time.Minute).WithPolling(2*time.Second).Should(Equal(v1.GitOpsConditionStatusTrue), "%s Ready after the outage", key)
		}
	})

	t.Run("a new leader takes over from a deleted one and deployments go on", func(t *testing.T) {
		g := NewWithT(t)
		// Each binary's lease is in its pod's namespace but the cluster-agent's, which is in
		// the engine instance's namespace it serves.
		leaseNS := map[string]string{"backend": serviceNS, "cluster-agent": "gitops-service-argocd", "appstudio-controller": serviceNS}
		for _, binary := range []string{"backend", "cluster-agent", "appstudio-controller"} {
			lease := client.ObjectKey{Namespace: leaseNS[binary], Name: binary + ".managed-gitops.redhat.com"}
			holder := leaseHolder(t, k8s, lease)
			g.Expect(holder).NotTo(BeEmpty(), "the lease %s has no holder", lease)
			pod := strings.SplitN(holder, "_", 2)[0]
			t.Logf("deleting %s, the leader of %s", pod, binary)
			g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: serviceNS, Name: pod}})).To(Succeed())
			g.Eventually(func() string { return leaseHolder(t, k8s, lease) }).WithTimeout(3*time.Minute).WithPolling(time.Second).
				ShouldNot(Or(BeEmpty(), HavePrefix(pod+"_")), "a new leader of %s", binary)
		}
		expectDeploys(t, k8s, tenantNamespace(t, k8s, "tenant-b"), "after-handover", repoURL)
	})

	// Last: it starts the service again on an empty database.
	t.Run("the backend and the cluster-agent started together on an empty database, again and again: migrated once, clean", func(t *testing.T) {
		for round := 1; round <= 3; round++ {
			t.Logf("round %d: the backend and the cluster-agent start together on an empty database", round)
			startTogetherOnEmptyDatabase(t, e)
		}
		expectDeploys(t, k8s, tenantNamespace(t, k8s, "tenant-c"), "on-a-fresh-database", repoURL)
	})
}

// startTogetherOnEmptyDatabase stops the backend and the cluster-agent, empties the
// database, starts both at once (as applying install.yaml does) and checks that both become
// available without a restart, with the schema at the release's version and clean.
func startTogetherOnEmptyDatabase(t *testing.T, e *environment) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	deployments := []string{"gitops-service-backend", "gitops-service-cluster-agent"}
	scale := func(replicas int32) {
		for _, name := range deployments {
			var d appsv1.Deployment
			g.Expect(e.k8s.Get(ctx, client.ObjectKey{Namespace: serviceNS, Name: name}, &d)).To(Succeed())
			patch := client.MergeFrom(d.DeepCopy())
			d.Spec.Replicas = &replicas
			g.Expect(e.k8s.Patch(ctx, &d, patch)).To(Succeed())
		}
	}
	pods := func(g Gomega) []corev1.Pod {
		var list corev1.PodList
		g.Expect(e.k8s.List(ctx, &list, client.InNamespace(serviceNS), client.MatchingLabels{"app.kubernetes.io/part-of": "gitops-service"})).To(Succeed())
		var out []corev1.Pod
		for _, p := range list.Items {
			if name := p.Labels["app.kubernetes.io/name"]; name == "backend" || name == "cluster-agent" {
				out = append(out, p)
			}
		}
		return out
	}
	scale(0)
	g.Eventually(pods).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeEmpty())

	admin, err := Connect(ctx, e.c, "postgres")
	g.Expect(err).NotTo(HaveOccurred())
	for _, sql := range []string{"DROP DATABASE gitops WITH (FORCE)", "CREATE DATABASE gitops OWNER gitops"} {
		_, err := admin.Exec(ctx, sql)
		g.Expect(err).NotTo(HaveOccurred(), sql)
	}
	g.Expect(admin.Close(ctx)).To(Succeed())

	scale(2)
	g.Eventually(func(g Gomega) {
		for _, name := range deployments {
			var d appsv1.Deployment
			g.Expect(e.k8s.Get(ctx, client.ObjectKey{Namespace: serviceNS, Name: name}, &d)).To(Succeed())
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2), "Deployment %s", name)
		}
	}).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	for _, p := range pods(g) {
		for _, cs := range p.Status.ContainerStatuses {
			g.Expect(cs.RestartCount).To(BeZero(), "pod %s restarted: it met the schema before the backend had migrated it", p.Name)
		}
	}

	conn, err := Connect(ctx, e.c, "gitops")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	var (
		version int64
		dirty   bool
	)
	g.Expect(conn.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty)).To(Succeed())
	latest, err := db.LatestSchemaVersion()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(version).To(BeEquivalentTo(latest))
	g.Expect(dirty).To(BeFalse())
}

// environment is a node with everything an install needs beside it: the images imported
// (Argo CD's, Redis's and the service's releases), PostgreSQL, and a Git server.
type environment struct {
	root, work, release string
	c                   *node.Cluster
	db                  *Database
	git                 *gitserver.Server
	repoURL             string
	k8s                 client.Client
	cs                  *kubernetes.Clientset
	scraper             *Scraper
}

// newEnvironment starts the node and what surrounds it, importing the images of each
// release (layout directory -> tag); the node goes when the test ends.
func newEnvironment(t *testing.T, releases ...[2]string) *environment {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	e := &environment{root: root, work: t.TempDir(), release: os.Getenv("GITOPS_RELEASE_DIR")}
	if e.release == "" {
		e.release = filepath.Join(root, "dist")
	}
	e.c = newCluster(t, root, e.work)
	t.Log("starting the node")
	g.Expect(e.c.Up(ctx)).To(Succeed())
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(t, e.c, filepath.Join(e.work, "cluster", "logs"))
		}
		if *keep {
			t.Logf("the node keeps running: KUBECONFIG=%s", e.c.Kubeconfig())
			return
		}
		if err := e.c.Down(); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	g.Expect(e.c.ImportImages(ctx, filepath.Join(root, ".local", "node-images", "host.tar"))).To(Succeed())
	for i, r := range append([][2]string{{filepath.Join(e.release, "images"), releaseVersion}}, releases...) {
		archive := filepath.Join(e.work, fmt.Sprintf("release-%d.tar", i))
		run(t, root, filepath.Join(root, "bin", "tools", "images"), "archive", "-layout", r[0], "-repo", imageRepo, "-tag", r[1], "-out", archive)
		g.Expect(e.c.ImportImages(ctx, archive)).To(Succeed())
	}
	t.Log("starting PostgreSQL beside the node and a Git server on it")
	e.db, err = StartDatabase(ctx, e.c, filepath.Join(e.work, "database"), node.NodeIP)
	g.Expect(err).NotTo(HaveOccurred())
	e.git, e.repoURL = startGitServer(t, e.c, filepath.Join(e.work, "git"))
	cfg, err := e.c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	e.k8s, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	e.cs, err = kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	e.scraper = &Scraper{Config: cfg, CS: e.cs}
	return e
}

// runGuide runs the blocks marked info of the install guide of the source tree at src with
// the release files of release, as an operator with that release in hand would.
func (e *environment) runGuide(t *testing.T, src, info, release string) {
	t.Helper()
	g := NewWithT(t)
	dir := filepath.Join(e.work, "guide-"+strings.ReplaceAll(info, " ", "-"))
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	for _, f := range []string{"install.yaml", "argocd.yaml", "appstudio-crds.yaml"} {
		body, err := os.ReadFile(filepath.Join(release, f))
		if f == "appstudio-crds.yaml" && os.IsNotExist(err) {
			continue // a release from before the AppStudio CRDs were a file of their own
		}
		g.Expect(err).NotTo(HaveOccurred(), "make release builds %s", f)
		g.Expect(os.WriteFile(filepath.Join(dir, f), body, 0o644)).To(Succeed())
	}
	g.Expect(RunGuide(filepath.Join(src, "docs", "install.md"), info, dir, GuideEnv(e.c.Kubeconfig(), e.c.KubeDir, e.db, imageRepo))).To(Succeed())
}

// newCluster describes the test's node: its own name, port and state, so that it never
// meets the node of make cluster.
func newCluster(t *testing.T, root, work string) *node.Cluster {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "hack", "build-binaries.sh"), "--kube-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	coredns, err := exec.Command(filepath.Join(root, "hack", "build-binaries.sh"), "--coredns").Output()
	if err != nil {
		t.Fatal(err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return &node.Cluster{
		Name:         "gitops-install",
		StateDir:     filepath.Join(work, "cluster"),
		KubeDir:      strings.TrimSpace(string(out)),
		Etcd:         filepath.Join(assets, "etcd"),
		CoreDNS:      strings.TrimSpace(string(coredns)),
		PauseArchive: filepath.Join(root, ".local", "node-images", "pause.tar"),
		APIPort:      port,
		Self:         []string{filepath.Join(root, "bin", "tools", "cluster")},
	}
}

// startGitServer serves a repository with one ConfigMap on the node's address.
func startGitServer(t *testing.T, c *node.Cluster, dir string) (*gitserver.Server, string) {
	t.Helper()
	l, err := node.Listen(c.Name, "tcp", net.JoinHostPort(node.NodeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := gitserver.Start(dir, gitserver.Options{Listener: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if err := s.Create("apps", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit("apps", map[string]string{
		"hello/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  greeting: hello from the node\n",
	}, "hello"); err != nil {
		t.Fatal(err)
	}
	return s, s.URL("apps")
}

func tenantNamespace(t *testing.T, k8s client.Client, name string) string {
	t.Helper()
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

func gitOpsDeployment(ns, name, repoURL string) *v1.GitOpsDeployment {
	return &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: repoURL, Path: "hello", TargetRevision: "main"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
}

// expectDeploys creates a GitOpsDeployment and waits until it is Synced and Healthy with
// the repository's ConfigMap in the namespace.
func expectDeploys(t *testing.T, k8s client.Client, ns, name, repoURL string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	// The webhook answers once kube-proxy routes its Service to ready pods (after a
	// rollout or a database outage, within a sync).
	g.Eventually(func() error { return k8s.Create(ctx, gitOpsDeployment(ns, name, repoURL)) }).
		WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var depl v1.GitOpsDeployment
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &depl)).To(Succeed())
		g.Expect(depl.Status.Sync.Status).To(BeEquivalentTo(v1.SyncStatusCodeSynced), "status: %+v", depl.Status)
		g.Expect(depl.Status.Health.Status).To(BeEquivalentTo(v1.HealthStatusCodeHealthy), "status: %+v", depl.Status)
		var cm corev1.ConfigMap
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, &cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello from the node"))
	}).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

func leaseHolder(t *testing.T, k8s client.Client, key client.ObjectKey) string {
	var lease coordinationv1.Lease
	if err := k8s.Get(context.Background(), key, &lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func run(t *testing.T, dir, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
}

// metricsPort is the port of the pod's container port named metrics, 0 if it has none.
func metricsPort(p corev1.Pod) int {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == "metrics" {
				return int(port.ContainerPort)
			}
		}
	}
	return 0
}

// dumpLogs prints the tail of each node component's log and of every pod's.
func dumpLogs(t *testing.T, c *node.Cluster, logs string) {
	entries, _ := os.ReadDir(logs)
	for _, e := range entries {
		body, _ := os.ReadFile(filepath.Join(logs, e.Name()))
		t.Logf("--- %s (tail)\n%s", e.Name(), tail(body, 40))
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	pods, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		var b strings.Builder
		fmt.Fprintf(&b, "phase %s", p.Status.Phase)
		for _, s := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "; %s ready=%v restarts=%d", s.Name, s.Ready, s.RestartCount)
		}
		lines := int64(30)
		body, _ := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &lines}).DoRaw(context.Background())
		t.Logf("--- pod %s/%s: %s\n%s", p.Namespace, p.Name, b.String(), body)
	}
}

func tail(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
