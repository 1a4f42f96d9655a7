package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// The node's network: a namespace of its own, like a machine. eth0 carries the node's
// address (its peer end stays in the namespace too, so the link is up and nothing is
// bridged outside); the default route points at it so that Service addresses route and
// kube-proxy's rules rewrite them. Nothing here is reachable from, or reaches, any network
// outside the namespace.
const (
	nodeCIDR    = "172.31.0.2/24"
	nodeIP      = "172.31.0.2"
	podCIDR     = "10.88.0.0/16"
	serviceCIDR = "10.96.0.0/16"
	apiServerIP = "10.96.0.1" // the kubernetes Service: the first address of serviceCIDR
	// The cluster DNS, CoreDNS as a process of the node, serves on the node's address.
	dnsIP = nodeIP
)

// NodeIP is the node's address: where its pods reach the node's own servers (the cluster
// DNS, or a database an install runs beside the cluster).
const NodeIP = nodeIP

func netnsPath(name string) string { return filepath.Join("/run/netns", name) }

// createNetns makes the namespace and its interfaces; an existing one is an error, since
// it belongs to a cluster that is still up (make cluster-down removes it).
func createNetns(name string) error {
	if _, err := os.Stat(netnsPath(name)); err == nil {
		return fmt.Errorf("network namespace %s exists: a cluster is up (make cluster-down)", name)
	}
	steps := [][]string{
		{"netns", "add", name},
		{"-n", name, "link", "set", "lo", "up"},
		{"-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer"},
		{"-n", name, "addr", "add", nodeCIDR, "dev", "eth0"},
		{"-n", name, "link", "set", "eth0", "up"},
		{"-n", name, "link", "set", "eth0-peer", "up"},
		{"-n", name, "route", "add", "default", "dev", "eth0"},
	}
	for _, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	// Pods reach Services through the bridge: the kernel must route and NAT their packets.
	for _, sysctl := range []string{"net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"} {
		if out, err := exec.Command("ip", "netns", "exec", name, "sysctl", "-qw", sysctl).CombinedOutput(); err != nil {
			return fmt.Errorf("sysctl %s in %s: %w: %s", sysctl, name, err, out)
		}
	}
	return nil
}

// deleteNetns removes the namespace, and with it every interface and iptables rule in it.
func deleteNetns(name string) error {
	if _, err := os.Stat(netnsPath(name)); os.IsNotExist(err) {
		return nil
	}
	if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns delete %s: %w: %s", name, err, out)
	}
	return nil
}

// inNetns runs fn on a thread that has entered the namespace at path. Sockets fn opens stay
// in that namespace after the thread leaves it.
func inNetns(path string, fn func() error) error {
	ns, err := os.Open(path)
	if err != nil {
		return err
	}
	defer ns.Close()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer self.Close()
	runtime.LockOSThread()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering %s: %w", path, err)
	}
	fnErr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread cannot go back: let it die with the goroutine instead of serving others.
		return fmt.Errorf("leaving %s: %w", path, err)
	}
	runtime.UnlockOSThread()
	return fnErr
}

// DialContext dials addr from inside the node's namespace: how clients on the host reach
// the cluster's addresses.
func DialContext(netns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := inNetns(netnsPath(netns), func() error {
			var err error
			conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

// Listen listens on addr inside the node's namespace: how a server of a test (a Git server,
// say) is reached from pods.
func Listen(netns, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := inNetns(netnsPath(netns), func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}
