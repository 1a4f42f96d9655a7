// Package operations is `backend operations`: the operators' view of the Operations the
// backend asked the engine instances to carry out. Their state is in the database only:
// the Operation CRs carry none.
package operations

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/uptrace/bun"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend/internal/output"
)

// Store is what the command reads.
type Store interface {
	ListOperations(ctx context.Context, idb bun.IDB, f db.OperationFilter) ([]db.Operation, error)
}

// Command is `backend operations`.
type Command struct {
	// Open opens the database once the flags are parsed; the function it returns closes it.
	Open  func(ctx context.Context) (bun.IDB, func(), error)
	Store Store
	// Now is the time ages are counted to (nil: time.Now).
	Now func() time.Time
}

// states are the operation states --state accepts.
var states = []db.OperationState{db.OperationWaiting, db.OperationInProgress, db.OperationCompleted, db.OperationFailed}

// NewCommand returns the operations command and its verbs. The caller adds the database
// flags (to its persistent flags, so that they go before or after the verb).
func (c *Command) NewCommand() *cobra.Command {
	return manageropts.NewGroup("operations", "List the operations the backend asked of the engine instances", c.listCommand())
}

func (c *Command) listCommand() *cobra.Command {
	var state, engineInstance string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List operations, newest first",
		Long: `List the operations the backend asked of the engine instances, newest first: what each
is about, its state (Waiting, In_Progress, Completed, Failed) and the cluster-agent's
message. Finished operations are deleted after the backend's --operation-retention.`,
		Example: `  backend operations list --state Failed
  backend operations list --engine-instance ID --limit 10 -o json`,
		Args: manageropts.NoArgs,
	}
	cmd.Flags().StringVar(&state, "state", "", "Only operations in this state: "+stateNames()+".")
	cmd.Flags().StringVar(&engineInstance, "engine-instance", "", "Only operations of this engine instance: its ID, as \"backend engine-instances list\" shows.")
	cmd.Flags().IntVar(&limit, "limit", 100, "Most operations listed; 0 lists them all.")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(strings.Split(stateNames(), ", "), cobra.ShellCompDirectiveNoFileComp))
	format := output.AddFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		filter, err := newFilter(state, engineInstance, limit)
		if err != nil {
			return err
		}
		return c.list(cmd.Context(), cmd.OutOrStdout(), *format, filter)
	}
	return cmd
}

func stateNames() string {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// newFilter checks the flags of list; a state may be given in any case.
func newFilter(state, engineInstance string, limit int) (db.OperationFilter, error) {
	f := db.OperationFilter{EngineInstanceID: engineInstance, Limit: limit}
	if limit < 0 {
		return f, manageropts.UsageErrorf("--limit %d is negative", limit)
	}
	if state == "" {
		return f, nil
	}
	for _, s := range states {
		if strings.EqualFold(state, string(s)) {
			f.State = s
			return f, nil
		}
	}
	return f, manageropts.UsageErrorf("--state %q is not one of %s", state, stateNames())
}

// Row is a line of the list verb's output.
type Row struct {
	ID               string    `json:"id"`
	EngineInstanceID string    `json:"engineInstanceID"`
	ResourceType     string    `json:"resourceType"`
	ResourceID       string    `json:"resourceID"`
	State            string    `json:"state"`
	Message          string    `json:"message"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
}

func (c *Command) list(ctx context.Context, w io.Writer, format output.Format, filter db.OperationFilter) error {
	idb, closeDB, err := c.Open(ctx)
	if err != nil {
		return err
	}
	defer closeDB()
	ops, err := c.Store.ListOperations(ctx, idb, filter)
	if errors.Is(err, db.ErrInvalid) {
		return manageropts.UsageErrorf("--engine-instance %q is not an engine instance id (see `backend engine-instances list`)", filter.EngineInstanceID)
	}
	if err != nil {
		return err
	}
	rows := make([]Row, 0, len(ops))
	for _, op := range ops {
		rows = append(rows, Row{ID: op.ID, EngineInstanceID: op.EngineInstanceID, ResourceType: string(op.ResourceType),
			ResourceID: op.ResourceID, State: string(op.State), Message: op.HumanReadableState,
			CreatedAt: op.CreatedAt.UTC(), UpdatedAt: op.UpdatedAt.UTC()})
	}
	return output.List(w, format, rows, c.columns()...)
}

func (c *Command) columns() []output.Column[Row] {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	return []output.Column[Row]{
		{Header: "ID", Cell: func(r Row) string { return r.ID }},
		{Header: "ENGINE INSTANCE", Cell: func(r Row) string { return r.EngineInstanceID }},
		{Header: "RESOURCE TYPE", Cell: func(r Row) string { return r.ResourceType }},
		{Header: "RESOURCE ID", Cell: func(r Row) string { return r.ResourceID }},
		{Header: "STATE", Cell: func(r Row) string { return r.State }},
		{Header: "AGE", Cell: func(r Row) string { return duration.HumanDuration(now.Sub(r.CreatedAt)) }},
		// One line per operation, whatever the message holds.
		{Header: "MESSAGE", Cell: func(r Row) string { return strings.Join(strings.Fields(r.Message), " ") }},
	}
}
