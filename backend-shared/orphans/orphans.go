// Package orphans decides which resources a deleted Argo CD Application left behind may be
// removed by the service. The decision is pure; callers read the live objects and delete.
package orphans

import "fmt"

const (
	// AnnotationKeep on a left-behind resource, with the value "true", keeps it: the
	// service never removes it.
	AnnotationKeep = "managed-gitops.redhat.com/keep-orphaned"

	// AnnotationTrackingID is where Argo CD records which Application owns a resource
	// (the service's Argo CD uses application.resourceTrackingMethod: annotation).
	AnnotationTrackingID = "argocd.argoproj.io/tracking-id"
)

// Resource names one resource as an Application's status lists it.
type Resource struct {
	Group, Version, Kind, Namespace, Name string
}

func (r Resource) String() string {
	if r.Group == "" {
		return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
	}
	return fmt.Sprintf("%s.%s %s/%s", r.Kind, r.Group, r.Namespace, r.Name)
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
	// KeepOptedOut: the resource carries AnnotationKeep.
	KeepOptedOut Verdict = "KeepOptedOut"
	// KeepOutsideDestination: the resource is not in the deployment's destination
	// namespace (or is cluster-scoped).
	KeepOutsideDestination Verdict = "KeepOutsideDestination"
	// KeepNotTracked: the resource's tracking id is not the deleted Application's: another
	// Application deployed it since, or something else made it.
	KeepNotTracked Verdict = "KeepNotTracked"
)

// Live is what the caller read of a listed resource: whether it exists, and its annotations.
type Live struct {
	Exists      bool
	Annotations map[string]string
}

// Decide says what to do with a resource the deleted application's status listed, given
// the deployment's destination namespace and what is live now. Only a resource in the
// destination namespace that still carries the deleted Application's own tracking id, and
// has not opted out, is deleted.
func Decide(application, destination string, r Resource, live Live) Verdict {
	switch {
	case r.Namespace == "" || r.Namespace != destination:
		return KeepOutsideDestination
	case !live.Exists:
		return Gone
	case live.Annotations[AnnotationTrackingID] != TrackingID(application, r):
		return KeepNotTracked
	case live.Annotations[AnnotationKeep] == "true":
		return KeepOptedOut
	}
	return Delete
}
