package output_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"

	"github.com/gitops-service/gitops-service/backend/internal/output"
)

// newCommand is a verb with -o that prints a fixed value.
func newCommand(out io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "list", SilenceUsage: true, SilenceErrors: true}
	format := output.AddFlag(cmd)
	cmd.RunE = func(*cobra.Command, []string) error {
		return output.Write(out, *format, map[string]int{"instances": 2}, func(w io.Writer) error {
			_, err := io.WriteString(w, "INSTANCES\n2\n")
			return err
		})
	}
	return cmd
}

func TestOutputFlag(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "a table by default", want: "INSTANCES\n2\n"},
		{name: "-o json", args: []string{"-o", "json"}, want: "{\n  \"instances\": 2\n}\n"},
		{name: "--output=yaml", args: []string{"--output=yaml"}, want: "instances: 2\n"},
		{name: "-o table", args: []string{"-o", "table"}, want: "INSTANCES\n2\n"},
		{name: "an unknown format is refused", args: []string{"-o", "wide"},
			wantErr: `invalid argument "wide" for "-o, --output" flag: want one of table, json, yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			cmd := newCommand(&out)
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(tt.wantErr))
				g.Expect(out.String()).To(BeEmpty(), "nothing printed for a refused format")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.String()).To(Equal(tt.want))
		})
	}
}

func TestOutputFlagHelpAndCompletion(t *testing.T) {
	g := NewWithT(t)
	cmd := newCommand(io.Discard)
	flag := cmd.Flags().Lookup("output")
	g.Expect(flag).NotTo(BeNil())
	g.Expect(flag.Shorthand).To(Equal("o"))
	g.Expect(flag.DefValue).To(Equal("table"))
	g.Expect(flag.Value.Type()).To(Equal("format"))
	g.Expect(flag.Usage).To(Equal("Output format: table, json, yaml."))

	// The shell completes the three formats, and no file names.
	var out bytes.Buffer
	root := &cobra.Command{Use: "backend"}
	root.AddCommand(cmd)
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs([]string{cobra.ShellCompRequestCmd, "list", "-o", ""})
	g.Expect(root.Execute()).To(Succeed())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(Equal([]string{"table", "json", "yaml", ":4"}))
}

func TestWriteTableErrorsPassThrough(t *testing.T) {
	g := NewWithT(t)
	failure := errors.New("terminal gone")
	err := output.Write(io.Discard, output.Table, nil, func(io.Writer) error { return failure })
	g.Expect(err).To(MatchError(failure))
	// JSON and YAML never call the table.
	for _, f := range []output.Format{output.JSON, output.YAML} {
		g.Expect(output.Write(io.Discard, f, 1, func(io.Writer) error { return failure })).To(Succeed())
	}
}

// A value JSON cannot encode is an error, not half a document.
func TestWriteUnencodable(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(output.Write(&out, output.JSON, map[string]any{"f": func() {}}, nil)).To(HaveOccurred())
	g.Expect(out.String()).To(BeEmpty())
	g.Expect(output.Write(&out, output.YAML, map[string]any{"c": make(chan int)}, nil)).To(HaveOccurred())
	g.Expect(out.String()).To(BeEmpty())
}

type instance struct {
	Name    string `json:"name"`
	Weight  int    `json:"weight"`
	Drained bool   `json:"drained,omitempty"`
}

// Columns line up whatever the cells' widths, and JSON/YAML keep the items' own field names.
func TestListOfSeveralColumns(t *testing.T) {
	g := NewWithT(t)
	items := []instance{{"default/argocd", 100, false}, {"east/argocd-2", 5, true}}
	columns := []output.Column[instance]{
		{Header: "NAME", Cell: func(i instance) string { return i.Name }},
		{Header: "WEIGHT", Cell: func(i instance) string { return strings.Repeat("*", i.Weight/50) }},
		{Header: "STATE", Cell: func(i instance) string {
			if i.Drained {
				return "Drained"
			}
			return "Active"
		}},
	}
	var table bytes.Buffer
	g.Expect(output.List(&table, output.Table, items, columns...)).To(Succeed())
	g.Expect(table.String()).To(Equal("NAME            WEIGHT  STATE\n" +
		"default/argocd  **      Active\n" +
		"east/argocd-2           Drained\n"))

	var yaml bytes.Buffer
	g.Expect(output.List(&yaml, output.YAML, items, columns...)).To(Succeed())
	g.Expect(yaml.String()).To(Equal("- name: default/argocd\n  weight: 100\n- drained: true\n  name: east/argocd-2\n  weight: 5\n"))
}
