// Package orphans decides which resources a deleted Argo CD Application left behind may be
// removed by the service. The decision is pure; callers read the live objects and delete.
package orphans

import (
	"fmt"
	"strings"
)

const (
	// AnnotationKeep on a left-behind resource, with the value "true", keeps it: the
	// service never removes it.
	AnnotationKeep = "managed-gitops.redhat.com/keep-orphaned"

	// AnnotationTrackingID is where Argo CD records which Application owns a resource
	// (the service's Argo CD uses application.resourceTrackingMethod: annotation).
	AnnotationTrackingID = "argocd.argoproj.io/tracking-id"

	// AnnotationSyncOptions holds Argo CD's per-resource sync options; with Delete=false
	// Argo CD itself keeps the resource when its Application is deleted, and so does the
	// service.
	AnnotationSyncOptions = "argocd.argoproj.io/sync-options"
)

// Resource names one resource as an Application's status lists it.
type Resource struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is "Kind namespace/name", or "Kind name" for a cluster-scoped resource.
func (r Resource) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// List names the first limit resources and says how many more there are.
func List(resources []Resource, limit int) string {
	names := make([]string, 0, min(len(resources), limit))
	for _, r := range resources[:min(len(resources), limit)] {
		names = append(names, r.String())
	}
	if len(resources) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s (and %d more)", strings.Join(names, ", "), len(resources)-limit)
}

// TrackingID is the value Argo CD's annotation tracking writes on a resource an
// Application in Argo CD's own namespace deploys.
func TrackingID(application string, r Resource) string {
	return fmt.Sprintf("%s:%s/%s:%s/%s", application, r.Group, r.Kind, r.Namespace, r.Name)
}

// Verdict is what to do with one left-behind resource.
type Verdict string

const (
	Delete Verdict = "Delete"
	// Gone: the resource no longer exists.
	Gone Verdict = "Gone"
	// KeepOptedOut: the resource carries AnnotationKeep, or Argo CD's Delete=false.
	KeepOptedOut Verdict = "KeepOptedOut"
	// KeepTrackedByLive: a live Application lists the resource.
	KeepTrackedByLive Verdict = "KeepTrackedByLive"
	// KeepOutsideDestination: the resource is not in the deployment's destination
	// namespace (or is cluster-scoped).
	KeepOutsideDestination Verdict = "KeepOutsideDestination"
	// KeepNotTracked: the resource's tracking id is not the deleted Application's: another
	// Application deployed it since, or something else made it.
	KeepNotTracked Verdict = "KeepNotTracked"
	// KeepCreatedSince: the resource was created after the leftovers were recorded, so the
	// deleted Application never deployed it, whatever its tracking id says: its namespace
	// was re-created or restored from a backup since.
	KeepCreatedSince Verdict = "KeepCreatedSince"
)

// Live is what the caller read of a listed resource: whether it exists, its annotations,
// whether a live Application lists it in its status, and whether it was created after the
// leftovers were recorded.
type Live struct {
	Exists             bool
	Annotations        map[string]string
	TrackedByLive      bool
	CreatedAfterRecord bool
}

// Decide says what to do with a resource the deleted application's status listed, given
// the deployment's destination namespace and what is live now. Only a resource in the
// destination namespace that existed when the leftovers were recorded, that still carries
// the deleted Application's own tracking id, that no live Application lists, and that has
// not opted out, is deleted.
func Decide(application, destination string, r Resource, live Live) Verdict {
	switch {
	case r.Namespace == "" || r.Namespace != destination:
		return KeepOutsideDestination
	case !live.Exists:
		return Gone
	case live.CreatedAfterRecord:
		return KeepCreatedSince
	case live.Annotations[AnnotationTrackingID] != TrackingID(application, r):
		return KeepNotTracked
	case live.TrackedByLive:
		return KeepTrackedByLive
	case live.Annotations[AnnotationKeep] == "true", argoKeeps(live.Annotations[AnnotationSyncOptions]):
		return KeepOptedOut
	}
	return Delete
}

// argoKeeps reports whether Argo CD's sync options of a resource include Delete=false.
func argoKeeps(options string) bool {
	for _, o := range strings.Split(options, ",") {
		if strings.TrimSpace(o) == "Delete=false" {
			return true
		}
	}
	return false
}
