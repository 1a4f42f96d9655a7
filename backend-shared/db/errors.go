package db

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors of the repository. Test with errors.Is; errors.As with *ConstraintError
// gives the table and constraint.
var (
	// ErrNotFound: no row matched (for tenant-scoped calls: none of this tenant's rows).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique constraint was violated, or a get-or-create found a row that
	// belongs to someone else.
	ErrConflict = errors.New("conflict")
	// ErrInvalidReference: an insert or update referenced a row that does not exist (or
	// belongs to another tenant).
	ErrInvalidReference = errors.New("invalid reference")
	// ErrReferenced: a delete was refused because other rows still reference the row.
	ErrReferenced = errors.New("still referenced")
	// ErrCheck: a CHECK or NOT NULL constraint was violated (e.g. an unknown enum value).
	ErrCheck = errors.New("constraint violated")
	// ErrInvalid: PostgreSQL rejected a value (e.g. malformed UUID text).
	ErrInvalid = errors.New("invalid value")
)

// ConstraintError is a constraint violation reported by PostgreSQL. Its message names the
// table and constraint but never the row's values (which may be secrets).
type ConstraintError struct {
	// Kind is one of the sentinel errors above; errors.Is(err, Kind) is true.
	Kind       error
	Table      string
	Constraint string
	Column     string
	// Err is the *pgconn.PgError.
	Err error
}

func (e *ConstraintError) Error() string {
	s := fmt.Sprintf("%v: table %q", e.Kind, e.Table)
	if e.Constraint != "" {
		s += fmt.Sprintf(", constraint %q", e.Constraint)
	}
	if e.Column != "" {
		s += fmt.Sprintf(", column %q", e.Column)
	}
	return s
}

// Is makes errors.Is(err, ErrConflict) and friends work.
func (e *ConstraintError) Is(target error) bool { return target == e.Kind }

// Unwrap exposes the driver error.
func (e *ConstraintError) Unwrap() error { return e.Err }

// translate maps driver errors to the package's typed errors; every repository method
// returns its errors through it. A foreign key violation is an ErrInvalidReference here;
// deletes use translateDelete, for which it means ErrReferenced.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var ce *ConstraintError
	if errors.As(err, &ce) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) {
		return err // already translated by a nested call
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	var kind error
	switch {
	case pgErr.Code == "23505", pgErr.Code == "23P01": // unique_violation, exclusion_violation
		kind = ErrConflict
	case pgErr.Code == "23503": // foreign_key_violation
		kind = ErrInvalidReference
	case pgErr.Code == "23514", pgErr.Code == "23502": // check_violation, not_null_violation
		kind = ErrCheck
	case len(pgErr.Code) == 5 && pgErr.Code[:2] == "22": // data_exception
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	default:
		return err
	}
	return &ConstraintError{Kind: kind, Table: pgErr.TableName, Constraint: pgErr.ConstraintName, Column: pgErr.ColumnName, Err: err}
}

// translateDelete is translate for DELETE statements, where a foreign key violation means
// that the row is still referenced (ON DELETE RESTRICT).
func translateDelete(err error) error {
	err = translate(err)
	var ce *ConstraintError
	if errors.As(err, &ce) && errors.Is(ce.Kind, ErrInvalidReference) {
		ce.Kind = ErrReferenced
	}
	return err
}

// notFoundIfNone turns "no row affected" into ErrNotFound.
func notFoundIfNone(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}
