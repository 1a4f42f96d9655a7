package testenv

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StrictApply server-side applies obj as owner, forcing ownership, with strict field
// validation: the API server refuses a field its schema does not have instead of dropping
// it. controller-runtime's typed Apply offers no field validation, so this sends the apply
// patch itself.
func StrictApply(ctx context.Context, c client.Client, obj *unstructured.Unstructured, owner string, opts ...client.PatchOption) error {
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	opts = append([]client.PatchOption{client.FieldOwner(owner), client.ForceOwnership, client.FieldValidation("Strict")}, opts...)
	return c.Patch(ctx, obj.DeepCopy(), client.RawPatch(types.ApplyPatchType, data), opts...)
}
