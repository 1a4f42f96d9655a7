package observability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// dashboardPath is the dashboard whose queries the binaries must answer.
const dashboardPath = "../../manifests/dashboards/gitops-service.json"

// rulesPath holds the alerts whose metrics the binaries must export.
const rulesPath = "../../manifests/components/monitoring/prometheusrule.yaml"

// exported says which binary exports a metric a query names: the family itself, or for
// name_bucket, name_sum and name_count the histogram or summary family name.
func exported(scrapes map[string]map[string]*dto.MetricFamily, name string) (string, bool) {
	for bin, mfs := range scrapes {
		if _, ok := mfs[name]; ok {
			return bin, true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base, ok := strings.CutSuffix(name, suffix)
			if !ok {
				continue
			}
			if mf, ok := mfs[base]; ok {
				t := mf.GetType()
				if t == dto.MetricType_HISTOGRAM || t == dto.MetricType_GAUGE_HISTOGRAM ||
					(t == dto.MetricType_SUMMARY && suffix != "_bucket") {
					return bin, true
				}
			}
		}
	}
	return "", false
}

// value sums a family's samples whose labels include want: counter and gauge values,
// histogram and summary sample counts. The second result is false when no sample matched.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Summary != nil:
			sum += float64(m.GetSummary().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, found
}

func TestDashboardMetricsAreExported(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	data, err := os.ReadFile(dashboardPath)
	g.Expect(err).NotTo(HaveOccurred())
	exprs, err := DashboardExprs(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exprs).NotTo(BeEmpty())

	s, err := stack.Start(ctx, stack.Options{
		Dir:      t.TempDir(),
		Binaries: slices.Clone(stack.Binaries),
		Progress: func(step string) { t.Log("==> " + step) },
		// The receiver serves a certificate, whose expiry the backend exports.
		GitWebhook: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for name, p := range s.Processes {
				t.Logf("--- %s log tail:\n%s", name, p.Tail())
			}
		}
		if err := s.Stop(); err != nil {
			t.Log(err)
		}
	})
	c := s.ControlPlane.Client

	// One GitOpsDeployment in a new namespace, so that the operation and status metrics
	// get samples.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "observability-"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics", Namespace: ns.Name},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "environments/dev"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	g.Expect(c.Create(ctx, depl)).To(Succeed())
	app := &argov1alpha1.Application{}
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: stack.EngineNamespace, Name: argocd.ApplicationName(depl.UID)}, app)
	}, time.Minute, 200*time.Millisecond).Should(Succeed(), "the cluster-agent creates the Argo CD Application")
	// Argo CD reports (none runs here, so the test writes the status as it would).
	patch := client.MergeFrom(app.DeepCopy())
	app.Status.Sync = argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "0123abcd"}
	app.Status.Health.Status = "Healthy"
	g.Expect(c.Patch(ctx, app, patch)).To(Succeed())

	// The new metrics have samples once the pipeline has gone round: the operation was
	// carried out, the Application status was written to the database and the
	// GitOpsDeployment status shows it.
	type sample struct {
		binary, name string
		labels       map[string]string
	}
	wanted := []sample{
		{"cluster-agent", "gitops_cluster_agent_operation_runs_total", map[string]string{"resource_type": "Application", "outcome": "completed"}},
		{"cluster-agent", "gitops_cluster_agent_operation_run_seconds", map[string]string{"resource_type": "Application"}},
		{"cluster-agent", "gitops_cluster_agent_status_write_seconds", nil},
		{"backend", "gitops_backend_status_propagation_seconds", nil},
		{"backend", "gitops_backend_tenants", map[string]string{"engine_instance": "default/" + stack.EngineNamespace}},
		{"backend", "gitops_backend_applications", nil},
		{"backend", "gitops_deployments", map[string]string{"sync_status": "Synced", "health_status": "Healthy"}},
		{"backend", "gitops_db_max_open_connections", nil},
		{"cluster-agent", "gitops_db_max_open_connections", nil},
		{"backend", "gitops_serving_certificate_expiry_timestamp_seconds", map[string]string{"server": "git-webhook"}},
	}
	var scrapes map[string]map[string]*dto.MetricFamily
	g.Eventually(func() error {
		var err error
		if scrapes, err = s.ScrapeAll(ctx); err != nil {
			return err
		}
		for _, w := range wanted {
			if v, ok := value(scrapes[w.binary], w.name, w.labels); !ok || v <= 0 {
				return fmt.Errorf("%s: %s%v is %v (present: %v), want > 0", w.binary, w.name, w.labels, v, ok)
			}
		}
		return nil
	}, time.Minute, time.Second).Should(Succeed())
	for _, bin := range []string{"backend", "cluster-agent"} {
		_, ok := value(scrapes[bin], "gitops_db_connections", map[string]string{"state": "idle"})
		g.Expect(ok).To(BeTrue(), "%s exports gitops_db_connections", bin)
	}

	// Every metric of every dashboard query is exported by some binary.
	var missing []string
	checked := map[string]bool{}
	for _, e := range exprs {
		names := MetricNames(e)
		g.Expect(names).NotTo(BeEmpty(), "no metric name found in %q", e)
		for _, n := range names {
			if checked[n] {
				continue
			}
			checked[n] = true
			bin, ok := exported(scrapes, n)
			if !ok {
				missing = append(missing, fmt.Sprintf("%s (in %q)", n, e))
				continue
			}
			t.Logf("%s: exported by %s", n, bin)
		}
	}
	g.Expect(missing).To(BeEmpty(), "dashboard metrics no binary exports")

	checkAlerts(ctx, t, scrapes)

	// Logs are structured: every line of every binary is a JSON object with a level, a
	// time and a message, and the operation's lines carry its tenant and resource.
	var tenantLines int
	for _, bin := range stack.Binaries {
		data, err := os.ReadFile(filepath.Join(s.LogDir, bin+".log"))
		g.Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		g.Expect(lines).NotTo(BeEmpty(), "%s logs", bin)
		for _, line := range lines {
			var entry map[string]any
			g.Expect(json.Unmarshal([]byte(line), &entry)).To(Succeed(), "%s log line is JSON: %s", bin, line)
			g.Expect(entry).To(And(HaveKey("level"), HaveKey("ts"), HaveKey("msg")), "%s log line: %s", bin, line)
			if bin == "cluster-agent" && entry["tenant"] == app.Labels[argocd.LabelTenantID] && entry["resourceID"] == string(depl.UID) {
				tenantLines++
			}
		}
	}
	g.Expect(tenantLines).To(BeNumerically(">", 0), "the cluster-agent logs the operation with its tenant and resource")
}

