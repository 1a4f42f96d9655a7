package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
)

// sealedColumns lists every encrypted column with the context it is sealed under.
var sealedColumns = []struct {
	table   string
	columns []string
	context []string
}{
	{"cluster_credentials", []string{"kubeconfig_enc", "bearer_token_enc"}, []string{ctxKubeconfig, ctxBearerToken}},
	{"repository_credentials", []string{"username_enc", "password_enc", "ssh_private_key_enc"},
		[]string{ctxUsername, ctxPassword, ctxSSHPrivateKey}},
}

// RotateKeyBatchSize is how many rows RotateKeys re-encrypts per transaction.
const RotateKeyBatchSize = 100

// RotateKeys re-encrypts every credential column whose value is not sealed with the
// keyring's primary key, and returns how many rows it rewrote. keyring must still hold
// the old keys. Each batch of rows is locked, rewritten and committed on its own (a
// savepoint when idb is a transaction), so a large table is not locked as a whole and an
// interrupted run resumes where it stopped. A value that does not open aborts the run.
func RotateKeys(ctx context.Context, idb bun.IDB, keyring *secretbox.Keyring) (int, error) {
	total := 0
	for _, t := range sealedColumns {
		for {
			n, err := rotateBatch(ctx, idb, keyring, t.table, t.columns, t.context)
			total += n
			if err != nil {
				return total, fmt.Errorf("rotating keys of %s: %w", t.table, err)
			}
			if n == 0 {
				break
			}
		}
	}
	return total, nil
}

func rotateBatch(ctx context.Context, idb bun.IDB, keyring *secretbox.Keyring, table string, columns, contexts []string) (int, error) {
	stale := make([]string, len(columns))
	for i, c := range columns {
		stale[i] = fmt.Sprintf("(%[1]s IS NOT NULL AND split_part(%[1]s, ':', 2) <> ?)", c)
	}
	primaries := make([]any, len(columns))
	for i := range primaries {
		primaries[i] = keyring.PrimaryID()
	}
	query := fmt.Sprintf("SELECT id, %s FROM %s WHERE %s ORDER BY id LIMIT %d FOR UPDATE",
		strings.Join(columns, ", "), table, strings.Join(stale, " OR "), RotateKeyBatchSize)

	rewritten := 0
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		type row struct {
			id     string
			values []sql.NullString
		}
		var batch []row
		rows, err := tx.QueryContext(ctx, query, primaries...)
		if err != nil {
			return translate(err)
		}
		for rows.Next() {
			r := row{values: make([]sql.NullString, len(columns))}
			dest := []any{&r.id}
			for i := range r.values {
				dest = append(dest, &r.values[i])
			}
			if err := rows.Scan(dest...); err != nil {
				_ = rows.Close()
				return err
			}
			batch = append(batch, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range batch {
			set := make([]string, 0, len(columns))
			args := make([]any, 0, len(columns)+1)
			for i, v := range r.values {
				if !v.Valid || !keyring.NeedsRotation(v.String) {
					continue
				}
				plain, err := keyring.Open(v.String, contexts[i])
				if err != nil {
					return fmt.Errorf("row %s, column %s: %w", r.id, columns[i], err)
				}
				sealed, err := keyring.Seal(plain, contexts[i])
				if err != nil {
					return err
				}
				set = append(set, columns[i]+" = ?")
				args = append(args, sealed)
			}
			args = append(args, r.id)
			if _, err := tx.NewRaw(fmt.Sprintf("UPDATE %s SET %s, updated_at = now() WHERE id = ?", table, strings.Join(set, ", ")), args...).
				Exec(ctx); err != nil {
				return translate(err)
			}
			rewritten++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return rewritten, nil
}
