package manageropts

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

func parsed(t *testing.T, args ...string) *Options {
	t.Helper()
	o := New("backend", ":8080", ":8081")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestFlagDefaults(t *testing.T) {
	o := parsed(t)
	if o.MetricsAddr != ":8080" || o.ProbeAddr != ":8081" {
		t.Errorf("addresses %q %q, want the binary's defaults", o.MetricsAddr, o.ProbeAddr)
	}
	// Metrics are protected unless the operator says otherwise; pprof is off.
	if !o.MetricsSecure || o.PprofAddr != "" || o.LeaderElect {
		t.Errorf("secure %v, pprof %q, leader election %v", o.MetricsSecure, o.PprofAddr, o.LeaderElect)
	}
	if o.GracefulShutdown != 30*time.Second || o.KubeAPIQPS != 500 || o.KubeAPIBurst != 1000 {
		t.Errorf("shutdown %s, qps %v, burst %d", o.GracefulShutdown, o.KubeAPIQPS, o.KubeAPIBurst)
	}
}

func TestManagerOptionsFollowTheFlags(t *testing.T) {
	o := parsed(t, "--leader-elect", "--leader-election-namespace=gitops", "--graceful-shutdown-timeout=5s",
		"--health-probe-bind-address=:9000", "--pprof-address=127.0.0.1:6060", "--metrics-bind-address=0")
	scheme := runtime.NewScheme()
	m := o.ManagerOptions(scheme)
	if m.Scheme != scheme || !m.LeaderElection || m.LeaderElectionNamespace != "gitops" {
		t.Errorf("scheme %p, leader election %v in %q", m.Scheme, m.LeaderElection, m.LeaderElectionNamespace)
	}
	// Each binary has its own lock, so the three binaries do not wait for each other.
	if m.LeaderElectionID != "backend.managed-gitops.redhat.com" {
		t.Errorf("lease %q", m.LeaderElectionID)
	}
	// A clean exit hands over at once.
	if !m.LeaderElectionReleaseOnCancel {
		t.Error("the lease is not released on a clean exit")
	}
	if m.GracefulShutdownTimeout == nil || *m.GracefulShutdownTimeout != 5*time.Second {
		t.Errorf("graceful shutdown %v", m.GracefulShutdownTimeout)
	}
	if m.HealthProbeBindAddress != ":9000" || m.PprofBindAddress != "127.0.0.1:6060" || m.Metrics.BindAddress != "0" {
		t.Errorf("probe %q, pprof %q, metrics %q", m.HealthProbeBindAddress, m.PprofBindAddress, m.Metrics.BindAddress)
	}
	// The timeout is a copy: changing the options later does not change a manager's.
	o.GracefulShutdown = time.Hour
	if *m.GracefulShutdownTimeout != 5*time.Second {
		t.Error("the manager's shutdown timeout follows later changes of the options")
	}
}

func TestMetricsOptionsSecureOrPlain(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantSecure bool
		wantCert   string
	}{
		{"secure by default", nil, true, ""},
		{"a certificate directory", []string{"--metrics-cert-dir=/certs"}, true, "/certs"},
		// Plain HTTP has no authentication filter and no certificate.
		{"plain", []string{"--metrics-secure=false", "--metrics-cert-dir=/certs"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parsed(t, tt.args...).metricsOptions()
			if m.SecureServing != tt.wantSecure || (m.FilterProvider != nil) != tt.wantSecure || m.CertDir != tt.wantCert {
				t.Errorf("secure %v, filter %v, cert dir %q; want %v, %v, %q", m.SecureServing, m.FilterProvider != nil, m.CertDir,
					tt.wantSecure, tt.wantSecure, tt.wantCert)
			}
		})
	}
}

func TestRestConfigAppliesTheRateLimits(t *testing.T) {
	cfg := &rest.Config{Host: "https://x", QPS: 5, Burst: 10}
	got := parsed(t, "--kube-api-qps=50.5", "--kube-api-burst=75").RestConfig(cfg)
	if got != cfg || cfg.QPS != 50.5 || cfg.Burst != 75 || cfg.Host != "https://x" {
		t.Errorf("config %+v", cfg)
	}
}

func TestControllerOptions(t *testing.T) {
	o := ControllerOptions(4)
	if o.MaxConcurrentReconciles != 4 || o.RateLimiter == nil {
		t.Fatalf("options %+v", o)
	}
	if d := o.RateLimiter.When(reconcileRequest("a")); d > FirstRetryDelay {
		t.Errorf("first retry after %s", d)
	}
	if ControllerOptions(0).MaxConcurrentReconciles != 0 {
		t.Error("0 must leave controller-runtime's default")
	}
}

