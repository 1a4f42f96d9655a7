package orphans

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Remove deletes, through c (a client for the deployment's destination cluster), each
// listed resource that Decide allows, and returns those it deleted. recordedAt is when the
// leftovers were recorded: a resource created after it is not the deleted Application's
// (its namespace was re-created or restored since). trackedByLive says whether a live
// Application lists a resource. The delete carries the resourceVersion that
// was decided on, so a resource changed meanwhile (taken over by another Application,
// opted out) is left alone.
func Remove(ctx context.Context, c client.Client, application, destination string, recordedAt time.Time, resources []Resource,
	trackedByLive func(Resource) bool) ([]Resource, error) {
	var removed []Resource
	for _, r := range resources {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind})
		live := Live{}
		if r.Namespace == destination && r.Namespace != "" {
			err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, obj)
			switch {
			case err == nil:
				// Creation times are whole seconds: one in the second of the record is older.
				live = Live{Exists: true, Annotations: obj.GetAnnotations(), TrackedByLive: trackedByLive(r),
					CreatedAfterRecord: obj.GetCreationTimestamp().After(recordedAt)}
			case !apierrors.IsNotFound(err):
				return removed, fmt.Errorf("reading %s: %w", r, err)
			}
		}
		if Decide(application, destination, r, live) != Delete {
			continue
		}
		rv := obj.GetResourceVersion()
		err := c.Delete(ctx, obj, client.Preconditions{ResourceVersion: &rv})
		switch {
		case err == nil:
			removed = append(removed, r)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone already, or changed since it was read: decided again next time.
		default:
			return removed, fmt.Errorf("deleting %s: %w", r, err)
		}
	}
	return removed, nil
}