// checkAlerts evaluates every alert of the monitoring component with Prometheus's engine
// against the binaries' scrape: each metric it selects is exported and each expression
// evaluates. On this healthy stack only one alert fires: the receiver's test certificate
// lives a day, less than the alert's two weeks.
func checkAlerts(ctx context.Context, t *testing.T, scrapes map[string]map[string]*dto.MetricFamily) {
	t.Helper()
	g := NewWithT(t)
	scrape, err := Exposition(scrapes)
	g.Expect(err).NotTo(HaveOccurred())
	reports, err := EvaluateAlerts(ctx, rulesPath, scrape)
	g.Expect(err).NotTo(HaveOccurred())
	firing := map[string]int{}
	for _, r := range reports {
		g.Expect(r.Error).To(BeEmpty(), "alert %s does not evaluate", r.Alert)
		g.Expect(r.Missing).To(BeEmpty(), "alert %s selects metrics no binary exports", r.Alert)
		g.Expect(r.Metrics).NotTo(BeEmpty(), "alert %s selects no metric", r.Alert)
		if r.Firing > 0 {
			firing[r.Alert] = r.Firing
		}
		t.Logf("alert %s: metrics %v, firing %d", r.Alert, r.Metrics, r.Firing)
	}
	g.Expect(len(reports)).To(BeNumerically(">=", 10), "alerts evaluated")
	g.Expect(firing).To(Equal(map[string]int{"GitOpsServiceCertificateExpiresSoon": 1}),
		"alerts firing on a healthy stack whose only certificate expires in a day")
}
