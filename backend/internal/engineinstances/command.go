// Package engineinstances is the operator's side of tenant placement: the `backend
// engine-instances` subcommand, which registers, re-weights, drains and deregisters GitOps
// engine instances, and simulates placement. Placement itself (consistent hashing with
// bounded loads) and the rebalancing plan are placement.BoundedLoad.
//
// An instance can be deregistered only once it has no tenants: drain it and the backend's
// rebalancer (internal/rebalance) moves them.
package engineinstances

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend/internal/output"
	"github.com/gitops-service/gitops-service/backend/internal/placement"
)

// MaxWeight is the largest capacity weight the command accepts (100 is a standard
// instance).
const MaxWeight = 10000

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
}

// NewCommand returns the engine-instances command and its verbs. The caller adds the
// database flags (to its persistent flags, so that they go before or after the verb).
func (c *Command) NewCommand() *cobra.Command {
	group := manageropts.NewGroup("engine-instances", "List, register, weigh, drain and deregister GitOps engine instances; simulate placement",
		c.listCommand(), c.registerCommand(), c.setClusterCredentialsCommand(), c.setWeightCommand(),
		c.updateCommand("drain", "Place no new tenants on the instance",
			func(ei *db.EngineInstance) { ei.State = db.EngineInstanceDraining }),
		c.updateCommand("undrain", "Place new tenants on the instance again",
			func(ei *db.EngineInstance) { ei.State = db.EngineInstanceActive }),
		c.deregisterCommand(), c.simulateCommand())
	group.Long = `Manage the GitOps engine (Argo CD) instances tenants are placed on.

Weights are relative; 100 (the default) is a standard instance. A drained or weight-0
instance gets no new tenants; the backend's rebalancer moves tenants off drained
instances.`
	return group
}

func (c *Command) listCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List engine instances with their tenant counts and how the backend reaches their cluster",
		Long: `List engine instances with their tenant counts and how the backend reaches their cluster:
stored-credentials, or in-cluster (none stored: reached only if it is the backend's own
--engine-cluster).`,
		Args: manageropts.NoArgs,
	}
	format := output.AddFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(idb bun.IDB) error {
			return c.list(cmd.Context(), idb, cmd.OutOrStdout(), *format)
		})
	}
	return cmd
}

func (c *Command) registerCommand() *cobra.Command {
	var namespace, cluster, namespaceUID, kubeconfig string
	var weight int
	cmd := &cobra.Command{
		Use:   "register --namespace NS",
		Short: "Register the instance in a namespace of an engine cluster (idempotent); prints its id",
		Args:  manageropts.NoArgs,
	}
	cmd.Flags().StringVar(&namespace, "namespace", "", "Namespace of the engine (Argo CD) instance.")
	cmd.Flags().StringVar(&cluster, "cluster", "default", "Name of the engine cluster the namespace is on; \"default\" is the backend's own.")
	cmd.Flags().IntVar(&weight, "weight", 100, "Capacity weight (relative; 100 is a standard instance, 0 takes no new tenants).")
	cmd.Flags().StringVar(&namespaceUID, "namespace-uid", "", "UID of the namespace; read from the cluster with --kubeconfig when empty.")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the engine cluster (default: $KUBECONFIG, in-cluster, ~/.kube/config).")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if namespace == "" || cluster == "" {
			return manageropts.UsageErrorf("register needs --namespace and --cluster")
		}
		if err := checkWeight(weight); err != nil {
			return err
		}
		var w *int
		if cmd.Flags().Changed("weight") {
			w = &weight
		}
		uid, err := c.namespaceUID(cmd.Context(), namespaceUID, kubeconfig, namespace)
		if err != nil {
			return err
		}
		return c.withDB(cmd.Context(), func(idb bun.IDB) error {
			ei, err := Register(cmd.Context(), idb, c.Store, cluster, namespace, uid, w)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), ei.ID)
			return err
		})
	}
	return cmd
}

// namespaceUID is uid, else the UID read from the cluster.
func (c *Command) namespaceUID(ctx context.Context, uid, kubeconfig, namespace string) (string, error) {
	if uid != "" {
		return uid, nil
	}
	read := c.NamespaceUID
	if read == nil {
		read = ReadNamespaceUID
	}
	uid, err := read(ctx, kubeconfig, namespace)
	if err != nil {
		return "", fmt.Errorf("reading the UID of namespace %s (or pass --namespace-uid): %w", namespace, err)
	}
	return uid, nil
}

