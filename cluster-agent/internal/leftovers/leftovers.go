// Package leftovers removes what deleted Argo CD Applications left behind: when the agent
// had to remove the finalizer of an Application that Argo CD had not finished pruning, it
// recorded the resources Argo CD last listed; once the grace period has passed, this
// leader-elected Runnable deletes, on the destination, those still tracked by that
// Application alone (see orphans.Decide), says so in an Event there, and drops the record.
package leftovers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/bounded"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/orphans"
	"github.com/gitops-service/gitops-service/backend-shared/periodic"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

const (
	// DefaultGracePeriod is how long left-behind resources are left to their owners.
	DefaultGracePeriod = 15 * time.Minute
	// DefaultArgoCDServiceAccount is the ServiceAccount of Argo CD's application
	// controller in the engine namespace, as Argo CD's install names it.
	DefaultArgoCDServiceAccount = "argocd-application-controller"
	// GiveUpAfter is how long past its grace period a record whose destination cannot be
	// reached is retried before it is dropped.
	GiveUpAfter = 24 * time.Hour
	// EventReason is the reason of the Event that lists what was removed.
	EventReason = "LeftoversRemoved"

	batchSize = 20
	// maxListed bounds the resources an Event names.
	maxListed = 10
	// tokenLifetime of the in-cluster destination's token: one run's worth.
	tokenLifetime = 10 * time.Minute
	// destinationTimeout bounds each call to a destination.
	destinationTimeout = 30 * time.Second
	// maxDestinations is how many destinations one run handles at once.
	maxDestinations = 4
)

// Store is the part of the database the remover uses.
type Store interface {
	DueLeftovers(ctx context.Context, idb bun.IDB, engineInstanceID string, now time.Time, limit int) ([]db.Leftovers, error)
	DeleteLeftovers(ctx context.Context, idb bun.IDB, engineInstanceID, applicationName string) error
}

// The token of Argo CD's application controller only (DefaultArgoCDServiceAccount; an
// installation that names another with --argocd-service-account changes resourceNames).
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create,resourceNames=argocd-application-controller
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list

// Remover deletes the recorded leftovers of this engine instance once they are due.
type Remover struct {
	// Client lists Argo CD Applications from the manager's cache and requests tokens.
	Client client.Client
	// APIReader reads cluster Secrets (the agent caches no Secrets).
	APIReader client.Reader
	// Config is the agent's own connection to the cluster Argo CD runs on: the in-cluster
	// destination is reached at its host, with Argo CD's token.
	Config   *rest.Config
	DB       bun.IDB
	Store    Store
	Identity engine.Identity
	// Interval between runs (jittered); zero or less disables the remover.
	Interval time.Duration
	// ArgoCDServiceAccount names the ServiceAccount, in the engine namespace, whose token
	// reaches the in-cluster destination: the identity Argo CD would have pruned with.
	ArgoCDServiceAccount string
	// NewClient connects to a destination (default client.New).
	NewClient func(*rest.Config) (client.Client, error)
	// DestinationTimeout bounds each call to a destination (default destinationTimeout).
	DestinationTimeout time.Duration
}

// Task runs the remover every Interval, on the leader.
func (r *Remover) Task() *periodic.Task {
	return &periodic.Task{Name: "leftovers", Interval: r.Interval, Run: r.Run}
}

// Run handles the due records, a batch at a time; a record that fails stays for the next
// run (until GiveUpAfter) and does not stop the others. Destinations are handled side by
// side (at most maxDestinations at once), those on the service's cluster first, and the
// records of a destination one at a time: a destination that fails, say one that hangs
// until destinationTimeout, is not tried again in the same run. So a tenant's hung cluster
// holds up its own records only.
func (r *Remover) Run(ctx context.Context) error {
	due, err := r.Store.DueLeftovers(ctx, r.DB, r.Identity.InstanceID, time.Now(), batchSize)
	if err != nil || len(due) == 0 {
		return err
	}
	live, err := r.liveApplications(ctx)
	if err != nil {
		return err
	}
	// Within this run: the run returns once every destination is done.
	var g errgroup.Group
	g.SetLimit(maxDestinations)
	for _, group := range byDestination(due) {
		g.Go(func() error { return r.removeAll(ctx, group, live) })
	}
	return g.Wait()
}

