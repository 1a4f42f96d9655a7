package manageropts_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/buildinfo"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts/clitest"
)

// testBinary is a root command with one verb of its own (migrate) and a deprecated
// flag; setups counts the calls of its Setup.
type testBinary struct {
	setups   int
	interval time.Duration
	migrated bool
}

func (b *testBinary) root() *cobra.Command {
	root := manageropts.Command{
		Name: "backend", Summary: "Test binary.", MetricsAddr: ":8080", ProbeAddr: ":8081",
		BindFlags: func(fs *flag.FlagSet) {
			fs.DurationVar(&b.interval, "interval", time.Minute, "An interval.")
			fs.DurationVar(&b.interval, "interval-old", time.Minute, "The interval, by its old name.")
		},
		DeprecatedFlags: map[string]string{"interval-old": "use --interval"},
		Setup: func(context.Context, ctrl.Manager, logr.Logger) error {
			b.setups++
			return errors.New("setup called")
		},
	}.NewCommand()
	root.AddCommand(&cobra.Command{Use: "migrate", Args: manageropts.NoArgs,
		RunE: func(*cobra.Command, []string) error { b.migrated = true; return nil }})
	return root
}

func TestCommandLines(t *testing.T) {
	// No kubeconfig is reachable from here: running the controllers fails at once, and
	// that failure says the command line chose them.
	t.Setenv("KUBECONFIG", "/nonexistent")
	const runsControllers = "loading kubeconfig"
	for _, tc := range []struct {
		name     string
		args     []string
		usage    string // a usage error containing this
		err      string // another error containing this
		stderr   string
		migrated bool
	}{
		{name: "flags only run the controllers", args: []string{"--metrics-bind-address=0", "--leader-elect=true"}, err: runsControllers},
		{name: "no arguments run the controllers", args: []string{}, err: runsControllers},
		{name: "a verb runs it", args: []string{"migrate"}, migrated: true},
		{name: "unknown verb", args: []string{"migrat"}, usage: `unknown command "migrat" for "backend"`,
			stderr: "Error: unknown command \"migrat\" for \"backend\"\n\nDid you mean this?\n\tmigrate\n\nRun 'backend --help' for usage.\n"},
		{name: "stray argument after flags", args: []string{"--leader-elect=true", "extra"}, usage: `unknown command "extra"`},
		{name: "stray argument after a verb", args: []string{"migrate", "extra"}, usage: `"backend migrate" takes no arguments`,
			stderr: "Run 'backend migrate --help' for usage."},
		{name: "stray argument after version", args: []string{"version", "extra"}, usage: "takes no arguments"},
		{name: "unknown flag", args: []string{"--frobnicate"}, usage: "unknown flag: --frobnicate"},
		{name: "a flag of the controllers after a verb", args: []string{"migrate", "--leader-elect"}, usage: "unknown flag: --leader-elect"},
		{name: "a malformed duration", args: []string{"--interval=5"}, usage: `invalid argument "5" for "--interval" flag`},
		{name: "one dash, as Go's flag package took", args: []string{"-metrics-bind-address=0", "-leader-elect", "-interval", "5s"},
			err: runsControllers, stderr: "Flag -leader-elect: use --leader-elect"},
		{name: "a deprecated flag works and warns", args: []string{"--interval-old=5s"}, err: runsControllers,
			stderr: "Flag --interval-old has been deprecated, use --interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			b := &testBinary{}
			res := clitest.Run(t, b.root(), tc.args...)
			switch {
			case tc.usage != "":
				g.Expect(res.Err).To(MatchError(manageropts.ErrUsage))
				g.Expect(res.Err).To(MatchError(ContainSubstring(tc.usage)))
				g.Expect(res.Stderr).To(ContainSubstring(tc.usage))
			case tc.err != "":
				g.Expect(res.Err).To(MatchError(ContainSubstring(tc.err)))
				g.Expect(res.Err).NotTo(MatchError(manageropts.ErrUsage))
			default:
				g.Expect(res.Err).NotTo(HaveOccurred())
			}
			g.Expect(res.Stderr).To(ContainSubstring(tc.stderr))
			g.Expect(b.setups).To(BeZero())
			g.Expect(b.migrated).To(Equal(tc.migrated))
		})
	}
}

func TestOneDashKeepsItsValue(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	b := &testBinary{}
	clitest.Run(t, b.root(), "-interval=5s")
	NewWithT(t).Expect(b.interval).To(Equal(5 * time.Second))
	b = &testBinary{}
	clitest.Run(t, b.root(), "--interval-old", "7s")
	NewWithT(t).Expect(b.interval).To(Equal(7 * time.Second))
}

