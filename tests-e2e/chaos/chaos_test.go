// Package chaos churns the service's CRs while its processes and dependencies fail, and
// then checks that everything converges: each live GitOpsDeployment has exactly one Argo CD
// Application with the right spec, and nothing is left over in the database or in the Argo
// CD namespace.
//
// `make test` runs a short form (200 objects); `make test-chaos` runs 1,000.
package chaos

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

var (
	objects  = flag.Int("chaos.objects", 200, "CR changes to make (creations, updates, deletions).")
	churnFor = flag.Duration("chaos.churn", 75*time.Second, "How long the changes are spread over.")
	tenants  = flag.Int("chaos.tenants", 10, "Tenant namespaces.")
	minGap   = flag.Duration("chaos.min-gap", 5*time.Second, "Shortest pause between two faults.")
	maxGap   = flag.Duration("chaos.max-gap", 20*time.Second, "Longest pause between two faults.")
	converge = flag.Duration("chaos.converge", 60*time.Second, "How soon after the last fault ended everything must be consistent.")
	seed     = flag.Uint64("chaos.seed", 0, "Random seed (0: from the clock; the seed is logged).")
	keepLogs = flag.String("chaos.keep-logs", "", "Directory to copy the binaries' whole logs to when the test fails.")
)

const repoURL = "https://git.example.com/chaos/config.git"

func TestChaos(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	g := NewWithT(t)
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -chaos.seed=%d)", *seed, *seed)
	rng := rand.New(rand.NewPCG(*seed, 0))

	s, err := stack.Start(ctx, stack.Options{
		Dir:      t.TempDir(),
		Binaries: []string{"backend", "cluster-agent"},
		// The sweeps and the operation garbage collector are the safety net for changes made
		// while a binary was down or lost by the database: run them often enough to matter
		// within the convergence window.
		Args: map[string][]string{
			"backend": {"--sweep-interval=20s"},
			// Nothing prunes without Argo CD: deleted Applications lose their finalizer soon.
			"cluster-agent": {"--sweep-interval=20s", "--operation-gc-interval=20s", "--application-deletion-timeout=10s"},
		},
	})
	t.Cleanup(func() {
		if t.Failed() && s != nil && *keepLogs != "" {
			if err := os.CopyFS(*keepLogs, os.DirFS(s.LogDir)); err != nil {
				t.Logf("keeping the logs: %v", err)
			}
		}
		if t.Failed() && s != nil {
			for _, name := range []string{"backend", "cluster-agent"} {
				if data, err := os.ReadFile(filepath.Join(s.LogDir, name+".log")); err == nil {
					t.Logf("===== %s.log (last 6000 bytes)\n%s", name, tail(data, 6000))
				}
			}
		}
		if s != nil {
			_ = s.Stop()
		}
	})
	g.Expect(err).NotTo(HaveOccurred())
	c := s.ControlPlane.Client

	var tokens []string // the tenants' ServiceAccount tokens, which must never be logged
	w := &world{c: c, rng: rng, deployments: map[client.ObjectKey]*v1.GitOpsDeployment{}, envs: map[client.ObjectKey]bool{},
		synced: map[client.ObjectKey]bool{}}
	for i := range *tenants {
		ns := fmt.Sprintf("chaos-%d", i)
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		kubeconfig, token, err := s.ControlPlane.ServiceAccountKubeconfig(ctx, ns, "deployer")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(token).NotTo(BeEmpty())
		tokens = append(tokens, token)
		g.Expect(c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: ns},
			Type:       v1.ManagedEnvironmentSecretType,
			Data:       map[string][]byte{"kubeconfig": kubeconfig},
		})).To(Succeed())
		w.namespaces = append(w.namespaces, ns)
	}
	w.apiURL = s.ControlPlane.Config.Host
	baseline := goroutines(ctx, t, s)

	// Churn and faults run together; faults stop when the churn is done.
	start := time.Now()
	churnDone := make(chan struct{})
	var faults faultLog
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		injectFaults(ctx, t, s, rand.New(rand.NewPCG(*seed, 1)), churnDone, &faults)
	}()
	pause := *churnFor / time.Duration(*objects)
	for i := range *objects {
		if err := w.step(ctx, i); err != nil {
			t.Errorf("change %d: %v", i, err)
			break
		}
		time.Sleep(pause)
	}
	close(churnDone)
	wg.Wait()
	churned := time.Since(start)
	for name, p := range s.Processes {
		g.Expect(p.Running()).To(BeTrue(), "%s is running after the faults", name)
	}

	// Everything converges within the window after the last fault ended (or, without
	// faults, after the churn).
	lastFault := faults.lastRecovered()
	if lastFault.IsZero() {
		lastFault = time.Now()
	}
	g.Eventually(func(g Gomega) { w.consistent(ctx, g, s) }, time.Until(lastFault.Add(*converge)), time.Second).Should(Succeed())
	convergedIn := time.Since(lastFault)

	// The tenants' credentials never reach the binaries' logs, however they failed.
	for _, name := range []string{"backend", "cluster-agent"} {
		data, err := os.ReadFile(filepath.Join(s.LogDir, name+".log"))
		g.Expect(err).NotTo(HaveOccurred())
		for _, token := range tokens {
			g.Expect(strings.Contains(string(data), token)).To(BeFalse(), "a tenant's token is in %s.log", name)
		}
	}

	// No goroutine growth: what the processes run at rest after the churn is of the order
	// of what they ran at rest before it.
	after := goroutines(ctx, t, s)
	for name, n := range after {
		g.Expect(n).To(BeNumerically("<=", 2*baseline[name]+50), "%s goroutines: %d before, %d after", name, baseline[name], n)
	}

	t.Logf("chaos: %d changes in %s (%s), %d faults %v; consistent %s after the last fault; "+
		"%d live GitOpsDeployments, %d environments; goroutines before %v, after %v",
		*objects, churned.Round(time.Second), w.counts(), faults.total(), faults.byKind(), convergedIn.Round(100*time.Millisecond),
		len(w.deployments), len(w.envs), baseline, after)
}