// removeAll handles the records of one destination in order, and stops at the first that
// fails to reach it. It returns only errors of the database.
func (r *Remover) removeAll(ctx context.Context, records []db.Leftovers, live *liveApplications) error {
	log := ctrl.LoggerFrom(ctx)
	for i := range records {
		l := &records[i]
		err := r.remove(ctx, l, live)
		if err != nil && time.Since(l.RemoveAfter) < GiveUpAfter {
			log.Error(err, "Removing left-behind resources failed; retrying in a later run, with the destination's other records",
				"application", l.ApplicationName, "destination", l.DestinationName+l.DestinationServer)
			return nil
		}
		if err != nil {
			log.Error(err, "Giving up removing left-behind resources", "application", l.ApplicationName,
				"resources", orphans.List(l.Resources, maxListed))
		}
		if err := r.Store.DeleteLeftovers(ctx, r.DB, l.EngineInstanceID, l.ApplicationName); err != nil {
			return err
		}
	}
	return nil
}

// byDestination groups records by destination, keeping their order within each group:
// the groups on the service's cluster (in-cluster, or a tenant's own entry) come first.
func byDestination(due []db.Leftovers) [][]db.Leftovers {
	index := map[string]int{}
	var groups [][]db.Leftovers
	for _, l := range due {
		key := l.DestinationName + "|" + l.DestinationServer
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], l)
	}
	onServiceCluster := func(g []db.Leftovers) bool {
		return g[0].DestinationName == "" && (g[0].DestinationServer == argocd.InClusterServer || argocd.IsTenantServer(g[0].DestinationServer))
	}
	slices.SortStableFunc(groups, func(a, b []db.Leftovers) int {
		switch {
		case onServiceCluster(a) == onServiceCluster(b):
			return 0
		case onServiceCluster(a):
			return -1
		default:
			return 1
		}
	})
	return groups
}

// remove deletes what of one record may be deleted and reports it in an Event on the
// destination. A destination whose cluster Secret is gone (its environment was deleted)
// has nothing to remove.
func (r *Remover) remove(ctx context.Context, l *db.Leftovers, live *liveApplications) error {
	if live.names[l.ApplicationName] {
		return nil // re-created under the same name: the resources are its again
	}
	cfg, err := r.destination(ctx, l)
	if err == nil {
		// A destination that hangs, or answers without end, holds up no other record.
		cfg = bounded.RESTConfig(cfg, cmp.Or(r.DestinationTimeout, destinationTimeout))
	}
	if apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).Info("Not removing left-behind resources: their destination is gone",
			"application", l.ApplicationName, "destination", l.DestinationName+l.DestinationServer)
		return nil
	}
	if err != nil {
		return err
	}
	newClient := r.NewClient
	if newClient == nil {
		newClient = func(cfg *rest.Config) (client.Client, error) { return client.New(cfg, client.Options{}) }
	}
	c, err := newClient(cfg)
	if err != nil {
		return fmt.Errorf("connecting to the destination of Application %s: %w", l.ApplicationName, err)
	}
	removed, err := orphans.Remove(ctx, c, l.ApplicationName, l.DestinationNamespace, l.CreatedAt, l.Resources, func(res orphans.Resource) bool {
		return live.lists(l.DestinationName, l.DestinationServer, res)
	})
	if len(removed) > 0 {
		ctrl.LoggerFrom(ctx).Info("Removed left-behind resources", "application", l.ApplicationName,
			"resources", orphans.List(removed, maxListed))
		if evErr := c.Create(ctx, removedEvent(l, removed)); evErr != nil {
			ctrl.LoggerFrom(ctx).Error(evErr, "Recording the removal in an Event failed", "namespace", l.DestinationNamespace)
		}
	}
	return err
}

