package credsecret

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
)

func TestDecryptionProblemTellsTheUserWhatToFixWithoutTheError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "no keyring", err: fmt.Errorf("reading: %w", db.ErrNoKeyring),
			want: "cannot decrypt the credentials: the cluster-agent runs without --credentials-keys-file"},
		{name: "a key the keyring does not have", err: fmt.Errorf("reading: %w", secretbox.ErrUnknownKey),
			want: "cannot decrypt the credentials: they were encrypted with a key that is not in the cluster-agent's keyring"},
		{name: "the keyring does not open them", err: secretbox.ErrDecrypt,
			want: "cannot decrypt the credentials: the cluster-agent's keyring does not open them"},
		{name: "malformed ciphertext", err: fmt.Errorf("x: %w", secretbox.ErrMalformed),
			want: "cannot decrypt the credentials: the cluster-agent's keyring does not open them"},
		// Anything else is an internal error, retried, not a user's problem.
		{name: "a database error", err: errors.New("connection refused"), want: ""},
		{name: "a missing row", err: db.ErrNotFound, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(decryptionProblem(tt.err)).To(Equal(tt.want))
		})
	}
}

func TestReasonNeverQuotesTheAPIServersMessage(t *testing.T) {
	secrets := schema.GroupResource{Resource: "secrets"}
	leaky := "data.token: Invalid value: \"s3cr3t\""
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "invalid", err: apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "x",
			field.ErrorList{field.Invalid(field.NewPath("data", "token"), "s3cr3t", "bad")}), want: "Invalid"},
		{name: "forbidden", err: apierrors.NewForbidden(secrets, "x", errors.New(leaky)), want: "Forbidden"},
		{name: "wrapped conflict", err: fmt.Errorf("applying: %w", apierrors.NewConflict(secrets, "x", errors.New(leaky))), want: "Conflict"},
		// A transport error carries no object data: it is passed on as it is.
		{name: "transport", err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"),
			want: "dial tcp 127.0.0.1:6443: connect: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := reason(tt.err)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(got).NotTo(ContainSubstring("s3cr3t"))
		})
	}
}

func TestNotFoundCoversMissingRowsAndIDsThatCannotNameOne(t *testing.T) {
	g := NewWithT(t)
	g.Expect(notFound(fmt.Errorf("reading: %w", db.ErrNotFound))).To(BeTrue())
	g.Expect(notFound(fmt.Errorf("reading: %w", db.ErrInvalid))).To(BeTrue(), "an id that is not a UUID names no row")
	g.Expect(notFound(errors.New("timeout"))).To(BeFalse())
}
