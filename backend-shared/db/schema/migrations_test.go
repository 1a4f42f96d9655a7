package schema_test

import (
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db/schema"
)

func TestLoad(t *testing.T) {
	files := func(kv ...string) fstest.MapFS {
		fsys := fstest.MapFS{}
		for i := 0; i < len(kv); i += 2 {
			fsys["m/"+kv[i]] = &fstest.MapFile{Data: []byte(kv[i+1])}
		}
		return fsys
	}
	for _, tc := range []struct {
		name  string
		fsys  fstest.MapFS
		want  []schema.Migration
		error string
	}{
		{
			name: "ordered by version, directive read",
			fsys: files(
				"000002_b.up.sql", "-- drops what binaries before 2 read\n-- compatible-from: 2\nDROP TABLE a;",
				"000002_b.down.sql", "CREATE TABLE a ();",
				"000001_a.up.sql", "CREATE TABLE a ();",
				"000001_a.down.sql", "DROP TABLE a;",
			),
			want: []schema.Migration{
				{Version: 1, Name: "a", Up: "CREATE TABLE a ();", Down: "DROP TABLE a;"},
				{Version: 2, Name: "b", Up: "-- drops what binaries before 2 read\n-- compatible-from: 2\nDROP TABLE a;", Down: "CREATE TABLE a ();", CompatibleFrom: 2},
			},
		},
		{name: "no down file", fsys: files("000001_a.up.sql", "SELECT 1;"), error: "needs both an up and a down file"},
		{name: "badly named", fsys: files("1-a.sql", "SELECT 1;"), error: "is not named"},
		{name: "version zero", fsys: files("000000_a.up.sql", "SELECT 1;", "000000_a.down.sql", "SELECT 1;"), error: "from 1"},
		{
			name:  "two names for a version",
			fsys:  files("000001_a.up.sql", "SELECT 1;", "000001_b.down.sql", "SELECT 1;"),
			error: "two names",
		},
		{
			name:  "compatible from a later version",
			fsys:  files("000001_a.up.sql", "-- compatible-from: 2\nSELECT 1;", "000001_a.down.sql", "SELECT 1;"),
			error: "newer than the migration",
		},
		{
			name:  "two directives",
			fsys:  files("000001_a.up.sql", "-- compatible-from: 1\n-- compatible-from: 1\nSELECT 1;", "000001_a.down.sql", "SELECT 1;"),
			error: "more than one",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := schema.Load(tc.fsys, "m")
			if tc.error != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.error)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestCompatibleFrom(t *testing.T) {
	migrations := []schema.Migration{{Version: 1}, {Version: 2, CompatibleFrom: 2}, {Version: 3}, {Version: 5, CompatibleFrom: 4}}
	for version, want := range map[uint]uint{0: 0, 1: 0, 2: 2, 3: 2, 5: 4, 9: 4} {
		if got := schema.CompatibleFrom(migrations, version); got != want {
			t.Errorf("CompatibleFrom(%d) = %d, want %d", version, got, want)
		}
	}
}

// TestJudge: what a binary built for one schema version does against each schema.
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		state  schema.State
		built  uint
		want   schema.Verdict
		reason string
	}{
		{name: "no schema yet", state: schema.State{}, built: 10, want: schema.Wait, reason: "waiting for the backend to migrate it"},
		{name: "older schema", state: schema.State{Version: 9}, built: 10, want: schema.Wait, reason: "at version 9 and this binary needs version 10"},
		{name: "its own schema", state: schema.State{Version: 10}, built: 10, want: schema.Run},
		{name: "newer compatible schema", state: schema.State{Version: 12, CompatibleFrom: 10}, built: 10, want: schema.Run},
		{name: "newer schema that only adds", state: schema.State{Version: 12}, built: 10, want: schema.Run},
		{
			name: "newer incompatible schema", state: schema.State{Version: 12, CompatibleFrom: 11}, built: 10, want: schema.Refuse,
			reason: "runs only binaries built for schema version 11 or later; this binary is built for version 10",
		},
		{name: "dirty at its own version", state: schema.State{Version: 10, Dirty: true}, built: 10, want: schema.Wait, reason: "dirty at version 10"},
		{name: "dirty at a newer version", state: schema.State{Version: 11, Dirty: true}, built: 10, want: schema.Wait, reason: "migrate force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			verdict, reason := schema.Judge(tc.state, tc.built)
			g.Expect(verdict).To(Equal(tc.want))
			if tc.reason == "" {
				g.Expect(reason).To(BeEmpty())
			} else {
				g.Expect(reason).To(ContainSubstring(tc.reason))
			}
		})
	}
}
