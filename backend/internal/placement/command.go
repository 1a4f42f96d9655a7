// Package placement is the operator's side of tenant placement: the `backend
// engine-instances` subcommand, which registers, re-weights, drains and deregisters GitOps
// engine instances, and simulates placement. Placement itself (consistent hashing with
// bounded loads) and the rebalancing plan are tenancy.BoundedLoad.
//
// An instance can be deregistered only once it has no tenants: drain it and the backend's
// rebalancer (internal/rebalance) moves them.
package placement

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
)

// MaxWeight is the largest capacity weight the command accepts (100 is a standard
// instance).
const MaxWeight = 10000

// Usage describes the subcommand.
const Usage = `usage: backend engine-instances VERB [flags] [args]

  list                                            list engine instances with their tenant counts
                                                  and how the backend reaches their cluster:
                                                  stored-credentials, or in-cluster (none stored:
                                                  reached only if it is the backend's own
                                                  --engine-cluster)
  register --namespace NS [--cluster C] [--weight W] [--namespace-uid UID] [--kubeconfig F]
                                                  register the instance in namespace NS of engine
                                                  cluster C (idempotent); prints its id
  set-cluster-credentials --cluster C --kubeconfig F [--context X]
                                                  store how the backend reaches engine cluster C,
                                                  when it is not the backend's own cluster: the
                                                  kubeconfig's context (files it names inlined;
                                                  no credential plugins), encrypted with
                                                  --credentials-keys-file. Operation CRs of C's
                                                  instances are then created there. Run it before
                                                  the first cluster-agent of C starts.
  set-weight ID W                                 set the capacity weight (0: no new tenants)
  drain ID                                        place no new tenants on the instance
  undrain ID                                      place new tenants on it again
  deregister ID                                   delete the instance; refused while tenants are
                                                  placed on it (drain it first: the backend's
                                                  rebalancer then moves them). Stop its
                                                  cluster-agent first: an agent registers its
                                                  instance again when it starts.
  simulate [--instances N] [--tenants T] [--epsilon E] [--json]
                                                  place T tenants on N equal instances, add one
                                                  instance, drain one, and print the loads and
                                                  the tenants moved (no database)

Weights are relative; 100 (the default) is a standard instance. Database flags
(--database-url, ...) go after the verb.`

// Command is `backend engine-instances`.
type Command struct {
	// Open opens the database once the flags are parsed; the function it returns closes it.
	Open func(ctx context.Context) (bun.IDB, func(), error)
	// NamespaceUID reads the UID of a namespace with a kubeconfig file (empty: the default
	// loading rules), for register without --namespace-uid. Nil means ReadNamespaceUID.
	NamespaceUID func(ctx context.Context, kubeconfig, namespace string) (string, error)
	// CredentialStore is the store that encrypts credentials, for set-cluster-credentials;
	// called once the flags are parsed.
	CredentialStore func() (*db.Store, error)
	Store           *db.Store
	Out             io.Writer
}

// ErrUsage wraps errors in the subcommand's arguments.
var ErrUsage = errors.New("usage")

func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...)
}