func TestSingleDashName(t *testing.T) {
	tests := []struct {
		arg    string
		want   string
		wantOK bool
	}{
		{"-leader-elect", "leader-elect", true},
		{"-interval=5s", "interval", true},
		{"-interval=", "interval", true},
		// Single letters are shorthands, double dashes are already right.
		{"-h", "", false},
		{"-v=2", "v", false},
		{"--leader-elect", "", false},
		{"-", "", false},
		{"--", "", false},
		{"leader-elect", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		name, ok := singleDashName(tt.arg)
		if ok != tt.wantOK || (ok && name != tt.want) {
			t.Errorf("singleDashName(%q) = %q, %v; want %q, %v", tt.arg, name, ok, tt.want, tt.wantOK)
		}
	}
}

func TestDoubleDashed(t *testing.T) {
	newRoot := func() *cobra.Command {
		root := &cobra.Command{Use: "backend", Args: NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
		root.PersistentFlags().String("kubeconfig-path", "", "")
		root.Flags().Bool("leader-elect", false, "")
		root.Flags().StringP("output", "o", "", "")
		migrate := &cobra.Command{Use: "migrate", RunE: func(*cobra.Command, []string) error { return nil }}
		migrate.Flags().String("to", "", "")
		root.AddCommand(migrate)
		return root
	}
	tests := []struct {
		name     string
		args     []string
		want     []string
		wantWarn []string
	}{
		{"a long flag", []string{"-leader-elect"}, []string{"--leader-elect"}, []string{"-leader-elect: use --leader-elect"}},
		{"with a value", []string{"-leader-elect=true"}, []string{"--leader-elect=true"}, []string{"-leader-elect"}},
		{"already double", []string{"--leader-elect"}, []string{"--leader-elect"}, nil},
		{"a shorthand stays", []string{"-o", "json"}, []string{"-o", "json"}, nil},
		// An unknown name is left for cobra to refuse as it was typed.
		{"an unknown flag", []string{"-frobnicate"}, []string{"-frobnicate"}, nil},
		{"help", []string{"-help"}, []string{"--help"}, []string{"-help: use --help"}},
		{"a verb's own flag", []string{"migrate", "-to=v2"}, []string{"migrate", "--to=v2"}, []string{"-to: use --to"}},
		{"an inherited flag on a verb", []string{"migrate", "-kubeconfig-path=/k"}, []string{"migrate", "--kubeconfig-path=/k"}, []string{"-kubeconfig-path"}},
		// A flag of the root is not a flag of a verb.
		{"the root's flag after a verb", []string{"migrate", "-leader-elect"}, []string{"migrate", "-leader-elect"}, nil},
		// After "--" everything is an argument.
		{"after a double dash", []string{"-leader-elect", "--", "-leader-elect"}, []string{"--leader-elect", "--", "-leader-elect"}, []string{"-leader-elect"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRoot()
			var stderr bytes.Buffer
			root.SetErr(&stderr)
			got := doubleDashed(root, tt.args)
			if !slices.Equal(got, tt.want) {
				t.Errorf("doubleDashed(%q) = %q, want %q", tt.args, got, tt.want)
			}
			for _, w := range tt.wantWarn {
				if !bytes.Contains(stderr.Bytes(), []byte(w)) {
					t.Errorf("warning %q missing from %q", w, stderr.String())
				}
			}
			if len(tt.wantWarn) == 0 && stderr.Len() != 0 {
				t.Errorf("unexpected warning %q", stderr.String())
			}
		})
	}
}

func TestUsageErrorKeepsItsMessageAndCause(t *testing.T) {
	err := UsageErrorf("bad %s", "flag")
	if err.Error() != "bad flag" {
		t.Errorf("message %q", err)
	}
	if !isUsage(err) {
		t.Error("UsageErrorf is not a usage error")
	}
	wrapped := flagUsageError(nil, err)
	if !isUsage(wrapped) || wrapped.Error() != "bad flag" {
		t.Errorf("a flag error %v", wrapped)
	}
}

func reconcileRequest(name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "n", Name: name}}
}

func isUsage(err error) bool { return errors.Is(err, ErrUsage) }

// The informer caches keep no managedFields: nothing reads them, and every read from the
// cache would copy them.
func TestCachesHoldNoManagedFields(t *testing.T) {
	transform := parsed(t).ManagerOptions(runtime.NewScheme()).Cache.DefaultTransform
	if transform == nil {
		t.Fatal("no transform of cached objects")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Data: map[string]string{"k": "v"}}
	out, err := transform(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if got.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", got.ManagedFields)
	}
	if got.Name != "c" || got.Labels["a"] != "b" || got.Data["k"] != "v" {
		t.Errorf("the rest of the object changed: %+v", got)
	}
}
