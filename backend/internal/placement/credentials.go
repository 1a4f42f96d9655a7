package placement

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/uptrace/bun"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend/internal/clusterconfig"
	"github.com/gitops-service/gitops-service/backend/internal/signal"
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
// the files it names inlined, since the backend runs elsewhere. Credential plugins are
// refused: the backend runs no programs. It returns the client configuration they give, too.
// Errors never quote the file's content.
func EngineClusterCredentials(path, kubeContext string) (*db.ClusterCredentials, *rest.Config, error) {
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a readable kubeconfig file", path)
	}
	if kubeContext != "" {
		raw.CurrentContext = kubeContext
	}
	if err := clientcmdapi.MinifyConfig(raw); err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.FlattenConfig(raw); err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: reading the files it names: %w", path, err)
	}
	for _, user := range raw.AuthInfos {
		if user.Exec != nil || user.AuthProvider != nil {
			return nil, nil, fmt.Errorf("kubeconfig %s: credential plugins are not supported; use a bearer token or a client certificate", path)
		}
		if user.TokenFile != "" {
			return nil, nil, fmt.Errorf("kubeconfig %s: a token file is not supported; put the token in the kubeconfig", path)
		}
	}
	data, err := clientcmd.Write(*raw)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	creds := &db.ClusterCredentials{Kubeconfig: db.Secret(data)}
	cfg, err := clusterconfig.FromCredentials(creds)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	creds.Host = cfg.Host
	return creds, cfg, nil
}

// reachable checks that cfg reaches an API server that accepts its credentials.
func reachable(cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = signal.RemoteTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dc.ServerVersion(); err != nil {
		return fmt.Errorf("the engine cluster at %s did not answer with these credentials: %w", cfg.Host, err)
	}
	return nil
}
