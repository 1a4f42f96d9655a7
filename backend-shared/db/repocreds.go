package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// RepositoryCredential is a tenant's Git credential (GitOpsDeploymentRepositoryCredential)
// in plaintext, in memory only; its Argo CD Secret is repo-cred-<ID>.
type RepositoryCredential struct {
	ID               string
	TenantID         string
	EngineInstanceID string
	RepositoryURL    string
	Username         Secret
	Password         Secret
	SSHPrivateKey    Secret
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// repositoryCredentialRow is the stored form; unexported so nothing writes it unencrypted.
type repositoryCredentialRow struct {
	bun.BaseModel `bun:"table:repository_credentials,alias:rcred"`

	ID               string    `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	TenantID         string    `bun:"tenant_id,notnull,type:uuid"`
	EngineInstanceID string    `bun:"engine_instance_id,notnull,type:uuid"`
	RepositoryURL    string    `bun:"repository_url,notnull"`
	UsernameEnc      string    `bun:"username_enc,nullzero"`
	PasswordEnc      string    `bun:"password_enc,nullzero"`
	SSHPrivateKeyEnc string    `bun:"ssh_private_key_enc,nullzero"`
	CreatedAt        time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt        time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

func (s *Store) sealRepositoryCredential(c *RepositoryCredential) (*repositoryCredentialRow, error) {
	row := &repositoryCredentialRow{
		ID:               c.ID,
		TenantID:         c.TenantID,
		EngineInstanceID: c.EngineInstanceID,
		RepositoryURL:    c.RepositoryURL,
	}
	var err error
	if row.UsernameEnc, err = s.seal(c.Username, ctxUsername); err != nil {
		return nil, err
	}
	if row.PasswordEnc, err = s.seal(c.Password, ctxPassword); err != nil {
		return nil, err
	}
	if row.SSHPrivateKeyEnc, err = s.seal(c.SSHPrivateKey, ctxSSHPrivateKey); err != nil {
		return nil, err
	}
	return row, nil
}

func (s *Store) openRepositoryCredential(row *repositoryCredentialRow) (*RepositoryCredential, error) {
	c := &RepositoryCredential{
		ID:               row.ID,
		TenantID:         row.TenantID,
		EngineInstanceID: row.EngineInstanceID,
		RepositoryURL:    row.RepositoryURL,
		CreatedAt:        row.CreatedAt,
		UpdatedAt:        row.UpdatedAt,
	}
	var err error
	if c.Username, err = s.open(row.UsernameEnc, ctxUsername); err != nil {
		return nil, fmt.Errorf("repository credential %s: username: %w", row.ID, err)
	}
	if c.Password, err = s.open(row.PasswordEnc, ctxPassword); err != nil {
		return nil, fmt.Errorf("repository credential %s: password: %w", row.ID, err)
	}
	if c.SSHPrivateKey, err = s.open(row.SSHPrivateKeyEnc, ctxSSHPrivateKey); err != nil {
		return nil, fmt.Errorf("repository credential %s: SSH private key: %w", row.ID, err)
	}
	return c, nil
}

// CreateRepositoryCredential encrypts and inserts c for tenant c.TenantID and fills in its
// id and timestamps.
func (s *Store) CreateRepositoryCredential(ctx context.Context, idb bun.IDB, c *RepositoryCredential) error {
	row, err := s.sealRepositoryCredential(c)
	if err != nil {
		return err
	}
	if _, err := idb.NewInsert().Model(row).ExcludeColumn("id", "created_at", "updated_at").Returning("*").Exec(ctx); err != nil {
		return translate(err)
	}
	c.ID, c.CreatedAt, c.UpdatedAt = row.ID, row.CreatedAt, row.UpdatedAt
	return nil
}

// GetRepositoryCredential returns one of the tenant's repository credentials, decrypted.
func (s *Store) GetRepositoryCredential(ctx context.Context, idb bun.IDB, tenantID, id string) (*RepositoryCredential, error) {
	row := new(repositoryCredentialRow)
	if err := idb.NewSelect().Model(row).Where("rcred.tenant_id = ? AND rcred.id = ?", tenantID, id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("repository credential %s: %w", id, translate(err))
	}
	return s.openRepositoryCredential(row)
}

// UpdateRepositoryCredential replaces the URL, engine instance and secrets of one of
// tenant c.TenantID's credentials (re-encrypting under the primary key).
func (s *Store) UpdateRepositoryCredential(ctx context.Context, idb bun.IDB, c *RepositoryCredential) error {
	row, err := s.sealRepositoryCredential(c)
	if err != nil {
		return err
	}
	res, err := idb.NewUpdate().Model(row).
		Column("engine_instance_id", "repository_url", "username_enc", "password_enc", "ssh_private_key_enc").
		Set("updated_at = now()").
		Where("rcred.tenant_id = ? AND rcred.id = ?", c.TenantID, c.ID).
		Returning("*").
		Exec(ctx)
	if err != nil {
		return translate(err)
	}
	if err := notFoundIfNone(res, "repository credential "+c.ID); err != nil {
		return err
	}
	c.CreatedAt, c.UpdatedAt = row.CreatedAt, row.UpdatedAt
	return nil
}

// DeleteRepositoryCredential deletes one of the tenant's repository credentials and its
// CR mapping.
func (s *Store) DeleteRepositoryCredential(ctx context.Context, idb bun.IDB, tenantID, id string) error {
	res, err := idb.NewDelete().Model((*repositoryCredentialRow)(nil)).Where("tenant_id = ? AND id = ?", tenantID, id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "repository credential "+id)
}
