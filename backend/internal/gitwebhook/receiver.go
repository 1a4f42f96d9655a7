package gitwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// The Secret that enables the receiver for a namespace, and its key holding the webhook's
// secret (the HMAC key of GitHub, Gitea, Forgejo and Bitbucket, GitLab's token).
const (
	SecretName = "gitops-service-git-webhook"
	SecretKey  = "secret"
)

// PathPrefix is where the receiver answers: PathPrefix + <namespace>.
const PathPrefix = "/hooks/"

// maxPayload bounds a payload. A push's payload lists at most 20 commits on GitHub (and
// fewer elsewhere), well under this; what is larger is refused unread beyond it.
const maxPayload = 2 << 20

// maxLimiters bounds the namespaces, and the sources, whose request rate is remembered.
const maxLimiters = 10000

// Default rate of verified pushes per namespace, and of requests per source address.
const (
	DefaultRate        = 5
	DefaultBurst       = 20
	DefaultSourceRate  = 20
	DefaultSourceBurst = 40
)

// DefaultMaxInFlight bounds the requests the receiver works on at once: with maxPayload,
// it bounds the memory that requests can hold (32 × 2 MiB), whoever sends them.
const DefaultMaxInFlight = 32

// notAccepted is the one answer to a request that no webhook of the address accepts: no
// such namespace, no Secret, no key in it, no signature or a wrong one. One answer for all,
// so that nobody learns from it which namespaces have webhooks.
const notAccepted = "no webhook at this address accepts this request: check the address and that the payload is signed with the namespace's webhook secret"

var requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gitops_git_webhook_requests_total",
	Help: "Git webhook requests by Git host (\"unknown\" before it is recognised) and HTTP status code.",
}, []string{"provider", "code"})

func init() { ctrlmetrics.Registry.MustRegister(requests) }

// Receiver answers Git hosts' webhooks: it verifies a push with the namespace's secret and
// sets the refresh annotation of the namespace's GitOpsDeployments that deploy the pushed
// branch.
type Receiver struct {
	// Client reads GitOpsDeployments (from the manager's cache) and the namespace's Secret
	// (from the API server: the manager caches no Secret's contents), and patches
	// GitOpsDeployments.
	Client client.Client
	// Cache, when set, is the manager's cache: the Secret is read only once its metadata
	// is there, so that requests naming namespaces without one cost the API server nothing.
	Cache client.Reader
	// Rate and Burst limit each namespace's verified pushes, so that a tenant's pushes
	// never slow another's; requests that are not verified never count against a namespace.
	Rate  rate.Limit
	Burst int
	// SourceRate and SourceBurst limit the requests of each source address, verified or not.
	SourceRate  rate.Limit
	SourceBurst int
	// MaxInFlight bounds the requests worked on at once (default DefaultMaxInFlight), an
	// eighth of them from one source address; one more is answered 503 at once, unread.
	MaxInFlight int
	// NoSourceLimits turns off the limits per source address (the rate, and the share of
	// the requests in flight): behind a proxy every request comes from its address.
	NoSourceLimits bool

	// mu guards the requests in flight, in all and by source address.
	mu          sync.Mutex
	inFlight    int
	fromSource  map[string]int
	byNamespace limiters
	bySource    limiters
}

// Result is the receiver's answer to a push.
type Result struct {
	Message string `json:"message"`
	// Refreshed names the GitOpsDeployments refreshed.
	Refreshed []string `json:"refreshed,omitempty"`
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	provider := "unknown"
	var (
		code   int
		result Result
	)
	if release, ok := r.admit(sourceOf(req)); ok {
		code, result = r.serve(req, &provider)
		release()
	} else {
		code, result = http.StatusServiceUnavailable, Result{Message: "the receiver is busy; the Git host retries"}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
	}
	requests.WithLabelValues(provider, fmt.Sprint(code)).Inc()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(result)
}

