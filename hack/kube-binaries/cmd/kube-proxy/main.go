// Command kube-proxy is the upstream Service proxy (iptables mode), built from the
// k8s.io/kubernetes module for the one-node cluster (make cluster).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
