// Package engine registers the GitOps engine (Argo CD) instance a cluster-agent serves: the
// namespace it runs in, on a named engine cluster. Every operation the agent accepts must
// belong to that instance.
package engine

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// Defaults of the flags.
const (
	// EnvPodNamespace supplies the default --engine-namespace (set it from the downward API).
	EnvPodNamespace = "POD_NAMESPACE"
	// DefaultNamespace is the engine namespace when neither the flag nor $POD_NAMESPACE says.
	DefaultNamespace = "gitops-service-argocd"
	// DefaultCluster is the engine cluster name of a single-cluster install.
	DefaultCluster = "default"
)

// Options say which engine instance the agent serves.
type Options struct {
	// Namespace is the Argo CD namespace.
	Namespace string
	// ClusterName is the engine cluster's name in the database.
	ClusterName string
}

// BindFlags registers --engine-namespace and --engine-cluster.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	ns := os.Getenv(EnvPodNamespace)
	if ns == "" {
		ns = DefaultNamespace
	}
	fs.StringVar(&o.Namespace, "engine-namespace", ns,
		"Namespace of the Argo CD instance this cluster-agent serves; the default is $"+EnvPodNamespace+" when set.")
	fs.StringVar(&o.ClusterName, "engine-cluster", DefaultCluster, "Name of the engine cluster this Argo CD instance runs on, as registered in the database.")
}

// Identity is the engine instance the agent serves, as registered in the database.
type Identity struct {
	ClusterID    string
	ClusterName  string
	InstanceID   string
	Namespace    string
	NamespaceUID string
}

// Store is the part of the database registration uses.
type Store interface {
	GetOrCreateEngineCluster(ctx context.Context, idb bun.IDB, name, clusterCredentialsID string) (*db.EngineCluster, error)
	GetOrCreateEngineInstance(ctx context.Context, idb bun.IDB, ei *db.EngineInstance) (*db.EngineInstance, error)
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// Register reads the engine namespace (its UID identifies the instance: a re-created
// namespace is a new instance) and gets or creates the engine cluster and instance rows,
// in one transaction.
func Register(ctx context.Context, reader client.Reader, idb bun.IDB, store Store, opts Options) (Identity, error) {
	if opts.Namespace == "" || opts.ClusterName == "" {
		return Identity{}, errors.New("the engine namespace and engine cluster name must not be empty")
	}
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: opts.Namespace}, ns); err != nil {
		return Identity{}, fmt.Errorf("reading engine namespace %q: %w", opts.Namespace, err)
	}
	id := Identity{ClusterName: opts.ClusterName, Namespace: ns.Name, NamespaceUID: string(ns.UID)}
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		cluster, err := store.GetOrCreateEngineCluster(ctx, tx, opts.ClusterName, "")
		if err != nil {
			return fmt.Errorf("registering engine cluster %q: %w", opts.ClusterName, err)
		}
		instance, err := store.GetOrCreateEngineInstance(ctx, tx, &db.EngineInstance{
			EngineClusterID: cluster.ID,
			NamespaceName:   ns.Name,
			NamespaceUID:    string(ns.UID),
		})
		if err != nil {
			return fmt.Errorf("registering engine instance of namespace %q: %w", ns.Name, err)
		}
		id.ClusterID = cluster.ID
		id.InstanceID = instance.ID
		return nil
	})
	return id, err
}
