// Package manageropts holds the command-line options every binary of the service shares:
// logging, metrics, probe and pprof addresses, leader election. Each binary binds them to its flag
// set and turns them into controller-runtime manager options.
package manageropts

import (
	"flag"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options are the flags shared by the binaries.
type Options struct {
	MetricsAddr          string
	MetricsSecure        bool
	MetricsCertDir       string
	ProbeAddr            string
	PprofAddr            string
	LeaderElect          bool
	LeaderElectionNS     string
	GracefulShutdown     time.Duration
	KubeAPIQPS           float64
	KubeAPIBurst         int
	zap                  zap.Options
	defaultMetricsAddr   string
	defaultProbeAddr     string
	leaderElectionSuffix string
}

// Client-side rate limits of the binaries' Kubernetes clients (each resource kind has its
// own token bucket). A burst of N new deployments costs the backend 2N status writes: at
// 100 queries per second the limiter, not the API server, set the pace (1,000 deployments'
// statuses took 18 s, those of 10,000 took 220 s). The API server protects itself
// with API Priority and Fairness; these only keep one binary from flooding it.
const (
	DefaultKubeAPIQPS   = 500
	DefaultKubeAPIBurst = 1000
)

// New returns options with defaults; name picks the leader-election lock.
func New(name, metricsAddr, probeAddr string) *Options {
	return &Options{defaultMetricsAddr: metricsAddr, defaultProbeAddr: probeAddr, leaderElectionSuffix: name}
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.defaultMetricsAddr, "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS to callers whose bearer token the API server authenticates and allows to get the non-resource URL /metrics "+
			"(TokenReview and SubjectAccessReview); false serves plain HTTP to anyone who can connect.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "",
		"Directory with tls.crt and tls.key for the metrics endpoint (reloaded when they change); empty: a self-signed certificate made at start.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.defaultProbeAddr, "Address the /healthz and /readyz probes bind to.")
	fs.StringVar(&o.PprofAddr, "pprof-address", "", "Address net/http/pprof (/debug/pprof/) is served on, e.g. \"127.0.0.1:6060\"; empty or \"0\" disables it. Its profiles expose the process's memory: bind it to localhost or protect it.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election lease (default: the pod's namespace).")
	fs.DurationVar(&o.GracefulShutdown, "graceful-shutdown-timeout", 30*time.Second, "How long to wait for running reconciles to finish on shutdown.")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", DefaultKubeAPIQPS, "Queries per second to the Kubernetes API server, per resource kind.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", DefaultKubeAPIBurst, "Burst of queries to the Kubernetes API server, per resource kind.")
	o.zap = zap.Options{Development: false}
	o.zap.BindFlags(fs)
}

// Logger builds the zap logger (through zapr) from the flags and installs it as the
// controller-runtime default.
func (o *Options) Logger() logr.Logger {
	log := zap.New(zap.UseFlagOptions(&o.zap))
	ctrl.SetLogger(log)
	return log
}

// ManagerOptions turns the flags into manager options.
func (o *Options) ManagerOptions(scheme *runtime.Scheme) ctrl.Options {
	shutdown := o.GracefulShutdown
	return ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 o.metricsOptions(),
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.leaderElectionSuffix + ".managed-gitops.redhat.com",
		LeaderElectionNamespace: o.LeaderElectionNS,
		// Release the lease on a clean exit so a standby takes over at once.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
		Cache:                         cache.Options{DefaultTransform: StripManagedFields},
	}
}

// StripManagedFields drops metadata.managedFields from every object the informer caches
// hold: nothing here reads them, and every object read from the cache would copy them (a
// third of a GitOpsDeployment or an Application as the service writes them). An update made
// from a cached object leaves them as they are on the server.
var StripManagedFields = cache.TransformStripManagedFields()

// metricsOptions serves metrics as --metrics-secure says: over HTTPS, authenticated and
// authorized by the API server, as kubebuilder scaffolds it, or plainly.
func (o *Options) metricsOptions() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		opts.CertDir = o.MetricsCertDir
	}
	return opts
}

// RestConfig applies the client rate limits to cfg.
func (o *Options) RestConfig(cfg *rest.Config) *rest.Config {
	cfg.QPS = float32(o.KubeAPIQPS)
	cfg.Burst = o.KubeAPIBurst
	return cfg
}

// AddProbes installs the standard liveness and readiness checks.
func AddProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", healthz.Ping)
}
