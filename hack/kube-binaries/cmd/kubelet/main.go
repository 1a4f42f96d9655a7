// Command kubelet is the upstream node agent, built from the k8s.io/kubernetes module so that
// the one-node cluster (make cluster) runs a kubelet of the same version as its API server.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
