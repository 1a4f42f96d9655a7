package manageropts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ErrUsage matches (errors.Is) the errors of a command line the binary cannot run: an
// unknown verb, a stray or missing argument, an unknown or malformed flag.
var ErrUsage = errors.New("usage")

// usageError keeps the message of the error it wraps and matches ErrUsage.
type usageError struct{ err error }

func (e *usageError) Error() string        { return e.err.Error() }
func (e *usageError) Unwrap() error        { return e.err }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

// UsageErrorf returns a usage error (see ErrUsage).
func UsageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// flagUsageError makes a malformed or unknown flag a usage error.
func flagUsageError(_ *cobra.Command, err error) error { return &usageError{err} }

// NoArgs refuses every positional argument. On a command with verbs the argument is an
// unknown verb, named with the closest verbs; elsewhere it is a stray argument.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasAvailableSubCommands() {
		return UsageErrorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), suggestions(cmd, args[0]))
	}
	return UsageErrorf("%q takes no arguments, got %q", cmd.CommandPath(), args)
}

// ExactArgs accepts exactly the arguments named by names (for the error message).
func ExactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		return UsageErrorf("%q takes %d arguments (%s), got %d: %q",
			cmd.CommandPath(), len(names), strings.Join(names, " "), len(args), args)
	}
}

func suggestions(cmd *cobra.Command, typed string) string {
	found := cmd.SuggestionsFor(typed)
	if len(found) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(found, "\n\t") + "\n"
}

// NewGroup returns a command that only holds verbs: without one it prints its help, and an
// unknown one is an error. (A cobra command that cannot run prints its help for any
// argument and succeeds.)
func NewGroup(use, short string, verbs ...*cobra.Command) *cobra.Command {
	group := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	group.SetFlagErrorFunc(flagUsageError) // also when the group is a tree of its own
	group.AddCommand(verbs...)
	return group
}

// Main runs root with the process's arguments, its context cancelled on SIGTERM or
// SIGINT, and exits with status 1 on an error.
func Main(root *cobra.Command) {
	if err := Execute(ctrl.SetupSignalHandler(), root, os.Args[1:]); err != nil {
		os.Exit(1)
	}
}

// Execute runs root with args. Errors are printed to root's error output (cobra's
// "Error: ..."), with a pointer to the help after a usage error.
func Execute(ctx context.Context, root *cobra.Command, args []string) error {
	root.SetArgs(doubleDashed(root, args))
	warnOn(root, root.ErrOrStderr())
	cmd, err := root.ExecuteContextC(ctx)
	if errors.Is(err, ErrUsage) {
		root.PrintErrf("Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return err
}

// warnOn makes the flags of cmd and its verbs print their warnings (a deprecated flag)
// to w: cobra prints them to the standard output when one is set.
func warnOn(cmd *cobra.Command, w io.Writer) {
	cmd.Flags().SetOutput(w)
	for _, sub := range cmd.Commands() {
		warnOn(sub, w)
	}
}

// doubleDashed returns args with -name and -name=value turned into --name... where name
// is a long flag of the command args run: Go's flag package, which the binaries used
// before, accepted one dash, and command lines written for it keep working (with a
// warning). Single letters stay shorthands.
func doubleDashed(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		cmd = root
	}
	out := make([]string, 0, len(args))
	for i, arg := range args {
		if arg == "--" {
			return append(out, args[i:]...)
		}
		if name, ok := singleDashName(arg); ok && isLongFlag(cmd, name) {
			root.PrintErrf("Flag -%s: use --%s; one dash is deprecated.\n", name, name)
			arg = "-" + arg
		}
		out = append(out, arg)
	}
	return out
}

// singleDashName is the name of -name or -name=value (at least two letters).
func singleDashName(arg string) (string, bool) {
	if len(arg) < 3 || arg[0] != '-' || arg[1] == '-' {
		return "", false
	}
	name, _, _ := strings.Cut(arg[1:], "=")
	return name, len(name) > 1
}

func isLongFlag(cmd *cobra.Command, name string) bool {
	// cobra adds --help when it runs the command.
	return name == "help" || cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil
}
