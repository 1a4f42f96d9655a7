// Package output prints what the backend's verbs report: a table for people by default, or
// the same data as JSON or YAML (-o json|yaml) for scripts.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Format is an output format: table, json or yaml.
type Format string

// The formats.
const (
	Table Format = "table"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

var formats = []string{string(Table), string(JSON), string(YAML)}

// String, Set and Type make a Format a flag value.
func (f *Format) String() string { return string(*f) }

// Set accepts one of the formats.
func (f *Format) Set(s string) error {
	for _, name := range formats {
		if s == name {
			*f = Format(s)
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(formats, ", "))
}

// Type names the flag's value in the help.
func (f *Format) Type() string { return "format" }

// AddFlag adds -o/--output to cmd (table by default, completed by the shell) and returns
// the format it is set to.
func AddFlag(cmd *cobra.Command) *Format {
	f := Table
	cmd.Flags().VarP(&f, "output", "o", "Output format: "+strings.Join(formats, ", ")+".")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	return &f
}

// Write prints v as JSON or YAML, or with table for the table format.
func Write(w io.Writer, f Format, v any, table func(io.Writer) error) error {
	switch f {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case YAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	default:
		return table(w)
	}
}

// Column is a column of a table of T: its header and a row's cell.
type Column[T any] struct {
	Header string
	Cell   func(T) string
}

// List prints items as a table of columns, or as a JSON or YAML list (empty, never null,
// when there are none).
func List[T any](w io.Writer, f Format, items []T, columns ...Column[T]) error {
	if items == nil {
		items = []T{}
	}
	return Write(w, f, items, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		headers := make([]string, len(columns))
		for i, c := range columns {
			headers[i] = c.Header
		}
		_, _ = fmt.Fprintln(tw, strings.Join(headers, "\t"))
		cells := make([]string, len(columns))
		for _, item := range items {
			for i, c := range columns {
				cells[i] = c.Cell(item)
			}
			_, _ = fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		return tw.Flush()
	})
}
