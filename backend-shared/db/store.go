package db

import (
	"errors"

	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
)

// Store is the repository: one value per process, built in main and passed to the
// controllers, which declare the few methods they use as an interface of their own.
// It holds the keyring that encrypts credential columns; it has no other state, and every
// method runs on the bun.IDB it is given (the pool, or a transaction).
type Store struct {
	keyring *secretbox.Keyring
}

// NewStore returns a Store. keyring may be nil in a process that never touches credentials;
// credential methods then fail with ErrNoKeyring.
func NewStore(keyring *secretbox.Keyring) *Store {
	return &Store{keyring: keyring}
}

// ErrNoKeyring is returned by credential methods of a Store built without a keyring.
var ErrNoKeyring = errors.New("db: no encryption keyring configured")

// Secret is a credential in plaintext, in memory only. It prints and marshals as
// "[redacted]" so that it cannot leak into logs, events or status by accident; use
// string(s) where the value is really needed (e.g. building a Kubernetes Secret).
type Secret string

const redacted = "[redacted]"

// String implements fmt.Stringer.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer (%#v).
func (s Secret) GoString() string { return s.String() }

// MarshalJSON keeps secrets out of JSON logs.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// seal encrypts a secret for column context; an empty secret is stored as NULL.
func (s *Store) seal(v Secret, context string) (string, error) {
	if v == "" {
		return "", nil
	}
	if s.keyring == nil {
		return "", ErrNoKeyring
	}
	return s.keyring.Seal([]byte(v), context)
}

// open decrypts a column value sealed with seal.
func (s *Store) open(v, context string) (Secret, error) {
	if v == "" {
		return "", nil
	}
	if s.keyring == nil {
		return "", ErrNoKeyring
	}
	plain, err := s.keyring.Open(v, context)
	if err != nil {
		return "", err
	}
	return Secret(plain), nil
}