func (r *Receiver) serve(req *http.Request, provider *string) (int, Result) {
	if req.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, Result{Message: "webhooks are POST requests"}
	}
	namespace, ok := strings.CutPrefix(req.URL.Path, PathPrefix)
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 {
		return http.StatusNotFound, Result{Message: "the webhook address is " + PathPrefix + "<namespace>"}
	}
	if !r.NoSourceLimits && !r.bySource.get(sourceOf(req), r.SourceRate, r.SourceBurst, DefaultSourceRate, DefaultSourceBurst).Allow() {
		return http.StatusTooManyRequests, Result{Message: "too many webhook requests from this address; retry later"}
	}
	// The Secret first: a request for a namespace without one is answered before its
	// payload is read.
	ctx := req.Context()
	secret := &corev1.Secret{}
	if err := r.getSecret(ctx, client.ObjectKey{Namespace: namespace, Name: SecretName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return http.StatusUnauthorized, Result{Message: notAccepted}
		}
		ctrl.LoggerFrom(ctx).Error(err, "Reading the Git webhook Secret", "namespace", namespace)
		return http.StatusServiceUnavailable, Result{Message: "the receiver could not read the namespace's webhook Secret; the Git host retries"}
	}
	key := secret.Data[SecretKey]
	if len(key) == 0 {
		return http.StatusUnauthorized, Result{Message: notAccepted}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, maxPayload))
	if err != nil {
		return http.StatusRequestEntityTooLarge, Result{Message: fmt.Sprintf("the payload is larger than %d bytes or could not be read", maxPayload)}
	}
	push, err := Parse(req.Header, body, key)
	switch {
	case errors.Is(err, ErrUnsigned), errors.Is(err, ErrBadSignature), errors.Is(err, ErrUnknownEvent):
		ctrl.LoggerFrom(ctx).V(1).Info("Refused an unverified Git webhook request", "namespace", namespace, "reason", err.Error())
		return http.StatusUnauthorized, Result{Message: notAccepted}
	}
	if push.Provider != "" {
		*provider = push.Provider
	}
	// Verified: only now does the request count against the namespace.
	if !r.byNamespace.get(namespace, r.Rate, r.Burst, DefaultRate, DefaultBurst).Allow() {
		return http.StatusTooManyRequests, Result{Message: fmt.Sprintf("too many webhook requests for namespace %s; retry later", namespace)}
	}
	switch {
	case errors.Is(err, errIgnored):
		return http.StatusOK, Result{Message: "not a push to a branch: nothing to refresh"}
	case err != nil:
		return http.StatusBadRequest, Result{Message: err.Error()}
	}
	refreshed, err := r.refresh(req, namespace, push)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Refreshing GitOpsDeployments for a push", "namespace", namespace, "provider", push.Provider)
		return http.StatusServiceUnavailable, Result{Message: "the receiver could not refresh every GitOpsDeployment; the Git host retries", Refreshed: refreshed}
	}
	ctrl.LoggerFrom(ctx).Info("Refreshed GitOpsDeployments for a push", "namespace", namespace, "provider", push.Provider,
		"branch", push.Branch, "refreshed", len(refreshed))
	return http.StatusAccepted, Result{Message: fmt.Sprintf("%d GitOpsDeployments refreshed", len(refreshed)), Refreshed: refreshed}
}

// refresh sets the refresh annotation of the namespace's GitOpsDeployments that push
// matches, to the time of the push's arrival.
func (r *Receiver) refresh(req *http.Request, namespace string, push Push) ([]string, error) {
	ctx := req.Context()
	list := &v1.GitOpsDeploymentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	stamp := time.Now().UTC().Format(time.RFC3339Nano)
	var refreshed []string
	var errs []error
	for i := range list.Items {
		depl := &list.Items[i]
		if !depl.DeletionTimestamp.IsZero() || !Matches(depl, push) {
			continue
		}
		patch := client.MergeFrom(depl.DeepCopy())
		if depl.Annotations == nil {
			depl.Annotations = map[string]string{}
		}
		depl.Annotations[v1.RefreshAnnotation] = stamp
		if err := r.Client.Patch(ctx, depl, patch); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
			continue
		}
		refreshed = append(refreshed, depl.Name)
	}
	return refreshed, errors.Join(errs...)
}

// admit takes a place among the requests in flight for a request from source, if one is
// free: one source holds at most an eighth of them, so that a few addresses cannot take
// every place from the Git hosts.
func (r *Receiver) admit(source string) (release func(), ok bool) {
	limit := r.MaxInFlight
	if limit <= 0 {
		limit = DefaultMaxInFlight
	}
	if r.NoSourceLimits {
		source = ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inFlight >= limit || (source != "" && r.fromSource[source] >= max(1, limit/8)) {
		return nil, false
	}
	if r.fromSource == nil {
		r.fromSource = map[string]int{}
	}
	r.inFlight++
	r.fromSource[source]++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.inFlight--
		if r.fromSource[source]--; r.fromSource[source] == 0 {
			delete(r.fromSource, source)
		}
	}, true
}

// sourceOf is the address a request comes from (without its port).
func sourceOf(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

// limiters are rate limiters by key (a namespace, a source address), at most maxLimiters
// of them.
type limiters struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// get returns key's limiter, made with limit and burst (or the defaults when limit is 0).
func (l *limiters) get(key string, limit rate.Limit, burst int, defaultLimit rate.Limit, defaultBurst int) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*rate.Limiter{}
	}
	lim, ok := l.m[key]
	if !ok {
		if len(l.m) >= maxLimiters {
			// Requests naming many keys: start afresh rather than grow without bound.
			l.m = map[string]*rate.Limiter{}
		}
		if limit == 0 {
			limit, burst = defaultLimit, defaultBurst
		}
		lim = rate.NewLimiter(limit, burst)
		l.m[key] = lim
	}
	return lim
}

// getSecret reads the Secret at key, first looking for its metadata in the cache (the
// backend watches the metadata of every Secret) when there is one.
func (r *Receiver) getSecret(ctx context.Context, key client.ObjectKey, secret *corev1.Secret) error {
	if r.Cache != nil {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := r.Cache.Get(ctx, key, m); err != nil {
			return err
		}
	}
	return r.Client.Get(ctx, key, secret)
}