// world is the churn's model of what should exist.
type world struct {
	c           client.Client
	rng         *rand.Rand
	apiURL      string
	namespaces  []string
	deployments map[client.ObjectKey]*v1.GitOpsDeployment
	envs        map[client.ObjectKey]bool
	synced      map[client.ObjectKey]bool
	done        map[string]int
	next        int
}

// step makes one random change, retrying it through API server outages.
func (w *world) step(ctx context.Context, i int) error {
	if w.done == nil {
		w.done = map[string]int{}
	}
	w.next++
	ns := w.namespaces[w.rng.IntN(len(w.namespaces))]
	r := w.rng.IntN(100)
	var kind string
	var err error
	switch {
	case r < 40 || len(w.deployments) == 0:
		kind, err = "create deployment", w.createDeployment(ctx, ns)
	case r < 60:
		kind, err = "update deployment", w.updateDeployment(ctx)
	case r < 80:
		kind, err = "delete deployment", w.deleteDeployment(ctx)
	case r < 88:
		kind, err = "sync run", w.syncRun(ctx)
	case r < 95:
		kind, err = "create environment", w.createEnvironment(ctx, ns)
	default:
		kind, err = "delete environment", w.deleteEnvironment(ctx)
	}
	w.done[kind]++
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	return nil
}

func (w *world) counts() string {
	var parts []string
	for k, n := range w.done {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	return strings.Join(parts, ", ")
}

func (w *world) createDeployment(ctx context.Context, ns string) error {
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d-" + strconv.Itoa(w.next), Namespace: ns},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: repoURL, Path: "path-" + strconv.Itoa(w.rng.IntN(5))},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	if w.rng.IntN(5) == 0 {
		depl.Spec.Type = v1.GitOpsDeploymentSpecTypeManual
	}
	if env := w.someEnvironment(ns); env != "" && w.rng.IntN(3) == 0 {
		depl.Spec.Destination = v1.ApplicationDestination{Environment: env, Namespace: ns}
	}
	if err := retry(ctx, func() error { return ignore(w.c.Create(ctx, depl.DeepCopy()), apierrors.IsAlreadyExists) }); err != nil {
		return err
	}
	w.deployments[client.ObjectKeyFromObject(depl)] = depl
	return nil
}

func (w *world) updateDeployment(ctx context.Context) error {
	key := w.someDeployment()
	path := "path-" + strconv.Itoa(w.rng.IntN(5))
	err := retry(ctx, func() error {
		live := &v1.GitOpsDeployment{}
		if err := w.c.Get(ctx, key, live); err != nil {
			return err
		}
		live.Spec.Source.Path = path
		return w.c.Update(ctx, live)
	})
	if err != nil {
		return err
	}
	w.deployments[key].Spec.Source.Path = path
	return nil
}

