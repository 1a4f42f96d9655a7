// Command cluster runs the one-node cluster of make cluster (package node).
//
//	cluster up       start it; prints the kubeconfig to use
//	cluster down     stop it and remove everything it made
//	cluster import   import an OCI archive of images into the node's containerd
//	cluster deploy   install a release on the node as docs/install.md says (make deploy)
//	cluster forward  (internal) serve the host's port of the API server
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gitops-service/gitops-service/tests-e2e/install"
	"github.com/gitops-service/gitops-service/tests-e2e/node"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: cluster up|down|import|forward [flags]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("cluster "+args[0], flag.ContinueOnError)
	c := &node.Cluster{}
	fs.StringVar(&c.Name, "name", "gitops-node", "The node's name, network namespace and cgroup root.")
	fs.StringVar(&c.StateDir, "state-dir", ".local/cluster", "Certificates, configurations, logs and the node's data.")
	fs.StringVar(&c.KubeDir, "kube-dir", "", "The Kubernetes binaries (hack/build-binaries.sh --kube-dir).")
	fs.StringVar(&c.Etcd, "etcd", "", "The etcd binary.")
	fs.StringVar(&c.CoreDNS, "coredns", "", "The CoreDNS binary (hack/build-binaries.sh --coredns).")
	fs.StringVar(&c.PauseArchive, "pause-archive", ".local/node-images/pause.tar", "The OCI archive of the pause image (images pause).")
	fs.IntVar(&c.APIPort, "api-port", 6443, "The port of the host's loopback forwarded to the API server.")
	switch args[0] {
	case "up":
		if err := parse(fs, args[1:], c); err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		c.Self = []string{self}
		if err := c.Up(ctx); err != nil {
			return err
		}
		fmt.Printf("The node is Ready. Use it with:\n  export KUBECONFIG=%s\n", c.Kubeconfig())
		return nil
	case "down":
		if err := parse(fs, args[1:], c); err != nil {
			return err
		}
		return c.Down()
	case "import":
		if err := parse(fs, args[1:], c); err != nil {
			return err
		}
		for _, archive := range fs.Args() {
			if err := c.ImportImages(ctx, archive); err != nil {
				return err
			}
		}
		return nil
	case "deploy":
		release := fs.String("release", ".local/install-release", "The release to install (make release's output).")
		archives := fs.String("archives", "", "Comma-separated OCI archives to import first (the release's images, Argo CD's, Redis's).")
		imageRepo := fs.String("image-repo", "localhost/gitops-service", "The registry prefix the archives name the images with.")
		guide := fs.String("guide", "docs/install.md", "The install guide to run.")
		if err := parse(fs, args[1:], c); err != nil {
			return err
		}
		return deploy(ctx, c, *release, *guide, *imageRepo, strings.Split(*archives, ","))
	case "forward":
		netns := fs.String("netns", "gitops-node", "The namespace to reach into.")
		listen := fs.String("listen", "127.0.0.1:6443", "The host address to serve.")
		to := fs.String("to", "", "The address inside the namespace.")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return node.Forward(ctx, *netns, *listen, *to)
	default:
		return fmt.Errorf("unknown verb %q", args[0])
	}
}

// parse reads the flags and makes the paths absolute: the components run elsewhere.
func parse(fs *flag.FlagSet, args []string, c *node.Cluster) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, p := range []*string{&c.StateDir, &c.KubeDir, &c.Etcd, &c.CoreDNS, &c.PauseArchive} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	return nil
}

// deploy installs the release on a running node: it imports the images, starts
// PostgreSQL beside the node and runs the install guide's blocks.
func deploy(ctx context.Context, c *node.Cluster, release, guide, imageRepo string, archives []string) error {
	if _, err := os.Stat(c.Kubeconfig()); err != nil {
		return fmt.Errorf("no cluster is up (make cluster): %w", err)
	}
	for _, a := range archives {
		if a == "" {
			continue
		}
		if err := c.ImportImages(ctx, a); err != nil {
			return err
		}
	}
	db, err := install.StartDatabase(ctx, c, filepath.Join(c.StateDir, "database"), node.NodeIP)
	if err != nil {
		return err
	}
	dir := filepath.Join(c.StateDir, "install")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []string{"install.yaml", "argocd.yaml"} {
		body, err := os.ReadFile(filepath.Join(release, f))
		if err != nil {
			return fmt.Errorf("the release (make release): %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), body, 0o644); err != nil {
			return err
		}
	}
	if err := install.RunGuide(guide, install.InstallBlocks, dir, install.GuideEnv(c.Kubeconfig(), c.KubeDir, db, imageRepo)); err != nil {
		return err
	}
	fmt.Printf("The service is installed (the guide ran in %s, PostgreSQL at %s).\n", dir, node.NodeIP)
	return nil
}