func (c *Command) setClusterCredentialsCommand() *cobra.Command {
	var cluster, kubeconfig, kubeContext string
	cmd := &cobra.Command{
		Use:   "set-cluster-credentials --cluster C --kubeconfig F",
		Short: "Store how the backend reaches an engine cluster that is not its own",
		Long: `Store how the backend reaches engine cluster C, when it is not the backend's own
cluster: the kubeconfig's context (files it names inlined; no credential plugins),
encrypted with --credentials-keys-file. Operation CRs of C's instances are then created
there. Run it before the first cluster-agent of C starts.`,
		Args: manageropts.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.setClusterCredentials(cmd.Context(), cmd.OutOrStdout(), cluster, kubeconfig, kubeContext)
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "Name of the engine cluster, as its cluster-agents' --engine-cluster says.")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig file of the engine cluster.")
	cmd.Flags().StringVar(&kubeContext, "context", "", "Context of the kubeconfig to use (default: its current context).")
	return cmd
}

func (c *Command) setWeightCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "set-weight ID W",
		Short: "Set the capacity weight of an instance (0: no new tenants)",
		Args:  manageropts.ExactArgs("ID", "W"),
		RunE: func(cmd *cobra.Command, args []string) error {
			weight, err := strconv.Atoi(args[1])
			if err != nil {
				return manageropts.UsageErrorf("weight %q is not an integer", args[1])
			}
			if err := checkWeight(weight); err != nil {
				return err
			}
			return c.update(cmd, args[0], func(ei *db.EngineInstance) { ei.CapacityWeight = weight })
		},
	}
}

func checkWeight(weight int) error {
	if weight < 0 || weight > MaxWeight {
		return manageropts.UsageErrorf("weight %d is outside 0..%d", weight, MaxWeight)
	}
	return nil
}

func (c *Command) updateCommand(verb, short string, change func(*db.EngineInstance)) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  manageropts.ExactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.update(cmd, args[0], change)
		},
	}
}

func (c *Command) deregisterCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "deregister ID",
		Short: "Delete an instance; refused while tenants are placed on it",
		Long: `Delete an engine instance; refused while tenants are placed on it (drain it first: the
backend's rebalancer then moves them). Stop its cluster-agent first: an agent registers
its instance again when it starts.`,
		Args: manageropts.ExactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withDB(cmd.Context(), func(idb bun.IDB) error {
				return Deregister(cmd.Context(), idb, c.Store, args[0])
			})
		},
	}
}

func (c *Command) simulateCommand() *cobra.Command {
	var instances, tenants int
	var epsilon float64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate placement and rebalancing on equal instances (no database)",
		Long: `Place --tenants tenants on --instances instances of equal weight, add one instance, drain
one, and print the loads and the tenants moved. Needs no database.`,
		Args: manageropts.NoArgs,
	}
	cmd.Flags().IntVar(&instances, "instances", 10, "Engine instances of equal weight (2 to 1000).")
	cmd.Flags().IntVar(&tenants, "tenants", 10000, "Tenants placed one after the other (1 to 1000000).")
	cmd.Flags().Float64Var(&epsilon, "epsilon", placement.DefaultEpsilon, "ε: how far above its weighted share an instance may go.")
	cmd.Flags().BoolVar(&asJSON, "json", false, "Print one JSON object instead of a table.")
	_ = cmd.Flags().MarkDeprecated("json", "use -o json")
	format := output.AddFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if instances < 2 || instances > 1000 || tenants < 1 || tenants > 1000000 {
			return manageropts.UsageErrorf("simulate needs 2 to 1000 instances and 1 to 1000000 tenants")
		}
		if !(epsilon > 0) || math.IsInf(epsilon, 1) {
			return manageropts.UsageErrorf("epsilon %v is not a positive number", epsilon)
		}
		if asJSON {
			*format = output.JSON
		}
		return simulate(cmd.OutOrStdout(), *format, instances, tenants, epsilon)
	}
	return cmd
}

