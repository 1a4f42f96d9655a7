package argoapp

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/orphans"
)

func TestIsArgoFinalizerMatchesArgoCDsDomain(t *testing.T) {
	tests := []struct {
		finalizer string
		want      bool
	}{
		// The finalizers Argo CD prunes on: removing them lets the deletion complete.
		{"resources-finalizer.argocd.argoproj.io", true},
		{"resources-finalizer.argocd.argoproj.io/background", true},
		{"resources-finalizer.argocd.argoproj.io/foreground", true},
		{"post-delete-finalizer.argocd.argoproj.io", true},
		{"post-delete-finalizer.argocd.argoproj.io/cleanup", true},
		// Anyone else's finalizer must stay.
		{"kubernetes", false},
		{"example.com/protect", false},
		{"example.com/argocd.argoproj.io", false},
		{"argocd.argoproj.io.example.com/x", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.finalizer, func(t *testing.T) {
			NewWithT(t).Expect(isArgoFinalizer(tt.finalizer)).To(Equal(tt.want))
		})
	}
}

func TestHasArgoFinalizer(t *testing.T) {
	tests := []struct {
		name       string
		finalizers []string
		want       bool
	}{
		{name: "none", want: false},
		{name: "only another controller's", finalizers: []string{"example.com/protect"}, want: false},
		{name: "Argo CD's among others", finalizers: []string{"example.com/protect", "resources-finalizer.argocd.argoproj.io"}, want: true},
		{name: "Argo CD's post-delete finalizer", finalizers: []string{"post-delete-finalizer.argocd.argoproj.io"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Finalizers: tt.finalizers}}
			NewWithT(t).Expect(hasArgoFinalizer(app)).To(Equal(tt.want))
		})
	}
}

func TestListedResourcesAreWhatArgoCDLastListed(t *testing.T) {
	g := NewWithT(t)
	app := &argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{Resources: []argov1alpha1.ResourceStatus{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web",
			Status: argov1alpha1.SyncStatusCodeSynced, Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusHealthy}},
		{Version: "v1", Kind: "Namespace", Name: "team-a"},
	}}}
	// Only the identity of each resource is kept: sync and health do not matter to what is left.
	g.Expect(listedResources(app)).To(Equal([]orphans.Resource{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"},
		{Version: "v1", Kind: "Namespace", Name: "team-a"},
	}))
	g.Expect(listedResources(&argov1alpha1.Application{})).To(BeEmpty())
}

func TestPollDefaultsToTwoSeconds(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		want     time.Duration
	}{
		{name: "unset", interval: 0, want: DefaultPollInterval},
		{name: "negative", interval: -time.Second, want: DefaultPollInterval},
		{name: "set", interval: 300 * time.Millisecond, want: 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect((&Applications{PollInterval: tt.interval}).poll()).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(DefaultPollInterval).To(Equal(2 * time.Second))
}

func TestAPIMessageIsTheServersMessageWithoutTheClientsWrapping(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "Application"}, "gitopsdepl-x",
		field.ErrorList{field.Required(field.NewPath("spec", "destination"), "")})
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "an API status", err: apierrors.NewBadRequest("spec.source.repoURL: Required value"),
			want: "spec.source.repoURL: Required value"},
		// Wrapped by the caller: the API server's message is what users are shown.
		{name: "a wrapped API status", err: fmt.Errorf("applying: %w", invalid),
			want: invalid.ErrStatus.Message},
		{name: "not an API error", err: errors.New("connection refused"), want: "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(apiMessage(tt.err)).To(Equal(tt.want))
		})
	}
}

func TestNotFoundCoversMissingRowsAndIdsThatCannotNameOne(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "no row", err: fmt.Errorf("application x: %w", db.ErrNotFound), want: true},
		// A GitOpsDeployment UID that is not a UUID can never have a row: delete what carries it.
		{name: "not a uuid", err: fmt.Errorf("application x: %w", db.ErrInvalid), want: true},
		{name: "the database is down", err: errors.New("connection refused"), want: false},
		{name: "a conflict", err: db.ErrConflict, want: false},
		{name: "no error", err: nil, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(notFound(tt.err)).To(Equal(tt.want))
		})
	}
}

