package credsecret

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// reason describes an error about a Secret without its API message, which could quote the
// Secret's data: the status reason (e.g. Forbidden, Invalid) of an API error, else the
// error itself (a transport error).
func reason(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return string(apierrors.ReasonForError(err))
	}
	return err.Error()
}