// withDB opens the database, runs f and closes it.
func (c *Command) withDB(ctx context.Context, f func(bun.IDB) error) error {
	idb, closeDB, err := c.Open(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	return f(idb)
}

// Register gets or creates the engine cluster called cluster and the engine instance of
// the namespace (identified by its UID, as the cluster-agent registers it), and sets its
// capacity weight unless weight is nil (a new instance then gets the default, 100). An
// instance already registered keeps its id and state.
func Register(ctx context.Context, idb bun.IDB, store *db.Store, cluster, namespace, namespaceUID string, weight *int) (*db.EngineInstance, error) {
	var ei *db.EngineInstance
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if _, ei, err = store.RegisterEngineInstance(ctx, tx, cluster, namespace, namespaceUID); err != nil {
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

func (c *Command) update(cmd *cobra.Command, id string, change func(*db.EngineInstance)) error {
	ctx := cmd.Context()
	return c.withDB(ctx, func(idb bun.IDB) error {
		return idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			ei, err := c.Store.GetEngineInstance(ctx, tx, id)
			if err != nil {
				return err
			}
			change(ei)
			if err := c.Store.UpdateEngineInstance(ctx, tx, ei); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "engine instance %s: weight %d, %s\n", ei.ID, ei.CapacityWeight, ei.State)
			return err
		})
	})
}

// simulate prints placement.Simulate's result: a table, or one JSON or YAML object.
func simulate(w io.Writer, format output.Format, instances, tenants int, epsilon float64) error {
	res := placement.Simulate(instances, tenants, epsilon)
	return output.Write(w, format, res, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintf(tw, "instances, tenants, epsilon\t%d, %d, %g\n", res.Instances, res.Tenants, res.Epsilon)
		_, _ = fmt.Fprintf(tw, "after placing\tmax %d, min %d, max/min %.3f\n", res.MaxLoad, res.MinLoad, res.MaxOverMin)
		_, _ = fmt.Fprintf(tw, "after adding an instance\tmoved %.2f%% (ideal %.2f%%), max/min %.3f\n",
			100*res.AddedInstanceMovedShare, 100*res.AddedInstanceIdealShare, res.MaxOverMinAfterAdd)
		_, _ = fmt.Fprintf(tw, "after draining an instance\tmoved %.2f%% (ideal %.2f%%), max/min %.3f\n",
			100*res.RemovedInstanceMovedShare, 100*res.RemovedInstanceIdealShare, res.MaxOverMinAfterRemove)
		_, _ = fmt.Fprintf(tw, "seconds\t%.2f\n", res.Seconds)
		return tw.Flush()
	})
}

// instanceRow is a line of the list verb's output.
type instanceRow struct {
	ID        string `json:"id"`
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Weight    int    `json:"weight"`
	State     string `json:"state"`
	Tenants   int    `json:"tenants"`
	// Access is how the backend reaches the instance's cluster to signal it.
	Access string `json:"access"`
}

func (c *Command) list(ctx context.Context, idb bun.IDB, w io.Writer, format output.Format) error {
	rows, err := c.instanceRows(ctx, idb)
	if err != nil {
		return err
	}
	return output.List(w, format, rows,
		output.Column[instanceRow]{Header: "ID", Cell: func(r instanceRow) string { return r.ID }},
		output.Column[instanceRow]{Header: "CLUSTER", Cell: func(r instanceRow) string { return r.Cluster }},
		output.Column[instanceRow]{Header: "NAMESPACE", Cell: func(r instanceRow) string { return r.Namespace }},
		output.Column[instanceRow]{Header: "WEIGHT", Cell: func(r instanceRow) string { return strconv.Itoa(r.Weight) }},
		output.Column[instanceRow]{Header: "STATE", Cell: func(r instanceRow) string { return r.State }},
		output.Column[instanceRow]{Header: "TENANTS", Cell: func(r instanceRow) string { return strconv.Itoa(r.Tenants) }},
		output.Column[instanceRow]{Header: "ACCESS", Cell: func(r instanceRow) string { return r.Access }})
}

func (c *Command) instanceRows(ctx context.Context, idb bun.IDB) ([]instanceRow, error) {
	instances, err := c.Store.ListEngineInstances(ctx, idb)
	if err != nil {
		return nil, err
	}
	clusters, err := c.Store.ListEngineClusters(ctx, idb)
	if err != nil {
		return nil, err
	}
	names, access := map[string]string{}, map[string]string{}
	for _, cl := range clusters {
		names[cl.ID] = cl.Name
		access[cl.ID] = "in-cluster"
		if cl.ClusterCredentialsID != "" {
			access[cl.ID] = "stored-credentials"
		}
	}
	loads, err := c.Store.CountTenantsByEngineInstance(ctx, idb)
	if err != nil {
		return nil, err
	}
	rows := make([]instanceRow, 0, len(instances))
	for _, ei := range instances {
		rows = append(rows, instanceRow{ID: ei.ID, Cluster: names[ei.EngineClusterID], Namespace: ei.NamespaceName,
			Weight: ei.CapacityWeight, State: string(ei.State), Tenants: loads[ei.ID], Access: access[ei.EngineClusterID]})
	}
	return rows, nil
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
