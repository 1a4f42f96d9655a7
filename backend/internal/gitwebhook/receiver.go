package gitwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// maxPayload bounds a payload (GitHub sends at most 25 MB; pushes are far smaller).
const maxPayload = 5 << 20

// maxLimiters bounds the namespaces whose request rate is remembered.
const maxLimiters = 10000

// Default rate of requests per namespace.
const (
	DefaultRate  = 5
	DefaultBurst = 20
)

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
	// Rate and Burst limit each namespace's requests, so that a flood aimed at one tenant
	// never slows another.
	Rate  rate.Limit
	Burst int

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

// Result is the receiver's answer to a push.
type Result struct {
	Message string `json:"message"`
	// Refreshed names the GitOpsDeployments refreshed.
	Refreshed []string `json:"refreshed,omitempty"`
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	provider := "unknown"
	code, result := r.serve(req, &provider)
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
	if !r.limiter(namespace).Allow() {
		return http.StatusTooManyRequests, Result{Message: fmt.Sprintf("too many webhook requests for namespace %s; retry later", namespace)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, maxPayload))
	if err != nil {
		return http.StatusRequestEntityTooLarge, Result{Message: fmt.Sprintf("the payload is larger than %d bytes or could not be read", maxPayload)}
	}
	ctx := req.Context()
	secret := &corev1.Secret{}
	if err := r.getSecret(ctx, client.ObjectKey{Namespace: namespace, Name: SecretName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return http.StatusNotFound, Result{Message: fmt.Sprintf("Git webhooks are not enabled for namespace %s: it has no Secret %s", namespace, SecretName)}
		}
		ctrl.LoggerFrom(ctx).Error(err, "Reading the Git webhook Secret", "namespace", namespace)
		return http.StatusServiceUnavailable, Result{Message: "the receiver could not read the namespace's webhook Secret; the Git host retries"}
	}
	key := secret.Data[SecretKey]
	if len(key) == 0 {
		return http.StatusNotFound, Result{Message: fmt.Sprintf("Secret %s of namespace %s has no key %q", SecretName, namespace, SecretKey)}
	}
	push, err := Parse(req.Header, body, key)
	if push.Provider != "" {
		*provider = push.Provider
	}
	switch {
	case errors.Is(err, errIgnored):
		return http.StatusOK, Result{Message: "not a push to a branch: nothing to refresh"}
	case errors.Is(err, ErrUnsigned), errors.Is(err, ErrBadSignature):
		return http.StatusUnauthorized, Result{Message: err.Error()}
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

// limiter is the namespace's rate limiter.
func (r *Receiver) limiter(namespace string) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limiters == nil {
		r.limiters = map[string]*rate.Limiter{}
	}
	l, ok := r.limiters[namespace]
	if !ok {
		if len(r.limiters) >= maxLimiters {
			// Requests naming many namespaces: start afresh rather than grow without bound.
			r.limiters = map[string]*rate.Limiter{}
		}
		limit, burst := r.Rate, r.Burst
		if limit == 0 {
			limit, burst = DefaultRate, DefaultBurst
		}
		l = rate.NewLimiter(limit, burst)
		r.limiters[namespace] = l
	}
	return l
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
