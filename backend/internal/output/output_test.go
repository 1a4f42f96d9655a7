package output_test

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend/internal/output"
)

type row struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

var columns = []output.Column[row]{
	{Header: "NAME", Cell: func(r row) string { return r.Name }},
	{Header: "A LONG HEADER", Cell: func(r row) string { return "x" }},
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		format output.Format
		rows   []row
		want   string
	}{
		{output.Table, []row{{"a", 1}, {"longer", 2}}, "NAME    A LONG HEADER\na       x\nlonger  x\n"},
		{output.Table, nil, "NAME  A LONG HEADER\n"},
		{output.JSON, []row{{"a", 1}}, "[\n  {\n    \"name\": \"a\",\n    \"count\": 1\n  }\n]\n"},
		{output.JSON, nil, "[]\n"},
		{output.YAML, []row{{"a", 1}}, "- count: 1\n  name: a\n"},
		{output.YAML, nil, "[]\n"},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			var out bytes.Buffer
			NewWithT(t).Expect(output.List(&out, tc.format, tc.rows, columns...)).To(Succeed())
			NewWithT(t).Expect(out.String()).To(Equal(tc.want))
		})
	}
}

func TestFormatFlagValue(t *testing.T) {
	g := NewWithT(t)
	var f output.Format
	for _, ok := range []string{"table", "json", "yaml"} {
		g.Expect(f.Set(ok)).To(Succeed())
		g.Expect(f.String()).To(Equal(ok))
	}
	g.Expect(f.Set("JSON")).To(MatchError("want one of table, json, yaml"))
	g.Expect(f.Set("wide")).To(HaveOccurred())
}
