// Command coredns is CoreDNS with the plugins the one-node cluster's DNS uses: cluster
// names from the API server (kubernetes), a cache, health and readiness, error logging.
// The node has no upstream resolver, so nothing is forwarded.
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