func TestHelpOfEveryVerb(t *testing.T) {
	verbs := clitest.Verbs((&testBinary{}).root())
	NewWithT(t).Expect(verbs).To(ContainElements([]string{"migrate"}, []string{"version"},
		[]string{"completion"}, []string{"completion", "bash"}, []string{"help"}))
	for _, verb := range append([][]string{{}}, verbs...) {
		for _, help := range []string{"--help", "-h"} {
			t.Run(strings.Join(append(verb, help), " "), func(t *testing.T) {
				g := NewWithT(t)
				b := &testBinary{}
				res := clitest.Run(t, b.root(), append(verb, help)...)
				g.Expect(res.Err).NotTo(HaveOccurred())
				g.Expect(res.Stdout).To(ContainSubstring("Usage:\n  " + strings.Join(append([]string{"backend"}, verb...), " ")))
				g.Expect(b.setups).To(BeZero())
				g.Expect(b.migrated).To(BeFalse())
			})
		}
	}
}

func TestRootHelpListsFlagsAndVerbs(t *testing.T) {
	g := NewWithT(t)
	res := clitest.Run(t, (&testBinary{}).root(), "--help")
	g.Expect(res.Err).NotTo(HaveOccurred())
	for _, want := range []string{"Test binary.", "--metrics-bind-address string", `(default ":8080")`,
		"--leader-elect", "--interval duration", "--zap-log-level", "migrate", "version", "completion"} {
		g.Expect(res.Stdout).To(ContainSubstring(want))
	}
	g.Expect(res.Stdout).NotTo(ContainSubstring("interval-old"))
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			g := NewWithT(t)
			res := clitest.Run(t, (&testBinary{}).root(), "completion", shell)
			g.Expect(res.Err).NotTo(HaveOccurred())
			g.Expect(res.Stdout).To(ContainSubstring("backend"))
			g.Expect(len(res.Stdout)).To(BeNumerically(">", 1000))
		})
	}
}

func TestVersionVerbPrintsTheBuildWithoutACluster(t *testing.T) {
	g := NewWithT(t)
	// No kubeconfig is reachable from here: the verb must not need one.
	t.Setenv("KUBECONFIG", "/nonexistent")
	res := clitest.Run(t, (&testBinary{}).root(), "version")
	g.Expect(res.Err).NotTo(HaveOccurred())
	g.Expect(res.Stdout).To(Equal(buildinfo.Get().String()))
	g.Expect(res.Stdout).To(ContainSubstring("go: go1."))
}

func TestGroupNeedsAKnownVerb(t *testing.T) {
	newRoot := func() *cobra.Command {
		root := (&testBinary{}).root()
		root.AddCommand(manageropts.NewGroup("engine-instances", "Engine instances.",
			&cobra.Command{Use: "list", Args: manageropts.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }},
			&cobra.Command{Use: "drain ID", Args: manageropts.ExactArgs("ID"), RunE: func(*cobra.Command, []string) error { return nil }}))
		return root
	}
	for _, tc := range []struct {
		args  []string
		usage string
	}{
		{args: []string{"engine-instances"}},
		{args: []string{"engine-instances", "list"}},
		{args: []string{"engine-instances", "drain", "a"}},
		{args: []string{"engine-instances", "lis"}, usage: "unknown command \"lis\" for \"backend engine-instances\"\n\nDid you mean this?\n\tlist"},
		{args: []string{"engine-instances", "list", "extra"}, usage: `"backend engine-instances list" takes no arguments, got ["extra"]`},
		{args: []string{"engine-instances", "drain"}, usage: `"backend engine-instances drain" takes 1 arguments (ID), got 0`},
		{args: []string{"engine-instances", "drain", "a", "b"}, usage: `takes 1 arguments (ID), got 2: ["a" "b"]`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			res := clitest.Run(t, newRoot(), tc.args...)
			if tc.usage == "" {
				g.Expect(res.Err).NotTo(HaveOccurred())
				return
			}
			g.Expect(res.Err).To(MatchError(manageropts.ErrUsage))
			g.Expect(res.Err.Error()).To(ContainSubstring(tc.usage))
		})
	}
}

// TestPrepareAnswersTheProbes: while a binary prepares (migrates the database, or waits for
// its schema), its probe address answers alive and not ready with the reason, and it is
// free again for the manager once Prepare returns.
func TestPrepareAnswersTheProbes(t *testing.T) {
	g := NewWithT(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600)).To(Succeed())
	t.Setenv("KUBECONFIG", kubeconfig)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := ln.Addr().String()
	g.Expect(ln.Close()).To(Succeed())

	get := func(path string) (string, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, body), err
	}
	checked := make(chan struct{})
	root := manageropts.Command{
		Name: "backend", MetricsAddr: "0", ProbeAddr: addr,
		Prepare: func(_ context.Context, _ logr.Logger, waiting func(string)) error {
			waiting("waiting for the schema")
			<-checked
			return errors.New("prepared")
		},
	}.NewCommand()
	done := make(chan clitest.Result, 1)
	go func() { done <- clitest.Run(t, root) }()
	g.Eventually(func() (string, error) { return get("/healthz") }).Should(HavePrefix("200 ok"))
	g.Expect(get("/readyz")).To(Equal("503 not ready: waiting for the schema\n"))
	close(checked)
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(HaveField("Err", MatchError("prepared"))))
	_, err = get("/healthz")
	g.Expect(err).To(HaveOccurred(), "the probe address is free for the manager")
}
