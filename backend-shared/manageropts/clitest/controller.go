package clitest

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"github.com/spf13/cobra"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

// TestControllerBinary checks the command line of a binary whose root command runs
// controllers: the flags of its Deployment manifest (at manifest) and no arguments run
// them; version, completion and every verb's --help answer without running them; an
// unknown verb, a stray argument or an unknown flag is a usage error that runs nothing.
// newCommand builds the binary's command tree with a Setup that counts its calls in
// setups and fails.
func TestControllerBinary(t *testing.T, binary, manifest string, newCommand func(setups *int) *cobra.Command) {
	t.Helper()
	// No kubeconfig is reachable: running the controllers fails at once, and that failure
	// says the command line chose them.
	t.Setenv("KUBECONFIG", "/nonexistent")
	const runsControllers = "loading kubeconfig"
	for _, tc := range []struct {
		name   string
		args   []string
		usage  string // a usage error containing this
		err    string // another error containing this
		stdout string
	}{
		{name: "the manifest's flags", args: DeploymentArgs(t, manifest), err: runsControllers},
		{name: "no arguments", args: []string{}, err: runsControllers},
		{name: "version", args: []string{"version"}, stdout: "go: go1."},
		{name: "completion", args: []string{"completion", "bash"}, stdout: binary},
		{name: "unknown verb", args: []string{"versio"}, usage: `unknown command "versio" for "` + binary + `"`},
		{name: "stray argument", args: []string{"--leader-elect=true", "true"}, usage: `unknown command "true"`},
		{name: "stray argument after a verb", args: []string{"version", "extra"}, usage: "takes no arguments"},
		{name: "unknown flag", args: []string{"--frobnicate"}, usage: "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			setups := 0
			res := Run(t, newCommand(&setups), tc.args...)
			switch {
			case tc.usage != "":
				g.Expect(res.Err).To(gomega.MatchError(manageropts.ErrUsage))
				g.Expect(res.Stderr).To(gomega.ContainSubstring(tc.usage))
			case tc.err != "":
				g.Expect(res.Err).To(gomega.MatchError(gomega.ContainSubstring(tc.err)))
			default:
				g.Expect(res.Err).NotTo(gomega.HaveOccurred())
			}
			g.Expect(res.Stdout).To(gomega.ContainSubstring(tc.stdout))
			g.Expect(setups).To(gomega.BeZero())
		})
	}
	for _, verb := range append([][]string{{}}, Verbs(newCommand(new(int)))...) {
		t.Run(strings.Join(append([]string{"help"}, verb...), " "), func(t *testing.T) {
			g := gomega.NewWithT(t)
			setups := 0
			res := Run(t, newCommand(&setups), append(verb, "--help")...)
			g.Expect(res.Err).NotTo(gomega.HaveOccurred())
			g.Expect(res.Stdout).To(gomega.ContainSubstring("Usage:\n  " + strings.Join(append([]string{binary}, verb...), " ")))
			g.Expect(setups).To(gomega.BeZero())
		})
	}
}
