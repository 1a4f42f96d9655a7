package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts/clitest"
	"github.com/gitops-service/gitops-service/cluster-agent/app"
)

// testCommand is the command line with a Setup that counts its calls.
func testCommand(setups *int) *cobra.Command {
	return newCommand(&app.Options{}, func(context.Context, ctrl.Manager, logr.Logger) error {
		*setups++
		return errors.New("setup called")
	})
}

func TestCommandLine(t *testing.T) {
	// No kubeconfig is reachable: running the controllers fails at once, and that
	// failure says the command line chose them.
	t.Setenv("KUBECONFIG", "/nonexistent")
	const runsControllers = "loading kubeconfig"
	for _, tc := range []struct {
		name   string
		args   []string
		usage  string // a usage error containing this
		err    string // another error containing this
		stdout string
	}{
		{name: "the manifest's flags", args: clitest.DeploymentArgs(t, "../manifests/base/cluster-agent/deployment.yaml"), err: runsControllers},
		{name: "no arguments", args: []string{}, err: runsControllers},
		{name: "version", args: []string{"version"}, stdout: "go: go1."},
		{name: "completion", args: []string{"completion", "bash"}, stdout: "cluster-agent"},
		{name: "unknown verb", args: []string{"versio"}, usage: `unknown command "versio" for "cluster-agent"`},
		{name: "stray argument", args: []string{"--leader-elect=true", "true"}, usage: `unknown command "true"`},
		{name: "stray argument after a verb", args: []string{"version", "extra"}, usage: "takes no arguments"},
		{name: "unknown flag", args: []string{"--frobnicate"}, usage: "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			setups := 0
			res := clitest.Run(t, testCommand(&setups), tc.args...)
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
			g.Expect(setups).To(BeZero())
		})
	}
}

func TestHelpOfEveryVerb(t *testing.T) {
	for _, verb := range append([][]string{{}}, clitest.Verbs(testCommand(new(int)))...) {
		t.Run(strings.Join(verb, " "), func(t *testing.T) {
			g := NewWithT(t)
			setups := 0
			res := clitest.Run(t, testCommand(&setups), append(verb, "--help")...)
			g.Expect(res.Err).NotTo(HaveOccurred())
			g.Expect(res.Stdout).To(ContainSubstring("Usage:\n  " + strings.Join(append([]string{"cluster-agent"}, verb...), " ")))
			g.Expect(setups).To(BeZero())
		})
	}
}
