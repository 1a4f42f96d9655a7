// Command kubectl is the upstream client (with its built-in kustomize), built from the
// k8s.io/kubectl module so that the install test and make cluster use a kubectl of the
// cluster's own version whatever the machine has.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