// Run parses args (the verb, then its flags and arguments) with fs, on which the database
// flags are already bound, and runs the verb.
func (c *Command) Run(ctx context.Context, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		return usageErrorf("a verb is required\n%s", Usage)
	}
	verb, args := args[0], args[1:]
	var namespace, cluster, namespaceUID, kubeconfig, kubeContext string
	var weight, instances, tenants int
	var epsilon float64
	var asJSON bool
	positional := 1
	switch verb {
	case "list":
		positional = 0
	case "register":
		positional = 0
		fs.StringVar(&namespace, "namespace", "", "Namespace of the engine (Argo CD) instance.")
		fs.StringVar(&cluster, "cluster", "default", "Name of the engine cluster the namespace is on (`default` is the backend's).")
		fs.IntVar(&weight, "weight", 100, "Capacity weight (relative; 100 is a standard instance, 0 takes no new tenants).")
		fs.StringVar(&namespaceUID, "namespace-uid", "", "UID of the namespace; read from the cluster with --kubeconfig when empty.")
		fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the engine cluster (default: $KUBECONFIG, in-cluster, ~/.kube/config).")
	case "set-cluster-credentials":
		positional = 0
		fs.StringVar(&cluster, "cluster", "", "Name of the engine cluster, as its cluster-agents' --engine-cluster says.")
		fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig file of the engine cluster.")
		fs.StringVar(&kubeContext, "context", "", "Context of the kubeconfig to use (default: its current context).")
	case "set-weight":
		positional = 2
	case "drain", "undrain", "deregister":
	case "simulate":
		positional = 0
		fs.IntVar(&instances, "instances", 10, "Engine instances of equal weight (2 to 1000).")
		fs.IntVar(&tenants, "tenants", 10000, "Tenants placed one after the other (1 to 1000000).")
		fs.Float64Var(&epsilon, "epsilon", tenancy.DefaultEpsilon, "ε: how far above its weighted share an instance may go.")
		fs.BoolVar(&asJSON, "json", false, "Print one JSON object instead of a table.")
	default:
		return usageErrorf("unknown verb %q\n%s", verb, Usage)
	}
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), Usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != positional {
		return usageErrorf("%s takes %d arguments, got %d\n%s", verb, positional, fs.NArg(), Usage)
	}
	if verb == "set-weight" {
		w, err := strconv.Atoi(fs.Arg(1))
		if err != nil {
			return usageErrorf("weight %q is not an integer", fs.Arg(1))
		}
		weight = w
	}
	weightSet := verb == "set-weight"
	fs.Visit(func(f *flag.Flag) { weightSet = weightSet || f.Name == "weight" })
	if weight < 0 || weight > MaxWeight {
		return usageErrorf("weight %d is outside 0..%d", weight, MaxWeight)
	}
	if verb == "simulate" {
		if instances < 2 || instances > 1000 || tenants < 1 || tenants > 1000000 {
			return usageErrorf("simulate needs 2 to 1000 instances and 1 to 1000000 tenants")
		}
		if !(epsilon > 0) || math.IsInf(epsilon, 1) {
			return usageErrorf("epsilon %v is not a positive number", epsilon)
		}
		return c.simulate(instances, tenants, epsilon, asJSON)
	}
	if verb == "set-cluster-credentials" {
		return c.setClusterCredentials(ctx, cluster, kubeconfig, kubeContext)
	}
	if verb == "register" {
		if namespace == "" || cluster == "" {
			return usageErrorf("register needs --namespace and --cluster")
		}
		if namespaceUID == "" {
			read := c.NamespaceUID
			if read == nil {
				read = ReadNamespaceUID
			}
			uid, err := read(ctx, kubeconfig, namespace)
			if err != nil {
				return fmt.Errorf("reading the UID of namespace %s (or pass --namespace-uid): %w", namespace, err)
			}
			namespaceUID = uid
		}
	}

	idb, closeDB, err := c.Open(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	switch verb {
	case "list":
		return c.list(ctx, idb)
	case "register":
		var w *int
		if weightSet {
			w = &weight
		}
		ei, err := Register(ctx, idb, c.Store, cluster, namespace, namespaceUID, w)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(c.Out, ei.ID)
		return err
	case "set-weight":
		return c.update(ctx, idb, fs.Arg(0), func(ei *db.EngineInstance) { ei.CapacityWeight = weight })
	case "drain":
		return c.update(ctx, idb, fs.Arg(0), func(ei *db.EngineInstance) { ei.State = db.EngineInstanceDraining })
	case "undrain":
		return c.update(ctx, idb, fs.Arg(0), func(ei *db.EngineInstance) { ei.State = db.EngineInstanceActive })
	default: // deregister
		return Deregister(ctx, idb, c.Store, fs.Arg(0))
	}
}

// Register gets or creates the engine cluster called cluster and the engine instance of
// the namespace (identified by its UID, as the cluster-agent registers it), and sets its
// capacity weight unless weight is nil (a new instance then gets the default, 100). An
// instance already registered keeps its id and state.
func Register(ctx context.Context, idb bun.IDB, store *db.Store, cluster, namespace, namespaceUID string, weight *int) (*db.EngineInstance, error) {
	var ei *db.EngineInstance
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		engineCluster, err := store.GetOrCreateEngineCluster(ctx, tx, cluster, "")
		if err != nil {
			return err
		}
		ei, err = store.GetOrCreateEngineInstance(ctx, tx, &db.EngineInstance{
			EngineClusterID: engineCluster.ID, NamespaceName: namespace, NamespaceUID: namespaceUID,
		})
		if errors.Is(err, db.ErrConflict) {
			return fmt.Errorf("namespace %s (UID %s) is registered on another engine cluster: %w", namespace, namespaceUID, err)
		}
		if err != nil {
			return err
		}
		if weight == nil || ei.CapacityWeight == *weight {
			return nil
		}
		ei.CapacityWeight = *weight
		return store.UpdateEngineInstance(ctx, tx, ei)
	})
	return ei, err
}

