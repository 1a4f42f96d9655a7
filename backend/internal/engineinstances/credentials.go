package engineinstances

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/uptrace/bun"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/kubeconfig"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend/internal/clusterconfig"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
)

// setClusterCredentials is the set-cluster-credentials verb.
func (c *Command) setClusterCredentials(ctx context.Context, out io.Writer, cluster, path, kubeContext string) error {
	if cluster == "" || path == "" {
		return manageropts.UsageErrorf("set-cluster-credentials needs --cluster and --kubeconfig")
	}
	if c.CredentialStore == nil {
		return errors.New("set-cluster-credentials needs a store that encrypts credentials")
	}
	store, err := c.CredentialStore()
	if err != nil {
		return err
	}
	creds, cfg, err := EngineClusterCredentials(path, kubeContext)
	if err != nil {
		return err
	}
	if err := reachable(cfg); err != nil {
		return err
	}
	idb, closeDB, err := c.Open(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	var ec *db.EngineCluster
	err = idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ec, err = store.SetEngineClusterCredentials(ctx, tx, cluster, creds)
		return err
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "engine cluster %s (%s): the backend reaches it at %s\n", ec.Name, ec.ID, creds.Host)
	return err
}

// EngineClusterCredentials reads a kubeconfig file into the credentials the backend stores
// for an engine cluster: only the chosen context (kubeContext, else the current one), with
// the files it names inlined, since the backend runs elsewhere; read by the rules of package
// kubeconfig for an operator's file (credential plugins are refused: the backend runs no
// programs). It returns the client configuration they give, too. Errors never quote the
// file's content.
func EngineClusterCredentials(path, kubeContext string) (*db.ClusterCredentials, *rest.Config, error) {
	kc, err := kubeconfig.Load(path, kubeconfig.Options{Context: kubeContext})
	if kubeconfig.KindOf(err) == kubeconfig.Unparseable {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	data, err := kc.Write()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	creds := &db.ClusterCredentials{Kubeconfig: db.Secret(data), Host: kc.Server}
	cfg, err := clusterconfig.FromCredentials(creds)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return creds, cfg, nil
}

// reachable checks that cfg reaches an API server that accepts its credentials.
func reachable(cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = opsignal.RemoteTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dc.ServerVersion(); err != nil {
		return fmt.Errorf("the engine cluster at %s did not answer with these credentials: %w", cfg.Host, err)
	}
	return nil
}
