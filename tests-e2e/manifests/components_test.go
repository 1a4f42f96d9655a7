package manifests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// operatorCRDs are the CRDs of the operators the components need, from those operators' Go
// modules: the module proxy is the one registry the tests reach. Their objects pass a
// server-side dry run against them.
var operatorCRDs = []struct {
	module, version string
	files           []string
}{
	{"github.com/prometheus-operator/prometheus-operator", "v0.94.0", []string{
		"example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
		"example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
	}},
	{"github.com/cloudnative-pg/cloudnative-pg", "v1.30.0", []string{
		"config/crd/bases/postgresql.cnpg.io_clusters.yaml",
		"config/crd/bases/postgresql.cnpg.io_scheduledbackups.yaml",
	}},
}

// installOperatorCRDs downloads the operators' modules (or finds them in the module cache)
// and installs their CRDs.
func installOperatorCRDs(ctx context.Context, c client.Client) error {
	for _, m := range operatorCRDs {
		dir, err := testenv.ModuleDir(m.module, m.version, os.TempDir())
		if err != nil {
			return err
		}
		for _, f := range m.files {
			if err := installFixtureCRDs(ctx, c, filepath.Join(dir, f)); err != nil {
				return fmt.Errorf("%s@%s: %w", m.module, m.version, err)
			}
		}
	}
	return nil
}

// checkOperated checks the production overlay with the monitoring and CloudNativePG
// components (testdata/production-operated).
func checkOperated(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	checkProduction(t, objs, false)
	checkMonitoring(t, objs)
	checkCloudNativePG(t, objs)
}

// checkMonitoring: the ServiceMonitor scrapes every binary's metrics port with a token
// allowed to read metrics, and every alert says how bad it is, what happened and where its
// runbook is.
func checkMonitoring(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	sm := find(objs, "monitoring.coreos.com", "ServiceMonitor", "gitops-service", "gitops-service")
	if sm == nil {
		t.Fatalf("no ServiceMonitor gitops-service/gitops-service")
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	endpoint, _ := endpoints[0].(map[string]any)
	port, _, _ := unstructured.NestedString(endpoint, "port")
	scraped := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "Service" || o.GetNamespace() != sm.GetNamespace() || !matches(selector, o.GetLabels()) {
			continue
		}
		svc := &corev1.Service{}
		mustConvert(t, o, svc)
		for _, p := range svc.Spec.Ports {
			if p.Name == port {
				scraped[svc.Name] = true
			}
		}
	}
	for _, bin := range []string{"backend", "cluster-agent", "appstudio-controller"} {
		if !scraped["gitops-service-"+bin+"-metrics"] {
			t.Errorf("the ServiceMonitor does not scrape %s: it scrapes %v", bin, scraped)
		}
	}
	if scheme, _, _ := unstructured.NestedString(endpoint, "scheme"); scheme != "https" {
		t.Errorf("the ServiceMonitor scrapes over %q, want https (the binaries serve metrics over TLS)", scheme)
	}
	// The token it scrapes with is one whose ServiceAccount may read metrics.
	tokenSecret, _, _ := unstructured.NestedString(endpoint, "authorization", "credentials", "name")
	secret := find(objs, "", "Secret", "gitops-service", tokenSecret)
	if secret == nil || secret.Object["type"] != "kubernetes.io/service-account-token" {
		t.Fatalf("the ServiceMonitor's token Secret %q is not a ServiceAccount token of the build", tokenSecret)
	}
	sa := secret.GetAnnotations()["kubernetes.io/service-account.name"]
	bound := false
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		role, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			s, _ := s.(map[string]any)
			bound = bound || (role == "gitops-service-metrics-reader" && s["kind"] == "ServiceAccount" && s["name"] == sa && s["namespace"] == "gitops-service")
		}
	}
	if find(objs, "", "ServiceAccount", "gitops-service", sa) == nil || !bound {
		t.Errorf("the scraper ServiceAccount %q is missing or not bound to gitops-service-metrics-reader", sa)
	}
	checkAlertAnnotations(t, objs)
}

