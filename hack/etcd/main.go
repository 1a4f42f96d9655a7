// Command etcd is the upstream etcd server, built from its Go module so that the test control
// plane needs no download of prebuilt binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
