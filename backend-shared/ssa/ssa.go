// Package ssa applies typed objects with server-side apply, as the service's field manager.
//
// Typed Kubernetes structs always serialise some fields the service must not own: a
// `status` (Argo CD's Application and AppProject CRDs have no status subresource, so an
// applied status would be owned by us and clobber Argo CD's) and a null
// `metadata.creationTimestamp`. Apply removes both before sending the object.
package ssa

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
)

// Unstructured converts a typed object (with apiVersion and kind set) into the apply
// configuration Apply sends: without status and without metadata.creationTimestamp.
func Unstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, errors.New("server-side apply needs apiVersion and kind set")
	}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// Apply server-side applies obj as argocd.FieldManager, taking over fields that another
// manager set (the database is the source of truth for what the service manages).
func Apply(ctx context.Context, c client.Client, obj runtime.Object) error {
	u, err := Unstructured(obj)
	if err != nil {
		return err
	}
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(argocd.FieldManager), client.ForceOwnership)
}
