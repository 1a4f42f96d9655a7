package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Contexts bound to sealed values (secretbox additional data): a value only opens in the
// column it was written to.
const (
	ctxKubeconfig    = "cluster_credentials.kubeconfig"
	ctxBearerToken   = "cluster_credentials.bearer_token" //nolint:gosec // a column name, not a credential
	ctxUsername      = "repository_credentials.username"
	ctxPassword      = "repository_credentials.password"
	ctxSSHPrivateKey = "repository_credentials.ssh_private_key"
)

// ClusterCredentials is how to reach a cluster, in plaintext (in memory only: the row
// holds the secrets encrypted).
type ClusterCredentials struct {
	ID                         string
	Host                       string
	Kubeconfig                 Secret
	KubeconfigContext          string
	BearerToken                Secret
	ServiceAccountNamespace    string
	AllowInsecureSkipTLSVerify bool
	// Namespaces limits Argo CD to these namespaces; empty means cluster-wide.
	Namespaces []string
	// ClusterResources lets Argo CD manage cluster-scoped resources despite Namespaces.
	ClusterResources bool
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// clusterCredentialsRow is the stored form; unexported so nothing writes it unencrypted.
type clusterCredentialsRow struct {
	bun.BaseModel `bun:"table:cluster_credentials,alias:ccred"`

	ID                         string    `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	Host                       string    `bun:"host,notnull"`
	KubeconfigEnc              string    `bun:"kubeconfig_enc,nullzero"`
	KubeconfigContext          string    `bun:"kubeconfig_context,notnull"`
	BearerTokenEnc             string    `bun:"bearer_token_enc,nullzero"`
	ServiceAccountNamespace    string    `bun:"service_account_namespace,notnull"`
	AllowInsecureSkipTLSVerify bool      `bun:"allow_insecure_skip_tls_verify,notnull"`
	Namespaces                 []string  `bun:"namespaces,array,notnull"`
	ClusterResources           bool      `bun:"cluster_resources,notnull"`
	CreatedAt                  time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt                  time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

func (s *Store) sealClusterCredentials(c *ClusterCredentials) (*clusterCredentialsRow, error) {
	row := &clusterCredentialsRow{
		ID:                         c.ID,
		Host:                       c.Host,
		KubeconfigContext:          c.KubeconfigContext,
		ServiceAccountNamespace:    c.ServiceAccountNamespace,
		AllowInsecureSkipTLSVerify: c.AllowInsecureSkipTLSVerify,
		Namespaces:                 c.Namespaces,
		ClusterResources:           c.ClusterResources,
	}
	if row.Namespaces == nil {
		row.Namespaces = []string{}
	}
	var err error
	if row.KubeconfigEnc, err = s.seal(c.Kubeconfig, ctxKubeconfig); err != nil {
		return nil, err
	}
	if row.BearerTokenEnc, err = s.seal(c.BearerToken, ctxBearerToken); err != nil {
		return nil, err
	}
	return row, nil
}

func (s *Store) openClusterCredentials(row *clusterCredentialsRow, c *ClusterCredentials) error {
	*c = ClusterCredentials{
		ID:                         row.ID,
		Host:                       row.Host,
		KubeconfigContext:          row.KubeconfigContext,
		ServiceAccountNamespace:    row.ServiceAccountNamespace,
		AllowInsecureSkipTLSVerify: row.AllowInsecureSkipTLSVerify,
		Namespaces:                 row.Namespaces,
		ClusterResources:           row.ClusterResources,
		CreatedAt:                  row.CreatedAt,
		UpdatedAt:                  row.UpdatedAt,
	}
	var err error
	if c.Kubeconfig, err = s.open(row.KubeconfigEnc, ctxKubeconfig); err != nil {
		return fmt.Errorf("cluster credentials %s: kubeconfig: %w", row.ID, err)
	}
	if c.BearerToken, err = s.open(row.BearerTokenEnc, ctxBearerToken); err != nil {
		return fmt.Errorf("cluster credentials %s: bearer token: %w", row.ID, err)
	}
	return nil
}

// CreateClusterCredentials encrypts and inserts credentials (at least a kubeconfig or a
// bearer token: ErrCheck otherwise) and fills in c's id and timestamps.
func (s *Store) CreateClusterCredentials(ctx context.Context, idb bun.IDB, c *ClusterCredentials) error {
	row, err := s.sealClusterCredentials(c)
	if err != nil {
		return err
	}
	if _, err := idb.NewInsert().Model(row).ExcludeColumn("id", "created_at", "updated_at").Returning("*").Exec(ctx); err != nil {
		return translate(err)
	}
	c.ID, c.CreatedAt, c.UpdatedAt = row.ID, row.CreatedAt, row.UpdatedAt
	return nil
}

// GetClusterCredentials returns decrypted credentials by id. Not tenant-scoped: for an
// engine cluster's credentials; a tenant's go through GetManagedEnvironmentCredentials.
func (s *Store) GetClusterCredentials(ctx context.Context, idb bun.IDB, id string) (*ClusterCredentials, error) {
	row := new(clusterCredentialsRow)
	if err := idb.NewSelect().Model(row).Where("ccred.id = ?", id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("cluster credentials %s: %w", id, translate(err))
	}
	c := new(ClusterCredentials)
	return c, s.openClusterCredentials(row, c)
}

// UpdateClusterCredentials replaces every column of the credentials c.ID (re-encrypting
// the secrets under the primary key). Not tenant-scoped, like GetClusterCredentials.
func (s *Store) UpdateClusterCredentials(ctx context.Context, idb bun.IDB, c *ClusterCredentials) error {
	return s.updateClusterCredentials(ctx, idb, c, nil)
}

// updateClusterCredentials updates c.ID, restricted to the ids that owned selects when not
// nil (how tenant-scoped callers keep to their own rows).
func (s *Store) updateClusterCredentials(ctx context.Context, idb bun.IDB, c *ClusterCredentials, owned *bun.SelectQuery) error {
	row, err := s.sealClusterCredentials(c)
	if err != nil {
		return err
	}
	q := idb.NewUpdate().Model(row).
		Column("host", "kubeconfig_enc", "kubeconfig_context", "bearer_token_enc", "service_account_namespace",
			"allow_insecure_skip_tls_verify", "namespaces", "cluster_resources").
		Set("updated_at = now()").
		Where("ccred.id = ?", c.ID)
	if owned != nil {
		q = q.Where("ccred.id IN (?)", owned)
	}
	res, err := q.Returning("*").Exec(ctx)
	if err != nil {
		return translate(err)
	}
	if err := notFoundIfNone(res, "cluster credentials "+c.ID); err != nil {
		return err
	}
	c.CreatedAt, c.UpdatedAt = row.CreatedAt, row.UpdatedAt
	return nil
}