func TestOnServiceClusterFindsDestinationsOnTheServicesCluster(t *testing.T) {
	const remoteService = "https://service.example.com:6443"
	tests := []struct {
		name          string
		dest          argov1alpha1.ApplicationDestination
		serviceServer string
		want          argocd.ProjectDestination
		ok            bool
	}{
		// As a row says it.
		{name: "in-cluster server", dest: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"},
			serviceServer: argocd.InClusterServer, want: argocd.ProjectDestination{Namespace: "team-a"}, ok: true},
		{name: "in-cluster by name", dest: argov1alpha1.ApplicationDestination{Name: "in-cluster", Namespace: "team-a"},
			serviceServer: argocd.InClusterServer, want: argocd.ProjectDestination{Namespace: "team-a"}, ok: true},
		// As an Application of an engine instance on another cluster says it.
		{name: "the service cluster's server", dest: argov1alpha1.ApplicationDestination{Server: remoteService, Namespace: "team-a"},
			serviceServer: remoteService, want: argocd.ProjectDestination{Namespace: "team-a"}, ok: true},
		// A row's in-cluster destination is on the service's cluster wherever Argo CD runs.
		{name: "in-cluster row on a remote instance", dest: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"},
			serviceServer: remoteService, want: argocd.ProjectDestination{Namespace: "team-a"}, ok: true},
		// A name and a server: the name does not count when a server is given.
		{name: "a server other than in-cluster with the in-cluster name", dest: argov1alpha1.ApplicationDestination{Server: "https://other:6443", Name: "in-cluster", Namespace: "team-a"},
			serviceServer: argocd.InClusterServer, ok: false},
		{name: "a managed environment", dest: argov1alpha1.ApplicationDestination{Name: "managed-env-1234", Namespace: "team-a"},
			serviceServer: argocd.InClusterServer, ok: false},
		{name: "another cluster's server", dest: argov1alpha1.ApplicationDestination{Server: "https://other:6443", Namespace: "team-a"},
			serviceServer: argocd.InClusterServer, ok: false},
		// The tenant's own cluster entry; another tenant's is not the service's cluster here.
		{name: "the tenant's own server", dest: argov1alpha1.ApplicationDestination{Server: argocd.TenantServer(remoteService, "t1"), Namespace: "team-a"},
			serviceServer: argocd.InClusterServer, want: argocd.ProjectDestination{Namespace: "team-a"}, ok: true},
		{name: "another tenant's server", dest: argov1alpha1.ApplicationDestination{Server: argocd.TenantServer(remoteService, "t2"), Namespace: "team-a"},
			serviceServer: argocd.InClusterServer, ok: false},
		// No namespace: nothing to allow in the project.
		{name: "in-cluster without a namespace", dest: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer},
			serviceServer: argocd.InClusterServer, want: argocd.ProjectDestination{}, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := onServiceCluster(tt.dest, tt.serviceServer, argocd.TenantServer(remoteService, "t1"))
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestUpToDateComparesWhatTheServiceWrites(t *testing.T) {
	want := func() *argov1alpha1.AppProject {
		return &argov1alpha1.AppProject{
			ObjectMeta: metav1.ObjectMeta{
				Labels:      map[string]string{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelTenantID: "t1"},
				Annotations: map[string]string{argocd.AnnotationDataHash: "h1"},
			},
			Spec: argov1alpha1.AppProjectSpec{
				SourceRepos:  []string{"https://example.com/repo.git"},
				Destinations: []argov1alpha1.ApplicationDestination{{Server: argocd.InClusterServer, Namespace: "team-a"}},
			},
		}
	}
	tests := []struct {
		name   string
		mutate func(have *argov1alpha1.AppProject)
		want   bool
	}{
		{name: "identical", mutate: func(*argov1alpha1.AppProject) {}, want: true},
		// Labels and annotations of others are kept, and do not make it out of date.
		{name: "extra labels and annotations", mutate: func(h *argov1alpha1.AppProject) {
			h.Labels["team"] = "x"
			h.Annotations["note"] = "y"
		}, want: true},
		// The server's defaulting of empty lists must not cost a write each time.
		{name: "an empty list where want has nil", mutate: func(h *argov1alpha1.AppProject) {
			h.Spec.ClusterResourceWhitelist = []metav1.GroupKind{}
		}, want: true},
		{name: "a label changed", mutate: func(h *argov1alpha1.AppProject) { h.Labels[argocd.LabelTenantID] = "t2" }, want: false},
		{name: "a label missing", mutate: func(h *argov1alpha1.AppProject) { delete(h.Labels, argocd.LabelManagedBy) }, want: false},
		{name: "the hash annotation changed", mutate: func(h *argov1alpha1.AppProject) { h.Annotations[argocd.AnnotationDataHash] = "h0" }, want: false},
		{name: "no annotations", mutate: func(h *argov1alpha1.AppProject) { h.Annotations = nil }, want: false},
		// Fields added by hand (a "*" in sourceRepos) must go.
		{name: "a repository added by hand", mutate: func(h *argov1alpha1.AppProject) {
			h.Spec.SourceRepos = append(h.Spec.SourceRepos, "*")
		}, want: false},
		{name: "a destination removed", mutate: func(h *argov1alpha1.AppProject) { h.Spec.Destinations = nil }, want: false},
		{name: "cluster resources allowed by hand", mutate: func(h *argov1alpha1.AppProject) {
			h.Spec.ClusterResourceWhitelist = []metav1.GroupKind{{Group: "*", Kind: "*"}}
		}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have := want()
			tt.mutate(have)
			NewWithT(t).Expect(upToDate(have, want())).To(Equal(tt.want))
		})
	}
}