// Deregister deletes an engine instance that no tenant is placed on.
func Deregister(ctx context.Context, idb bun.IDB, store *db.Store, id string) error {
	err := store.DeregisterEngineInstance(ctx, idb, id)
	var placed *db.TenantsPlacedError
	if errors.As(err, &placed) {
		return fmt.Errorf("%w: drain it first (`backend engine-instances drain %s`) so that no new tenant is placed on it, "+
			"and deregister it once the backend's rebalancer has moved its tenants to other instances", err, id)
	}
	return err
}

func (c *Command) update(ctx context.Context, idb bun.IDB, id string, change func(*db.EngineInstance)) error {
	return idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ei, err := c.Store.GetEngineInstance(ctx, tx, id)
		if err != nil {
			return err
		}
		change(ei)
		if err := c.Store.UpdateEngineInstance(ctx, tx, ei); err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.Out, "engine instance %s: weight %d, %s\n", ei.ID, ei.CapacityWeight, ei.State)
		return err
	})
}

// simulate prints tenancy.Simulate's result: a table, or one JSON object with asJSON.
func (c *Command) simulate(instances, tenants int, epsilon float64, asJSON bool) error {
	res := tenancy.Simulate(instances, tenants, epsilon)
	if asJSON {
		return json.NewEncoder(c.Out).Encode(res)
	}
	w := tabwriter.NewWriter(c.Out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintf(w, "instances, tenants, epsilon\t%d, %d, %g\n", res.Instances, res.Tenants, res.Epsilon)
	_, _ = fmt.Fprintf(w, "after placing\tmax %d, min %d, max/min %.3f\n", res.MaxLoad, res.MinLoad, res.MaxOverMin)
	_, _ = fmt.Fprintf(w, "after adding an instance\tmoved %.2f%% (ideal %.2f%%), max/min %.3f\n",
		100*res.AddedInstanceMovedShare, 100*res.AddedInstanceIdealShare, res.MaxOverMinAfterAdd)
	_, _ = fmt.Fprintf(w, "after draining an instance\tmoved %.2f%% (ideal %.2f%%), max/min %.3f\n",
		100*res.RemovedInstanceMovedShare, 100*res.RemovedInstanceIdealShare, res.MaxOverMinAfterRemove)
	_, _ = fmt.Fprintf(w, "seconds\t%.2f\n", res.Seconds)
	return w.Flush()
}

func (c *Command) list(ctx context.Context, idb bun.IDB) error {
	instances, err := c.Store.ListEngineInstances(ctx, idb)
	if err != nil {
		return err
	}
	clusters, err := c.Store.ListEngineClusters(ctx, idb)
	if err != nil {
		return err
	}
	names, access := map[string]string{}, map[string]string{}
	for _, cl := range clusters {
		names[cl.ID] = cl.Name
		// How the backend reaches the cluster to signal its instances.
		access[cl.ID] = "in-cluster"
		if cl.ClusterCredentialsID != "" {
			access[cl.ID] = "stored-credentials"
		}
	}
	loads, err := c.Store.CountTenantsByEngineInstance(ctx, idb)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.Out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "ID\tCLUSTER\tNAMESPACE\tWEIGHT\tSTATE\tTENANTS\tACCESS")
	for _, ei := range instances {
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", ei.ID, names[ei.EngineClusterID], ei.NamespaceName,
			ei.CapacityWeight, ei.State, loads[ei.ID], access[ei.EngineClusterID])
	}
	return w.Flush()
}

// ReadNamespaceUID reads a namespace's UID from the cluster of kubeconfig (empty: the
// default loading rules, as kubectl and the controllers use).
func ReadNamespaceUID(ctx context.Context, kubeconfig, namespace string) (string, error) {
	cfg, err := config.GetConfig()
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return "", err
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return "", err
	}
	ns := &corev1.Namespace{}
	if err := cl.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return "", err
	}
	return string(ns.UID), nil
}