// destination is how the deleted Application's destination is reached: with the
// credentials Argo CD used, so that nothing is removed that Argo CD could not have pruned.
func (r *Remover) destination(ctx context.Context, l *db.Leftovers) (*rest.Config, error) {
	if l.DestinationName == "" && l.DestinationServer == argocd.InClusterServer {
		return r.inCluster(ctx)
	}
	sec, err := r.clusterSecret(ctx, l)
	if apierrors.IsNotFound(err) && l.DestinationName == "" && argocd.IsTenantServer(l.DestinationServer) {
		// The tenant's own cluster entry went with its last Application: what that
		// Application deployed is still tracked as its, in the tenant's namespace.
		return r.inCluster(ctx)
	}
	if err != nil {
		return nil, err
	}
	return argocd.ClusterRESTConfig(sec)
}

// inCluster connects to the cluster Argo CD runs on with a short-lived token of Argo CD's
// application controller.
func (r *Remover) inCluster(ctx context.Context) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: r.Identity.Namespace, Name: r.serviceAccount()}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds())),
	}}
	if err := r.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	cfg := rest.AnonymousClientConfig(r.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

func (r *Remover) serviceAccount() string {
	if r.ArgoCDServiceAccount != "" {
		return r.ArgoCDServiceAccount
	}
	return DefaultArgoCDServiceAccount
}

// clusterSecret finds the cluster Secret of a destination: by name, or by server.
func (r *Remover) clusterSecret(ctx context.Context, l *db.Leftovers) (*corev1.Secret, error) {
	if l.DestinationName != "" {
		sec := &corev1.Secret{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Identity.Namespace, Name: l.DestinationName}, sec)
		return sec, err
	}
	list := &corev1.SecretList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(r.Identity.Namespace),
		client.MatchingLabels{argocd.LabelSecretType: argocd.SecretTypeCluster}); err != nil {
		return nil, fmt.Errorf("listing cluster Secrets: %w", err)
	}
	for i := range list.Items {
		if argocd.SameAPIURL(string(list.Items[i].Data["server"]), l.DestinationServer) {
			return &list.Items[i], nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), "cluster "+l.DestinationServer)
}

// liveApplications are the Argo CD Applications of the engine namespace: their names, and
// what their statuses list, by destination.
type liveApplications struct {
	names     map[string]bool
	resources map[liveResource]bool
}

type liveResource struct {
	destinationName, destinationServer string
	resource                           orphans.Resource
}

func (l *liveApplications) lists(destinationName, destinationServer string, r orphans.Resource) bool {
	r.Version = "" // Argo CD may list another version of the same object
	return l.resources[liveResource{destinationName, destinationServer, r}]
}

func (r *Remover) liveApplications(ctx context.Context) (*liveApplications, error) {
	apps := &argov1alpha1.ApplicationList{}
	if err := r.Client.List(ctx, apps, client.InNamespace(r.Identity.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Argo CD Applications: %w", err)
	}
	live := &liveApplications{names: map[string]bool{}, resources: map[liveResource]bool{}}
	for _, app := range apps.Items {
		live.names[app.Name] = true
		for _, res := range app.Status.Resources {
			key := orphans.Resource{Group: res.Group, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name}
			live.resources[liveResource{app.Spec.Destination.Name, app.Spec.Destination.Server, key}] = true
		}
	}
	return live, nil
}

// removedEvent says, in the destination namespace, what was removed and why.
func removedEvent(l *db.Leftovers, removed []orphans.Resource) *corev1.Event {
	now := metav1.Now()
	ns := l.DestinationNamespace
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gitops-service-leftovers-", Namespace: ns},
		// An Event's namespace must match its object's: the namespace itself is named with it.
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns, Namespace: ns},
		Reason:         EventReason,
		Message: fmt.Sprintf("Removed what Argo CD Application %s left behind when its GitOpsDeployment was deleted: %s "+
			"(annotate a resource %s=true to keep it)", l.ApplicationName, orphans.List(removed, maxListed), orphans.AnnotationKeep),
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "gitops-service-cluster-agent"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
}
