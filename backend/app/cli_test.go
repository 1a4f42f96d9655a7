package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts/clitest"
	"github.com/gitops-service/gitops-service/backend/app"
)

// setupRecorder is a Setup that records the options the command line parsed and stops
// there, before the controllers start.
type setupRecorder struct {
	calls int
	opts  app.Options
}

func (r *setupRecorder) command() *cobra.Command {
	return app.NewCommandWithSetup(func(o *app.Options, _ context.Context, _ ctrl.Manager, _ logr.Logger) error {
		r.calls++
		r.opts = *o
		return errors.New("setup called")
	})
}

// databaseArgs are the flags of a fresh database of the test's PostgreSQL.
func databaseArgs(t *testing.T) []string {
	return []string{"--database-url=" + dbtest.NewConfig(t).URL, "--database-allow-insecure"}
}

func TestCommandLine(t *testing.T) {
	clitest.TestControllerBinary(t, "backend", "../../manifests/base/backend/deployment.yaml", func(setups *int) *cobra.Command {
		return app.NewCommandWithSetup(func(*app.Options, context.Context, ctrl.Manager, logr.Logger) error {
			*setups++
			return errors.New("setup called")
		})
	},
		clitest.Case{Name: "a group without a verb prints its help", Args: []string{"engine-instances"}, Stdout: "Available Commands:"},
		clitest.Case{Name: "unknown verb after flags", Args: []string{"--leader-elect=true", "migrat"}, Usage: `unknown command "migrat"`},
		clitest.Case{Name: "an unknown state", Args: []string{"operations", "list", "--state=Done"}, Usage: `--state "Done" is not one of`},
		clitest.Case{Name: "unknown verb of a group", Args: []string{"engine-instances", "lis"}, Usage: `unknown command "lis" for "backend engine-instances"`},
		clitest.Case{Name: "stray argument of migrate", Args: []string{"migrate", "extra"}, Usage: `unknown command "extra" for "backend migrate"`},
		clitest.Case{Name: "force without a version", Args: []string{"migrate", "force"}, Usage: "takes 1 arguments (VERSION), got 0"},
		clitest.Case{Name: "force without confirmation", Args: []string{"migrate", "force", "3"}, Usage: "confirm with --yes"},
		clitest.Case{Name: "force to a word", Args: []string{"migrate", "force", "latest", "--yes"}, Usage: `VERSION "latest" is not a schema version`},
		clitest.Case{Name: "stray argument of list", Args: []string{"engine-instances", "list", "extra"}, Usage: "takes no arguments"},
		clitest.Case{Name: "missing argument", Args: []string{"engine-instances", "drain"}, Usage: "takes 1 arguments (ID), got 0"},
		clitest.Case{Name: "a controller flag on a verb", Args: []string{"migrate", "--leader-elect"}, Usage: "unknown flag: --leader-elect"},
		clitest.Case{Name: "an unknown output format", Args: []string{"engine-instances", "list", "-o", "xml"}, Usage: `invalid argument "xml"`},
		clitest.Case{Name: "rotate-keys without keys", Args: []string{"rotate-keys", "--credentials-keys-file="}, Usage: "--credentials-keys-file is required"},
	)
}

func TestFlagsOnlyRunTheControllersWithTheirOptions(t *testing.T) {
	t.Setenv("KUBECONFIG", cp.KubeconfigPath)
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
		want   func(g Gomega, o app.Options)
	}{
		{name: "defaults", want: func(g Gomega, o app.Options) {
			g.Expect(o.OperationRetention).To(Equal(app.DefaultOperationRetention))
			g.Expect(o.MigrateOnStart).To(BeTrue())
			g.Expect(o.EngineNamespace).To(Equal("gitops-service-argocd"))
		}},
		{name: "flags", args: []string{"--engine-namespace=argocd-x", "--sweep-interval=90s", "--operation-retention=2m",
			"--migrate=false", "--database-url=postgres://db.example.com/gitops"}, want: func(g Gomega, o app.Options) {
			g.Expect(o.EngineNamespace).To(Equal("argocd-x"))
			g.Expect(o.SweepInterval).To(Equal(90 * time.Second))
			g.Expect(o.OperationRetention).To(Equal(2 * time.Minute))
			g.Expect(o.MigrateOnStart).To(BeFalse())
			g.Expect(o.Database.URL).To(Equal("postgres://db.example.com/gitops"))
		}},
		{name: "the retention in seconds, as before", args: []string{"--operation-gc-seconds=90"},
			stderr: "Flag --operation-gc-seconds has been deprecated, use --operation-retention",
			want:   func(g Gomega, o app.Options) { g.Expect(o.OperationRetention).To(Equal(90 * time.Second)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &setupRecorder{}
			args := append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, tc.args...)
			res := clitest.Run(t, r.command(), args...)
			g.Expect(res.Err).To(MatchError("setup called"))
			g.Expect(res.Stderr).To(ContainSubstring(tc.stderr))
			g.Expect(r.calls).To(Equal(1))
			tc.want(g, r.opts)
		})
	}
}

