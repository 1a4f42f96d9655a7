package conditions

import (
	"errors"
	"fmt"
)

// UserError is an error the user can fix: its message is shown in a condition as is. Any
// other error is internal: logged, retried with backoff, and shown as a generic message.
type UserError struct {
	Message string
}

func (e *UserError) Error() string { return e.Message }

// Userf returns a UserError with a formatted message.
func Userf(format string, args ...any) error {
	return &UserError{Message: fmt.Sprintf(format, args...)}
}

// UserMessage returns the message of a UserError in err's chain.
func UserMessage(err error) (string, bool) {
	var ue *UserError
	if errors.As(err, &ue) {
		return ue.Message, true
	}
	return "", false
}

// InternalErrorMessage is what users see of an internal error.
const InternalErrorMessage = "An internal error occurred while reconciling this resource; the service retries automatically."