func (w *world) deleteDeployment(ctx context.Context) error {
	key := w.someDeployment()
	depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	if err := retry(ctx, func() error { return ignore(w.c.Delete(ctx, depl), apierrors.IsNotFound) }); err != nil {
		return err
	}
	delete(w.deployments, key)
	return nil
}

func (w *world) syncRun(ctx context.Context) error {
	// One SyncRun per deployment: without Argo CD here, a sync operation never finishes,
	// and a second sync would wait for it forever.
	var manual []client.ObjectKey
	for key, d := range w.deployments {
		if d.Spec.Type == v1.GitOpsDeploymentSpecTypeManual && !w.synced[key] {
			manual = append(manual, key)
		}
	}
	if len(manual) == 0 {
		return nil
	}
	sortKeys(manual)
	key := manual[w.rng.IntN(len(manual))]
	w.synced[key] = true
	run := &v1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Name: "s-" + strconv.Itoa(w.next), Namespace: key.Namespace},
		Spec:       v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: key.Name, RevisionID: "main"},
	}
	return retry(ctx, func() error { return ignore(w.c.Create(ctx, run.DeepCopy()), apierrors.IsAlreadyExists) })
}

func (w *world) createEnvironment(ctx context.Context, ns string) error {
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "env-" + strconv.Itoa(w.next), Namespace: ns},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: w.apiURL, ClusterCredentialsSecret: "cluster",
			Namespaces: []string{ns}},
	}
	if err := retry(ctx, func() error { return ignore(w.c.Create(ctx, env.DeepCopy()), apierrors.IsAlreadyExists) }); err != nil {
		return err
	}
	w.envs[client.ObjectKeyFromObject(env)] = true
	return nil
}

// deleteEnvironment deletes an environment no live deployment uses (a deployment of a
// deleted environment is reported, not deployed: not part of this model).
func (w *world) deleteEnvironment(ctx context.Context) error {
	used := map[client.ObjectKey]bool{}
	for key, d := range w.deployments {
		if d.Spec.Destination.Environment != "" {
			used[client.ObjectKey{Namespace: key.Namespace, Name: d.Spec.Destination.Environment}] = true
		}
	}
	for key := range w.envs {
		if used[key] {
			continue
		}
		env := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
		if err := retry(ctx, func() error { return ignore(w.c.Delete(ctx, env), apierrors.IsNotFound) }); err != nil {
			return err
		}
		delete(w.envs, key)
		return nil
	}
	return nil
}

func (w *world) someDeployment() client.ObjectKey {
	keys := make([]client.ObjectKey, 0, len(w.deployments))
	for key := range w.deployments {
		keys = append(keys, key)
	}
	// Map order is random but not from the seed: sort for a reproducible choice.
	sortKeys(keys)
	return keys[w.rng.IntN(len(keys))]
}

