package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
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
	// No kubeconfig: running the controllers fails at once, and says the command line
	// chose them.
	t.Setenv("KUBECONFIG", "/nonexistent")
	const runsControllers = "loading kubeconfig"
	for _, tc := range []struct {
		name   string
		args   []string
		usage  string // a usage error containing this
		err    string // another error containing this
		stdout string
	}{
		{name: "the manifest's flags", args: clitest.DeploymentArgs(t, "../../manifests/base/backend/deployment.yaml"), err: runsControllers},
		{name: "no arguments", args: []string{}, err: runsControllers},
		{name: "version", args: []string{"version"}, stdout: "go: go1."},
		{name: "completion", args: []string{"completion", "bash"}, stdout: "__start_backend"},
		{name: "a group without a verb prints its help", args: []string{"engine-instances"}, stdout: "Available Commands:"},
		{name: "unknown verb", args: []string{"migrat"}, usage: `unknown command "migrat" for "backend"`},
		{name: "unknown verb after flags", args: []string{"--leader-elect=true", "migrat"}, usage: `unknown command "migrat"`},
		{name: "an unknown state", args: []string{"operations", "list", "--state=Done"}, usage: `--state "Done" is not one of`},
		{name: "unknown verb of a group", args: []string{"engine-instances", "lis"}, usage: `unknown command "lis" for "backend engine-instances"`},
		{name: "stray argument of migrate", args: []string{"migrate", "extra"}, usage: `"backend migrate" takes no arguments`},
		{name: "stray argument of list", args: []string{"engine-instances", "list", "extra"}, usage: "takes no arguments"},
		{name: "missing argument", args: []string{"engine-instances", "drain"}, usage: "takes 1 arguments (ID), got 0"},
		{name: "a controller flag on a verb", args: []string{"migrate", "--leader-elect"}, usage: "unknown flag: --leader-elect"},
		{name: "an unknown output format", args: []string{"engine-instances", "list", "-o", "xml"}, usage: `invalid argument "xml"`},
		{name: "rotate-keys without keys", args: []string{"rotate-keys", "--credentials-keys-file="}, usage: "--credentials-keys-file is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &setupRecorder{}
			res := clitest.Run(t, r.command(), tc.args...)
			switch {
			case tc.usage != "":
				g.Expect(res.Err).To(MatchError(manageropts.ErrUsage))
				g.Expect(res.Stderr).To(ContainSubstring(tc.usage))
			case tc.err != "":
				g.Expect(res.Err).To(MatchError(ContainSubstring(tc.err)))
			default:
				g.Expect(res.Err).NotTo(HaveOccurred())
			}
			g.Expect(res.Stdout).To(ContainSubstring(tc.stdout))
			g.Expect(r.calls).To(BeZero())
		})
	}
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

func TestHelpOfEveryVerb(t *testing.T) {
	verbs := clitest.Verbs(app.NewCommand())
	NewWithT(t).Expect(verbs).To(ContainElements([]string{"migrate"}, []string{"rotate-keys"},
		[]string{"engine-instances", "list"}, []string{"engine-instances", "simulate"}, []string{"operations", "list"}, []string{"version"},
		[]string{"completion", "zsh"}))
	for _, verb := range append([][]string{{}}, verbs...) {
		t.Run(strings.Join(verb, " "), func(t *testing.T) {
			g := NewWithT(t)
			r := &setupRecorder{}
			res := clitest.Run(t, r.command(), append(verb, "--help")...)
			g.Expect(res.Err).NotTo(HaveOccurred())
			g.Expect(res.Stdout).To(ContainSubstring("Usage:\n  " + strings.Join(append([]string{"backend"}, verb...), " ")))
			g.Expect(r.calls).To(BeZero())
		})
	}
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