// runbookHeadings are the anchors of docs/operator-guide.md's headings, as GitHub makes them.
func runbookHeadings(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("../../docs/operator-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")] = true
	}
	return anchors
}

func checkAlertAnnotations(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	rule := find(objs, "monitoring.coreos.com", "PrometheusRule", "gitops-service", "gitops-service")
	if rule == nil {
		t.Fatalf("no PrometheusRule gitops-service/gitops-service")
	}
	anchors := runbookHeadings(t)
	const guide = "https://github.com/gitops-service/gitops-service/blob/main/docs/operator-guide.md#"
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	alerts := 0
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			r, _ := r.(map[string]any)
			name, _ := r["alert"].(string)
			if name == "" {
				continue
			}
			alerts++
			severity, _, _ := unstructured.NestedString(r, "labels", "severity")
			if !slices.Contains([]string{"warning", "critical"}, severity) {
				t.Errorf("alert %s: severity %q, want warning or critical", name, severity)
			}
			annotations, _, _ := unstructured.NestedStringMap(r, "annotations")
			if annotations["summary"] == "" || annotations["description"] == "" {
				t.Errorf("alert %s lacks a summary or a description", name)
			}
			anchor, ok := strings.CutPrefix(annotations["runbook_url"], guide)
			if !ok || anchor != strings.ToLower(name) || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q, want %s%s and that heading in docs/operator-guide.md", name, annotations["runbook_url"], guide, strings.ToLower(name))
			}
		}
	}
	if alerts == 0 {
		t.Errorf("the PrometheusRule has no alerts")
	}
}

// checkCloudNativePG: the backend and the cluster-agent reach the CloudNativePG Cluster of
// the build with its app Secret's URI, verifying its certificate against its CA, and a
// ScheduledBackup backs that Cluster up.
func checkCloudNativePG(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	cluster := find(objs, "postgresql.cnpg.io", "Cluster", "gitops-service", "gitops-service-db")
	if cluster == nil {
		t.Fatalf("no CloudNativePG Cluster gitops-service/gitops-service-db")
	}
	if n, _, _ := unstructured.NestedInt64(cluster.Object, "spec", "instances"); n < 2 {
		t.Errorf("the Cluster has %d instances: a production database needs a standby to fail over to", n)
	}
	backup := find(objs, "postgresql.cnpg.io", "ScheduledBackup", "gitops-service", "gitops-service-db")
	if name, _, _ := unstructured.NestedString(backup.Object, "spec", "cluster", "name"); backup == nil || name != cluster.GetName() {
		t.Errorf("no ScheduledBackup of the Cluster")
	}
	usesDB := 0
	for _, d := range deploymentsOf(t, objs) {
		c := d.Spec.Template.Spec.Containers[0]
		url := envOf(c, "GITOPS_DATABASE_URL")
		if url == nil {
			continue // the appstudio-controller has no database
		}
		usesDB++
		ref := url.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != cluster.GetName()+"-app" || ref.SecretKeyRef.Key != "uri" || url.Value != "" {
			t.Errorf("%s: GITOPS_DATABASE_URL %+v, want the uri of Secret %s-app", d.Name, url, cluster.GetName())
		}
		if mode := envOf(c, "PGSSLMODE"); mode == nil || mode.Value != "verify-full" {
			t.Errorf("%s: PGSSLMODE %+v, want verify-full", d.Name, mode)
		}
		root := envOf(c, "PGSSLROOTCERT")
		if root == nil || secretMountFor(d.Spec.Template.Spec, c, filepath.Dir(root.Value)) != cluster.GetName()+"-ca" {
			t.Errorf("%s: PGSSLROOTCERT %+v is not in a mount of Secret %s-ca", d.Name, root, cluster.GetName())
		}
	}
	if usesDB != 2 {
		t.Errorf("%d Deployments use the database, want the backend and the cluster-agent", usesDB)
	}
}
