// Package clitest runs the binaries' command trees in tests, the way their main does.
package clitest

import (
	"bytes"
	"os"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

// Result is what one command line printed and returned.
type Result struct {
	Stdout, Stderr string
	Err            error
}

// Run runs args on root (build a fresh tree for each call: cobra keeps parsed flags) and
// returns what it printed; ctx ends with the test.
func Run(t testing.TB, root *cobra.Command, args ...string) Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := manageropts.Execute(t.Context(), root, args)
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// Verbs returns the arguments that name each command of root below it, cobra's help and
// completion commands included, e.g. {"engine-instances", "list"}.
func Verbs(root *cobra.Command) [][]string {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var verbs [][]string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		for _, sub := range cmd.Commands() {
			if sub.Hidden {
				continue
			}
			p := append(append([]string{}, path...), sub.Name())
			verbs = append(verbs, p)
			walk(sub, p)
		}
	}
	walk(root, nil)
	return verbs
}

// DeploymentArgs returns the args of the first container of the Deployment in the
// manifest file at path: the command line the cluster runs.
func DeploymentArgs(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // a manifest the test names
	if err != nil {
		t.Fatal(err)
	}
	var deployment appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &deployment); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	containers := deployment.Spec.Template.Spec.Containers
	if len(containers) == 0 || len(containers[0].Args) == 0 {
		t.Fatalf("%s: no container with args", path)
	}
	return containers[0].Args
}