func (w *world) someEnvironment(ns string) string {
	var names []string
	for key := range w.envs {
		if key.Namespace == ns {
			names = append(names, key.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sortStrings(names)
	return names[w.rng.IntN(len(names))]
}

// consistent checks the end state: every live GitOpsDeployment has exactly one Argo CD
// Application with its spec; no other Application, rows, Operations, Operation CRs, cluster
// or repository Secrets or AppProjects are left; every live environment has its cluster
// Secret and every tenant with applications its AppProject.
func (w *world) consistent(ctx context.Context, g Gomega, s *stack.Stack) {
	c := s.ControlPlane.Client
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	live := &v1.GitOpsDeploymentList{}
	g.Expect(c.List(ctx, live)).To(Succeed())
	g.Expect(live.Items).To(HaveLen(len(w.deployments)), "live GitOpsDeployments")
	apps := &argov1alpha1.ApplicationList{}
	g.Expect(c.List(ctx, apps, client.InNamespace(stack.EngineNamespace),
		client.MatchingLabels{argocd.LabelManagedBy: argocd.ManagedByValue})).To(Succeed())
	byName := map[string]argov1alpha1.Application{}
	for _, app := range apps.Items {
		byName[app.Name] = app
	}
	for _, d := range live.Items {
		want := w.deployments[client.ObjectKeyFromObject(&d)]
		g.Expect(want).NotTo(BeNil(), "GitOpsDeployment %s/%s is not in the model", d.Namespace, d.Name)
		app, ok := byName[argocd.ApplicationName(d.UID)]
		g.Expect(ok).To(BeTrue(), "Application of %s/%s (uid %s, created %s ago, status %+v; %s)", d.Namespace, d.Name, d.UID,
			time.Since(d.CreationTimestamp.Time).Round(time.Second), d.Status, rowsOf(ctx, conn, string(d.UID)))
		g.Expect(app.Spec.Source.RepoURL).To(Equal(repoURL))
		g.Expect(app.Spec.Source.Path).To(Equal(want.Spec.Source.Path), "path of %s/%s", d.Namespace, d.Name)
		g.Expect(app.Spec.Destination.Namespace).To(Equal(d.Namespace))
		if want.Spec.Destination.Environment != "" {
			g.Expect(app.Spec.Destination.Name).To(HavePrefix("managed-env-"), "destination of %s/%s", d.Namespace, d.Name)
		} else {
			// The tenant's own cluster entry on the service's cluster.
			g.Expect(app.Spec.Destination.Server).To(HaveSuffix("?tenant="+app.Labels[argocd.LabelTenantID]), "destination of %s/%s", d.Namespace, d.Name)
		}
		g.Expect(app.Spec.SyncPolicy != nil && app.Spec.SyncPolicy.Automated != nil).To(Equal(want.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated))
	}
	want := map[string]bool{}
	for _, d := range live.Items {
		want[argocd.ApplicationName(d.UID)] = true
	}
	var extra []string
	for _, app := range apps.Items {
		if !want[app.Name] {
			extra = append(extra, fmt.Sprintf("%s (deleting: %t; %s)", app.Name, app.DeletionTimestamp != nil,
				rowsOf(ctx, conn, app.Labels[argocd.LabelApplicationID])))
		}
	}
	g.Expect(extra).To(BeEmpty(), "Argo CD Applications without a live GitOpsDeployment")

	secrets := &corev1.SecretList{}
	g.Expect(c.List(ctx, secrets, client.InNamespace(stack.EngineNamespace),
		client.MatchingLabels{argocd.LabelSecretType: argocd.SecretTypeCluster}, client.HasLabels{argocd.LabelManagedEnvironmentID})).To(Succeed())
	g.Expect(secrets.Items).To(HaveLen(len(w.envs)), "cluster Secrets of managed environments")
	count := func(query string) int {
		var n int
		g.Expect(conn.QueryRow(ctx, query).Scan(&n)).To(Succeed(), query)
		return n
	}
	g.Expect(count("SELECT count(*) FROM applications")).To(Equal(len(live.Items)), "application rows")
	g.Expect(count("SELECT count(*) FROM deployment_application_mappings")).To(Equal(len(live.Items)), "deployment mappings")
	g.Expect(count("SELECT count(*) FROM managed_environments")).To(Equal(len(w.envs)), "managed environment rows")
	rows, err := conn.Query(ctx, `SELECT resource_type || ' ' || resource_id || ' ' || state || ' (' || human_readable_state || ') created ' ||
		date_trunc('second', now() - created_at)::text || ' ago' FROM operations WHERE state IN ('Waiting', 'In_Progress') ORDER BY created_at`)
	g.Expect(err).NotTo(HaveOccurred())
	unfinished, err := pgx.CollectRows(rows, pgx.RowTo[string])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unfinished).To(BeEmpty(), "unfinished operations")

	ids := func(query string) map[string]bool {
		rows, err := conn.Query(ctx, query)
		g.Expect(err).NotTo(HaveOccurred(), query)
		list, err := pgx.CollectRows(rows, pgx.RowTo[string])
		g.Expect(err).NotTo(HaveOccurred(), query)
		set := map[string]bool{}
		for _, id := range list {
			set[id] = true
		}
		return set
	}
	// AppProjects: none for a tenant without a row, one at least for each tenant with
	// applications.
	projects := &argov1alpha1.AppProjectList{}
	g.Expect(c.List(ctx, projects, client.InNamespace(stack.EngineNamespace),
		client.MatchingLabels{argocd.LabelManagedBy: argocd.ManagedByValue})).To(Succeed())
	tenantRows, projectTenants := ids("SELECT id::text FROM tenants"), map[string]bool{}
	for _, p := range projects.Items {
		tenant := p.Labels[argocd.LabelTenantID]
		g.Expect(tenantRows).To(HaveKey(tenant), "AppProject %s has a tenant row", p.Name)
		projectTenants[tenant] = true
	}
	for tenant := range ids("SELECT DISTINCT tenant_id::text FROM applications") {
		g.Expect(projectTenants).To(HaveKey(tenant), "tenant %s with applications has an AppProject", tenant)
	}
	// Repository Secrets (two per credential): none left over.
	g.Expect(c.List(ctx, secrets, client.InNamespace(stack.EngineNamespace),
		client.MatchingLabels{argocd.LabelSecretType: argocd.SecretTypeRepository})).To(Succeed())
	g.Expect(secrets.Items).To(HaveLen(2*count("SELECT count(*) FROM repository_credentials")), "repository Secrets")
	// Operation CRs: each has its row (rows are written before CRs and collected with them).
	crs := &v1.OperationList{}
	g.Expect(c.List(ctx, crs, client.InNamespace(stack.EngineNamespace))).To(Succeed())
	operationRows := ids("SELECT id::text FROM operations")
	for _, cr := range crs.Items {
		g.Expect(operationRows).To(HaveKey(cr.Spec.OperationID), "Operation CR %s has a row", cr.Name)
	}
	g.Expect(count("SELECT count(*) FROM operation_signals")).To(BeZero(), "the cluster-agent took down every signal")
}

// rowsOf describes the application row and operations of an application id, for a
// failure message.
func rowsOf(ctx context.Context, conn *pgx.Conn, id string) string {
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM applications WHERE id::text = $1", id).Scan(&rows); err != nil {
		return err.Error()
	}
	ops, err := conn.Query(ctx, `SELECT state || ' (' || human_readable_state || ') created ' ||
		date_trunc('second', now() - created_at)::text || ' ago' FROM operations WHERE resource_id::text = $1 ORDER BY created_at`, id)
	if err != nil {
		return err.Error()
	}
	states, err := pgx.CollectRows(ops, pgx.RowTo[string])
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d application rows, operations %v", rows, states)
}

// faultLog counts the faults injected, by kind.
type faultLog struct {
	mu    sync.Mutex
	kinds map[string]int
	// last is when the last fault's part was back.
	last time.Time
}

func (f *faultLog) add(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kinds == nil {
		f.kinds = map[string]int{}
	}
	f.kinds[kind]++
	f.last = time.Now()
}

// lastRecovered is when the last fault ended (the zero time if there was none).
func (f *faultLog) lastRecovered() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *faultLog) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, k := range f.kinds {
		n += k
	}
	return n
}

