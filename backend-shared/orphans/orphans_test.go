package orphans

import "testing"

func TestDecide(t *testing.T) {
	cm := Resource{Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}
	ours := map[string]string{AnnotationTrackingID: "gitopsdepl-1:/ConfigMap:team-a/settings"}
	tests := []struct {
		name        string
		resource    Resource
		live        Live
		destination string
		want        Verdict
	}{
		{"left behind and still tracked by the deleted application", cm, Live{Exists: true, Annotations: ours}, "team-a", Delete},
		{"already gone", cm, Live{}, "team-a", Gone},
		{"opted out", cm, Live{Exists: true, Annotations: map[string]string{
			AnnotationTrackingID: ours[AnnotationTrackingID], AnnotationKeep: "true"}}, "team-a", KeepOptedOut},
		{"opt-out needs the value true", cm, Live{Exists: true, Annotations: map[string]string{
			AnnotationTrackingID: ours[AnnotationTrackingID], AnnotationKeep: "no"}}, "team-a", Delete},
		{"kept by Argo CD's own Delete=false", cm, Live{Exists: true, Annotations: map[string]string{
			AnnotationTrackingID: ours[AnnotationTrackingID], AnnotationSyncOptions: "Prune=false, Delete=false"}}, "team-a", KeepOptedOut},
		{"other Argo CD sync options", cm, Live{Exists: true, Annotations: map[string]string{
			AnnotationTrackingID: ours[AnnotationTrackingID], AnnotationSyncOptions: "Prune=false"}}, "team-a", Delete},
		{"listed by a live application", cm, Live{Exists: true, Annotations: ours, TrackedByLive: true}, "team-a", KeepTrackedByLive},
		{"tracked by another application", cm, Live{Exists: true, Annotations: map[string]string{
			AnnotationTrackingID: "gitopsdepl-2:/ConfigMap:team-a/settings"}}, "team-a", KeepNotTracked},
		{"not tracked at all", cm, Live{Exists: true}, "team-a", KeepNotTracked},
		{"created since the record: its namespace was re-created or restored", cm,
			Live{Exists: true, Annotations: ours, CreatedAfterRecord: true}, "team-a", KeepCreatedSince},
		{"outside the destination", cm, Live{Exists: true, Annotations: ours}, "team-b", KeepOutsideDestination},
		{"cluster-scoped", Resource{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "x"},
			Live{Exists: true, Annotations: map[string]string{
				AnnotationTrackingID: "gitopsdepl-1:rbac.authorization.k8s.io/ClusterRole:/x"}}, "team-a", KeepOutsideDestination},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide("gitopsdepl-1", tt.destination, tt.resource, tt.live); got != tt.want {
				t.Fatalf("Decide = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTrackingID(t *testing.T) {
	got := TrackingID("gitopsdepl-1", Resource{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "web"})
	if want := "gitopsdepl-1:apps/Deployment:team-a/web"; got != want {
		t.Fatalf("TrackingID = %q, want %q", got, want)
	}
}

func TestList(t *testing.T) {
	cm := Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}
	role := Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "reader"}
	tests := []struct {
		resources []Resource
		limit     int
		want      string
	}{
		{nil, 2, ""},
		{[]Resource{cm, role}, 2, "ConfigMap team-a/settings, ClusterRole reader"},
		{[]Resource{cm, role, cm}, 2, "ConfigMap team-a/settings, ClusterRole reader (and 1 more)"},
	}
	for _, tt := range tests {
		if got := List(tt.resources, tt.limit); got != tt.want {
			t.Errorf("List(%v, %d) = %q, want %q", tt.resources, tt.limit, got, tt.want)
		}
	}
}