func TestDeprecatedFlagsAreHidden(t *testing.T) {
	g := NewWithT(t)
	res := clitest.Run(t, app.NewCommand(), "--help")
	g.Expect(res.Err).NotTo(HaveOccurred())
	g.Expect(res.Stdout).To(ContainSubstring("--operation-retention duration"))
	g.Expect(res.Stdout).NotTo(ContainSubstring("operation-gc-seconds"))
}

func TestEveryVerbIsThere(t *testing.T) {
	NewWithT(t).Expect(clitest.Verbs(app.NewCommand())).To(ContainElements([]string{"migrate"}, []string{"migrate", "status"}, []string{"migrate", "force"}, []string{"rotate-keys"},
		[]string{"engine-instances", "list"}, []string{"engine-instances", "simulate"}, []string{"operations", "list"}, []string{"version"},
		[]string{"completion", "zsh"}))
}

func TestMigrateAndListAsJSON(t *testing.T) {
	g := NewWithT(t)
	database := databaseArgs(t)
	res := clitest.Run(t, app.NewCommand(), append([]string{"migrate"}, database...)...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	g.Expect(res.Stdout).To(MatchRegexp(`^database schema at version \d+\n$`))

	// The database flags go before or after the verb.
	res = clitest.Run(t, app.NewCommand(), append(append([]string{"engine-instances"}, database...),
		"register", "--namespace=argocd-a", "--namespace-uid=2b0f6a3c-9c3e-4a43-8f7e-3a1c54a7d1e0", "--weight=50")...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	id := strings.TrimSpace(res.Stdout)

	res = clitest.Run(t, app.NewCommand(), append([]string{"engine-instances", "list", "-o", "json"}, database...)...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	var rows []map[string]any
	g.Expect(json.Unmarshal([]byte(res.Stdout), &rows)).To(Succeed(), res.Stdout)
	g.Expect(rows).To(ConsistOf(And(HaveKeyWithValue("id", id), HaveKeyWithValue("namespace", "argocd-a"),
		HaveKeyWithValue("weight", 50.0), HaveKeyWithValue("state", string(db.EngineInstanceActive)))))

	res = clitest.Run(t, app.NewCommand(), append([]string{"operations", "list", "-o", "json"}, database...)...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	g.Expect(res.Stdout).To(Equal("[]\n"))
	res = clitest.Run(t, app.NewCommand(), append([]string{"operations", "list"}, database...)...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	g.Expect(res.Stdout).To(MatchRegexp(`^ID\s+ENGINE INSTANCE\s+RESOURCE TYPE\s+RESOURCE ID\s+STATE\s+AGE\s+MESSAGE\n$`))
}

// TestMigrateStatusAndForce: an operator finds a dirty schema with migrate status, and
// clears the mark with migrate force once the schema is checked; the backend then starts.
func TestMigrateStatusAndForce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cfg := dbtest.NewConfig(t)
	database := []string{"--database-url=" + cfg.URL, "--database-allow-insecure"}
	latest, err := db.LatestSchemaVersion()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = dbtest.Open(t, cfg).ExecContext(ctx, `UPDATE schema_migrations SET dirty = true`)
	g.Expect(err).NotTo(HaveOccurred())

	res := clitest.Run(t, app.NewCommand(), append([]string{"migrate", "status"}, database...)...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	g.Expect(res.Stdout).To(ContainSubstring(fmt.Sprintf("schema version:   %d\n", latest)))
	g.Expect(res.Stdout).To(ContainSubstring("dirty:            true\n"))
	g.Expect(res.Stdout).To(ContainSubstring("backend migrate force VERSION --yes"))

	res = clitest.Run(t, app.NewCommand(), append([]string{"migrate"}, database...)...)
	g.Expect(res.Err).To(MatchError(ContainSubstring("dirty at version %d", latest)))

	res = clitest.Run(t, app.NewCommand(), append([]string{"migrate", "force", fmt.Sprint(latest), "--yes"}, database...)...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	g.Expect(res.Stdout).To(Equal(fmt.Sprintf("database schema marked at version %d, clean (it was at version %d (dirty))\n", latest, latest)))

	res = clitest.Run(t, app.NewCommand(), append([]string{"migrate", "status"}, database...)...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	g.Expect(res.Stdout).To(ContainSubstring("dirty:            false\n"))
	g.Expect(res.Stdout).NotTo(ContainSubstring("pending"))
	g.Expect(db.SchemaState(ctx, cfg)).To(HaveField("Dirty", false))
	res = clitest.Run(t, app.NewCommand(), append([]string{"migrate"}, database...)...)
	g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
}

func TestOperationRetention(t *testing.T) {
	for _, tc := range []struct {
		retention time.Duration
		seconds   int
	}{
		{0, 0}, {time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {10 * time.Minute, 600},
	} {
		NewWithT(t).Expect(app.WholeSeconds(tc.retention)).To(Equal(tc.seconds), "%s", tc.retention)
	}
	err := (&app.Options{OperationRetention: -time.Second}).Setup(context.Background(), nil, logr.Discard())
	NewWithT(t).Expect(err).To(MatchError("--operation-retention -1s is negative"))
}