func (f *faultLog) byKind() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, n := range f.kinds {
		out[k] = n
	}
	return out
}

// injectFaults crashes one part at a time, at random intervals, until done is closed: the
// backend or the cluster-agent (SIGKILL), PostgreSQL (immediate shutdown) or the
// kube-apiserver (SIGKILL); each comes back after one to three seconds.
func injectFaults(ctx context.Context, t *testing.T, s *stack.Stack, rng *rand.Rand, done <-chan struct{}, log *faultLog) {
	kinds := []string{"backend", "cluster-agent", "postgres", "kube-apiserver"}
	for {
		gap := *minGap + time.Duration(rng.Int64N(int64(*maxGap-*minGap)+1))
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(gap):
		}
		kind := kinds[rng.IntN(len(kinds))]
		down := time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
		var err error
		switch kind {
		case "backend", "cluster-agent":
			s.CrashBinary(kind)
			time.Sleep(down)
			err = s.StartBinary(ctx, kind)
		case "postgres":
			s.Postgres.Crash()
			time.Sleep(down)
			err = s.Postgres.Restart()
		case "kube-apiserver":
			if err = s.ControlPlane.CrashAPIServer(); err == nil {
				time.Sleep(down)
				err = s.ControlPlane.StartAPIServer(ctx)
			}
		}
		if err != nil {
			t.Errorf("%s fault: %v", kind, err)
			return
		}
		log.add(kind)
	}
}

// retry runs op until it succeeds, through outages of the API server.
func retry(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := op()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func ignore(err error, ok func(error) bool) error {
	if err != nil && ok(err) {
		return nil
	}
	return err
}

// goroutines scrapes go_goroutines from each binary's metrics endpoint.
func goroutines(ctx context.Context, t *testing.T, s *stack.Stack) map[string]int {
	t.Helper()
	out := map[string]int{}
	for name, addr := range s.MetricsAddr {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("scraping %s: %v", name, err)
		}
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					t.Fatalf("go_goroutines of %s: %v", name, err)
				}
				out[name] = int(f)
			}
		}
	}
	return out
}

func sortKeys(keys []client.ObjectKey) {
	slices.SortFunc(keys, func(a, b client.ObjectKey) int { return strings.Compare(a.String(), b.String()) })
}

func sortStrings(s []string) { slices.Sort(s) }

func tail(data []byte, n int) []byte {
	if len(data) > n {
		return data[len(data)-n:]
	}
	return data
}
