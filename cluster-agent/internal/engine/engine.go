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
	"strings"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/kubeconfig"
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
	// ServiceClusterKubeconfig is a kubeconfig file for the service's cluster, for an engine
	// cluster that is not the service's own; empty when Argo CD runs on the service's
	// cluster and reaches the tenants' namespaces in-cluster.
	ServiceClusterKubeconfig string
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
	fs.StringVar(&o.ServiceClusterKubeconfig, "service-cluster-kubeconfig", "",
		"Kubeconfig file (token or client certificate inline, or in files it names) of the cluster the backend and the tenants' namespaces are on, "+
			"when this engine cluster is another one: Argo CD then deploys there through the cluster Secret "+argocd.ServiceClusterSecretName+". "+
			"Empty: Argo CD runs on the service's cluster.")
}

// Identity is the engine instance the agent serves, as registered in the database.
type Identity struct {
	ClusterID    string
	ClusterName  string
	InstanceID   string
	Namespace    string
	NamespaceUID string
	// ServiceClusterAPIURL is where this instance's Argo CD reaches the service's cluster
	// when it runs on another one; empty when it runs there.
	ServiceClusterAPIURL string
	// TenantAPIURL is where this instance's Argo CD reaches the service's cluster with a
	// tenant's own credentials (see argocd.TenantServer); empty when it deploys there with
	// its own identity.
	TenantAPIURL string
}

// ServiceServer is the destination server of the tenants' namespaces for this instance's
// Argo CD (see argocd.ServiceServer).
func (id Identity) ServiceServer() string { return argocd.ServiceServer(id.ServiceClusterAPIURL) }

// LocalServer is the destination server of a tenant's own namespace for this instance's
// Argo CD: the tenant's cluster entry, or ServiceServer when Argo CD deploys there with its
// own identity.
func (id Identity) LocalServer(tenantID string) string {
	if id.TenantAPIURL == "" {
		return id.ServiceServer()
	}
	return argocd.TenantServer(id.TenantAPIURL, tenantID)
}

// RowDestination is an Application destination as the rows say it: the tenant's namespace
// on the service's cluster, reached through any of this instance's entries for it, is
// in-cluster. Argo CD reports what it compared in its own terms; the backend compares them
// with the rows'.
func (id Identity) RowDestination(tenantID string, d argov1alpha1.ApplicationDestination) argov1alpha1.ApplicationDestination {
	if d.Name == "" && d.Server != "" && (d.Server == id.LocalServer(tenantID) || d.Server == id.ServiceServer()) {
		d.Server = argocd.InClusterServer
	}
	return d
}

// Application is the Application this instance applies for an application row: the row's
// spec, with the tenant's own namespace reached where this Argo CD reaches it.
func (id Identity) Application(name, applicationID, tenantID string, spec argov1alpha1.ApplicationSpec) *argov1alpha1.Application {
	return argocd.Application(id.Namespace, name, applicationID, tenantID, argocd.OnServiceCluster(spec, id.LocalServer(tenantID)))
}

// Store is the part of the database registration uses.
type Store interface {
	RegisterEngineInstance(ctx context.Context, idb bun.IDB, cluster, namespace, namespaceUID string) (*db.EngineCluster, *db.EngineInstance, error)
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
	if opts.ServiceClusterKubeconfig != "" {
		cfg, err := LoadServiceCluster(opts.ServiceClusterKubeconfig)
		if err != nil {
			return Identity{}, err
		}
		id.ServiceClusterAPIURL = argocd.NormalizeAPIURL(cfg.Host)
	}
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		cluster, instance, err := store.RegisterEngineInstance(ctx, tx, opts.ClusterName, ns.Name, string(ns.UID))
		if err != nil {
			return err
		}
		if id.ServiceClusterAPIURL != "" && cluster.ClusterCredentialsID == "" {
			// Without them the backend cannot signal this instance, and tenants placed on it
			// would wait. Rolled back: nothing is registered.
			return fmt.Errorf("engine cluster %q is not the service's cluster, but the backend has no credentials for it: "+
				"run `backend engine-instances set-cluster-credentials --cluster %s --kubeconfig ...` first", opts.ClusterName, opts.ClusterName)
		}
		id.ClusterID = cluster.ID
		id.InstanceID = instance.ID
		return nil
	})
	return id, err
}

// LoadServiceCluster reads the --service-cluster-kubeconfig file: its current context, by
// the rules of package kubeconfig for an operator's file (the files it names are read;
// credential plugins are refused, since Argo CD needs the credentials themselves). Errors
// never quote the file's content.
func LoadServiceCluster(path string) (*rest.Config, error) {
	creds, err := kubeconfig.Load(path, kubeconfig.Options{})
	if kubeconfig.KindOf(err) == kubeconfig.Unparseable {
		return nil, fmt.Errorf("reading --service-cluster-kubeconfig %s: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--service-cluster-kubeconfig %s: %w", path, err)
	}
	if !strings.HasPrefix(creds.Server, "https://") {
		// Argo CD's cluster Secret names the server by URL, and would send the token in the clear.
		return nil, fmt.Errorf("--service-cluster-kubeconfig %s: the server must be an https:// URL", path)
	}
	return creds.RESTConfig()
}
