package opsignal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend/internal/clusterconfig"
)

// RemoteTimeout bounds each request to another engine cluster.
const RemoteTimeout = 30 * time.Second

// DefaultClusterClientTTL is how long a client of an engine cluster is kept before its
// credentials are read again (so rotated credentials are picked up without a restart).
const DefaultClusterClientTTL = time.Minute

// ClusterStore is the part of the database Clusters reads.
type ClusterStore interface {
	GetEngineCluster(ctx context.Context, idb bun.IDB, id string) (*db.EngineCluster, error)
	GetClusterCredentials(ctx context.Context, idb bun.IDB, id string) (*db.ClusterCredentials, error)
}

// Clusters hands out the client of each engine cluster: Local for the backend's own
// cluster, else one built from the cluster's stored credentials.
type Clusters struct {
	Local client.Client
	// Own is the name of the backend's own engine cluster (--engine-cluster). Another
	// cluster without stored credentials is refused rather than signalled through Local,
	// where a namespace of the same name would receive the CRs. Empty: any cluster without
	// credentials is taken for the backend's own.
	Own string
	// Base supplies the rate limits of clients of other clusters.
	Base   *rest.Config
	Scheme *runtime.Scheme
	DB     bun.IDB
	Store  ClusterStore
	// TTL defaults to DefaultClusterClientTTL.
	TTL time.Duration

	mu     sync.Mutex
	cached map[string]cachedClient
}

type cachedClient struct {
	client  client.Client
	expires time.Time
}

// For returns the client of the engine cluster clusterID.
func (c *Clusters) For(ctx context.Context, clusterID string) (client.Client, error) {
	c.mu.Lock()
	cached, ok := c.cached[clusterID]
	c.mu.Unlock()
	if ok && time.Now().Before(cached.expires) {
		return cached.client, nil
	}
	cl, err := c.build(ctx, clusterID)
	if err != nil {
		return nil, err
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = DefaultClusterClientTTL
	}
	c.mu.Lock()
	if c.cached == nil {
		c.cached = map[string]cachedClient{}
	}
	c.cached[clusterID] = cachedClient{client: cl, expires: time.Now().Add(ttl)}
	c.mu.Unlock()
	return cl, nil
}

// Forget drops the client of clusterID, after it failed: the next For reads the
// credentials again.
func (c *Clusters) Forget(clusterID string) {
	c.mu.Lock()
	delete(c.cached, clusterID)
	c.mu.Unlock()
}

func (c *Clusters) build(ctx context.Context, clusterID string) (client.Client, error) {
	cluster, err := c.Store.GetEngineCluster(ctx, c.DB, clusterID)
	if err != nil {
		return nil, err
	}
	if cluster.ClusterCredentialsID == "" {
		if c.Own != "" && cluster.Name != c.Own {
			return nil, fmt.Errorf("engine cluster %q is not the backend's own (%q) and has no stored credentials: "+
				"store them with `backend engine-instances set-cluster-credentials --cluster %s`", cluster.Name, c.Own, cluster.Name)
		}
		return c.Local, nil
	}
	creds, err := c.Store.GetClusterCredentials(ctx, c.DB, cluster.ClusterCredentialsID)
	if err != nil {
		return nil, fmt.Errorf("reading the credentials of engine cluster %q: %w", cluster.Name, err)
	}
	cfg, err := clusterconfig.FromCredentials(creds)
	if err != nil {
		return nil, fmt.Errorf("engine cluster %q: %w", cluster.Name, err)
	}
	if c.Base != nil {
		cfg.QPS, cfg.Burst, cfg.UserAgent = c.Base.QPS, c.Base.Burst, c.Base.UserAgent
	}
	// A remote cluster that stops answering must not hold a reconcile forever.
	cfg.Timeout = RemoteTimeout
	cl, err := client.New(cfg, client.Options{Scheme: c.Scheme})
	if err != nil {
		return nil, fmt.Errorf("engine cluster %q: building its client: %w", cluster.Name, err)
	}
	return cl, nil
}
