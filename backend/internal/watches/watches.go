// Package watches maps a change of one object to the reconcile requests of the objects that
// name it, through the manager cache's field indexes.
package watches

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ByIndex enqueues the objects (of newList's item type, in the changed object's namespace)
// whose field index `index` holds the changed object's name: e.g. the SyncRuns naming a
// GitOpsDeployment, or the ManagedEnvironments using a Secret.
func ByIndex(c client.Reader, newList func() client.ObjectList, index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
			return nil
		}
		return Requests(list, nil)
	}
}

// Requests are the reconcile requests of the items of list that pass filter (nil: all).
func Requests(list client.ObjectList, filter func(metav1.Object) bool) []reconcile.Request {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(objs))
	for _, o := range objs {
		m, ok := o.(metav1.Object)
		if !ok || (filter != nil && !filter(m)) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}})
	}
	return reqs
}
