package clitest

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"github.com/spf13/cobra"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

// Case is one command line and what it must do: a usage error containing Usage, another
// error containing Err, or success; Stdout must contain Stdout. None runs the controllers'
// Setup.
type Case struct {
	Name, Usage, Err, Stdout string
	Args                     []string
}

// TestControllerBinary checks the command line of a binary whose root command runs
// controllers: the flags of its Deployment manifest (at manifest) and no arguments run
// them; version, completion and every verb's --help answer without running them; an
// unknown verb, a stray argument or an unknown flag is a usage error that runs nothing.
// newCommand builds the binary's command tree with a Setup that counts its calls in
// setups and fails. extra are the binary's own cases.
func TestControllerBinary(t *testing.T, binary, manifest string, newCommand func(setups *int) *cobra.Command, extra ...Case) {
	t.Helper()
	// No kubeconfig is reachable: running the controllers fails at once, and that failure
	// says the command line chose them.
	t.Setenv("KUBECONFIG", "/nonexistent")
	const runsControllers = "loading kubeconfig"
	cases := append([]Case{
		{Name: "the manifest's flags", Args: DeploymentArgs(t, manifest), Err: runsControllers},
		{Name: "no arguments", Args: []string{}, Err: runsControllers},
		{Name: "version", Args: []string{"version"}, Stdout: "go: go1."},
		{Name: "completion", Args: []string{"completion", "bash"}, Stdout: binary},
		{Name: "unknown verb", Args: []string{"versio"}, Usage: `unknown command "versio" for "` + binary + `"`},
		{Name: "stray argument", Args: []string{"--leader-elect=true", "true"}, Usage: `unknown command "true"`},
		{Name: "stray argument after a verb", Args: []string{"version", "extra"}, Usage: "takes no arguments"},
		{Name: "unknown flag", Args: []string{"--frobnicate"}, Usage: "unknown flag"},
	}, extra...)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			setups := 0
			res := Run(t, newCommand(&setups), tc.Args...)
			switch {
			case tc.Usage != "":
				g.Expect(res.Err).To(gomega.MatchError(manageropts.ErrUsage))
				g.Expect(res.Stderr).To(gomega.ContainSubstring(tc.Usage))
			case tc.Err != "":
				g.Expect(res.Err).To(gomega.MatchError(gomega.ContainSubstring(tc.Err)))
			default:
				g.Expect(res.Err).NotTo(gomega.HaveOccurred())
			}
			g.Expect(res.Stdout).To(gomega.ContainSubstring(tc.Stdout))
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
