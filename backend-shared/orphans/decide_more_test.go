package orphans

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestDecideOrder(t *testing.T) {
	// Each case fails two checks at once: the first in Decide's order names the verdict, so
	// the message the user reads is about the most basic reason.
	const app = "gitopsdepl-1"
	cm := Resource{Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}
	ours := TrackingID(app, cm)
	tests := []struct {
		name        string
		destination string
		live        Live
		want        Verdict
	}{
		{"outside the destination beats gone", "team-b", Live{}, KeepOutsideDestination},
		{"outside the destination beats opted out", "team-b",
			Live{Exists: true, Annotations: map[string]string{AnnotationTrackingID: ours, AnnotationKeep: "true"}}, KeepOutsideDestination},
		{"gone beats everything the object would say", "team-a", Live{TrackedByLive: true}, Gone},
		{"not tracked beats listed by a live application", "team-a",
			Live{Exists: true, Annotations: map[string]string{AnnotationTrackingID: "other"}, TrackedByLive: true}, KeepNotTracked},
		{"not tracked beats opted out", "team-a",
			Live{Exists: true, Annotations: map[string]string{AnnotationKeep: "true"}}, KeepNotTracked},
		{"listed by a live application beats opted out", "team-a",
			Live{Exists: true, Annotations: map[string]string{AnnotationTrackingID: ours, AnnotationKeep: "true"}, TrackedByLive: true}, KeepTrackedByLive},
		// An empty destination is never a namespace a resource is in.
		{"no destination", "", Live{Exists: true, Annotations: map[string]string{AnnotationTrackingID: ours}}, KeepOutsideDestination},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(app, tt.destination, cm, tt.live); got != tt.want {
				t.Errorf("Decide = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDecideComparesTheWholeTrackingID(t *testing.T) {
	// Argo CD writes <app>:<group>/<kind>:<namespace>/<name>; a resource of the same name
	// and another kind or group is another resource.
	const app = "gitopsdepl-1"
	deploy := Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}
	tests := []struct {
		name       string
		trackingID string
		want       Verdict
	}{
		{"exactly ours", "gitopsdepl-1:apps/Deployment:team-a/web", Delete},
		{"another group", "gitopsdepl-1:extensions/Deployment:team-a/web", KeepNotTracked},
		{"another kind", "gitopsdepl-1:apps/StatefulSet:team-a/web", KeepNotTracked},
		{"another namespace", "gitopsdepl-1:apps/Deployment:team-b/web", KeepNotTracked},
		{"an application whose name starts like ours", "gitopsdepl-10:apps/Deployment:team-a/web", KeepNotTracked},
		{"a prefix of ours", "gitopsdepl-1:apps/Deployment:team-a/we", KeepNotTracked},
		{"empty", "", KeepNotTracked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := Live{Exists: true, Annotations: map[string]string{AnnotationTrackingID: tt.trackingID}}
			if got := Decide(app, "team-a", deploy, live); got != tt.want {
				t.Errorf("Decide = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestArgoKeeps(t *testing.T) {
	tests := []struct {
		options string
		want    bool
	}{
		{"", false},
		{"Delete=false", true},
		{"Prune=false,Delete=false", true},
		{" Delete=false , Prune=false", true},
		{"Delete=true", false},
		{"Prune=false", false},
		// Argo CD's option names are case-sensitive, and a value must match exactly.
		{"delete=false", false},
		{"Delete=False", false},
		{"Delete=false;Prune=false", false},
	}
	for _, tt := range tests {
		if got := argoKeeps(tt.options); got != tt.want {
			t.Errorf("argoKeeps(%q) = %v, want %v", tt.options, got, tt.want)
		}
	}
}

func TestResourceStringAndList(t *testing.T) {
	cm := Resource{Kind: "ConfigMap", Namespace: "team-a", Name: "a"}
	role := Resource{Kind: "ClusterRole", Name: "r"}
	if got := cm.String(); got != "ConfigMap team-a/a" {
		t.Errorf("String = %q", got)
	}
	if got := role.String(); got != "ClusterRole r" {
		t.Errorf("String = %q", got)
	}
	tests := []struct {
		name      string
		resources []Resource
		limit     int
		want      string
	}{
		{"exactly the limit", []Resource{cm, role}, 2, "ConfigMap team-a/a, ClusterRole r"},
		{"under the limit", []Resource{cm}, 5, "ConfigMap team-a/a"},
		{"many more", []Resource{cm, role, cm, role, cm}, 1, "ConfigMap team-a/a (and 4 more)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := List(tt.resources, tt.limit); got != tt.want {
				t.Errorf("List = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTrackingIDOfAClusterScopedResource(t *testing.T) {
	got := TrackingID("gitopsdepl-1", Resource{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reader"})
	if want := "gitopsdepl-1:rbac.authorization.k8s.io/ClusterRole:/reader"; got != want {
		t.Errorf("TrackingID = %q, want %q", got, want)
	}
	// The core group is empty: the id starts its group/kind part with the slash.
	got = TrackingID("a", Resource{Version: "v1", Kind: "Secret", Namespace: "n", Name: "s"})
	if want := "a:/Secret:n/s"; got != want {
		t.Errorf("TrackingID = %q, want %q", got, want)
	}
}

func TestRemoveStopsAtAResourceItCannotRead(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	ns := cp.NewNamespace(t, "tenant-")
	const app = "gitopsdepl-deleted"
	first := Resource{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "first"}
	g.Expect(cp.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first",
		Annotations: map[string]string{AnnotationTrackingID: TrackingID(app, first)}}})).To(Succeed())
	// A kind the destination cluster does not serve (its CRD was removed): reading it fails.
	unknown := Resource{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: ns, Name: "w"}
	last := Resource{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "last"}
	g.Expect(cp.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "last",
		Annotations: map[string]string{AnnotationTrackingID: TrackingID(app, last)}}})).To(Succeed())

	removed, err := Remove(ctx, cp.Client, app, ns, time.Now().Add(time.Minute), []Resource{first, unknown, last}, func(Resource) bool { return false })
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(HavePrefix("reading Widget " + ns + "/w"))
	// What was deleted before the failure is reported; nothing after it is touched.
	g.Expect(removed).To(Equal([]Resource{first}))
	g.Expect(cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "last"}, &corev1.ConfigMap{})).To(Succeed())
}

func TestRemoveDoesNotReadOutsideTheDestination(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	ns := cp.NewNamespace(t, "tenant-")
	// An unreadable kind outside the destination is decided without a read, so it cannot fail.
	elsewhere := Resource{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "kube-system", Name: "w"}
	clusterScoped := Resource{Group: "example.com", Version: "v1", Kind: "ClusterWidget", Name: "w"}
	removed, err := Remove(ctx, cp.Client, "gitopsdepl-x", ns, time.Now().Add(time.Minute), []Resource{elsewhere, clusterScoped}, func(Resource) bool {
		t.Error("asked whether a live application tracks a resource outside the destination")
		return false
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeEmpty())
}
