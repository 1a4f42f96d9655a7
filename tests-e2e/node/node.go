// Package node runs a real one-node Kubernetes cluster on this machine: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, a kubelet with containerd and
// runc, kube-proxy and the CNI bridge, all inside a network namespace of the cluster's own,
// so that every address it uses is its own and no traffic leaves the machine. The host
// reaches the API server through a port of its loopback forwarded into the namespace.
// Nothing is pulled: the images the node runs are built here and imported into containerd.
//
// The processes outlive the program that started them (make cluster returns); Down stops
// them and removes everything Up made, so that Up works again afterwards.
package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// PauseImage is the pod sandbox image, built here (images pause) and imported at start.
const PauseImage = "localhost/gitops-service/pause:node"

// Cluster is one node's configuration and the paths of its state.
type Cluster struct {
	// Name names the network namespace, the node and the cgroup root.
	Name string
	// StateDir holds certificates, configurations, logs, containerd's images and the
	// kubelet's volumes (.local/cluster).
	StateDir string
	// KubeDir holds kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy,
	// kubelet and kubectl (hack/build-binaries.sh --kube-dir); Etcd is the etcd binary.
	KubeDir string
	Etcd    string
	// CoreDNS is the cluster DNS's binary (hack/build-binaries.sh --coredns).
	CoreDNS string
	// PauseArchive is an OCI archive holding PauseImage (images pause).
	PauseArchive string
	// APIPort is the port of the host's loopback forwarded to the API server.
	APIPort int
	// Self is the program that serves the forwarded port (`<Self> forward ...`).
	Self []string

	pki *pki
}

// components in start order; Down stops them in reverse.
var components = []string{"etcd", "kube-apiserver", "forward", "kube-controller-manager", "kube-scheduler", "coredns", "containerd", "kubelet", "kube-proxy"}

func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.StateDir}, elem...)...)
}

// runDir is under /run: containerd's state and socket paths must stay short.
func (c *Cluster) runDir(elem ...string) string {
	return filepath.Join(append([]string{"/run", c.Name}, elem...)...)
}

func (c *Cluster) containerdSocket() string { return c.runDir("containerd.sock") }

// LogPath is the log of a process started by the cluster.
func (c *Cluster) LogPath(name string) string { return c.path("logs", name+".log") }

// Kubeconfig is the admin kubeconfig for clients on the host (through the forwarded port).
func (c *Cluster) Kubeconfig() string { return c.path("kubeconfig") }

// Up starts the cluster and waits until the node is Ready.
func (c *Cluster) Up(ctx context.Context) (err error) {
	if err := c.check(); err != nil {
		return err
	}
	if err := createNetns(c.Name); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (logs in %s)", err, c.path("logs"))
		}
	}()
	if err := c.writePKI(); err != nil {
		return err
	}
	if err := c.writeConfigs(); err != nil {
		return err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return err
	}
	if err := c.startNode(ctx); err != nil {
		return err
	}
	return c.waitNodeReady(ctx)
}

func (c *Cluster) check() error {
	for _, bin := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet"} {
		if _, err := os.Stat(filepath.Join(c.KubeDir, bin)); err != nil {
			return fmt.Errorf("%s is not built (hack/build-binaries.sh kube): %w", bin, err)
		}
	}
	if _, err := os.Stat(c.CoreDNS); err != nil {
		return fmt.Errorf("coredns is not built (hack/build-binaries.sh coredns): %w", err)
	}
	for _, bin := range []string{"containerd", "ctr", "runc", "iptables", "nsenter", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s is missing (hack/install-deps.sh installs it): %w", bin, err)
		}
	}
	if _, err := os.Stat(c.PauseArchive); err != nil {
		return fmt.Errorf("the pause image archive: %w", err)
	}
	if os.Geteuid() != 0 {
		return errors.New("the node needs root: network namespaces, mounts, cgroups")
	}
	return nil
}

func (c *Cluster) writePKI() error {
	p, err := newPKI(c.path("pki"))
	if err != nil {
		return err
	}
	c.pki = p
	client := func(name, cn string, groups ...string) error {
		return p.issue(name, cn, groups, nil, x509ClientAuth)
	}
	steps := []func() error{
		func() error { return p.issue("apiserver", "kube-apiserver", nil, apiServerHosts(), x509ServerAuth) },
		func() error {
			return p.issue("kubelet", "system:node:"+c.Name, []string{"system:nodes"}, []string{nodeIP, c.Name}, x509ServerAuth, x509ClientAuth)
		},
		func() error { return client("admin", "admin", "system:masters") },
		func() error {
			return client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
		},
		func() error { return client("controller-manager", "system:kube-controller-manager") },
		func() error { return client("scheduler", "system:kube-scheduler") },
		func() error { return client("kube-proxy", "system:kube-proxy") },
		p.serviceAccountKey,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) writeConfigs() error {
	inside := "https://" + net.JoinHostPort(nodeIP, "6443")
	ca := c.pki.path("ca", "crt")
	files := map[string]string{
		c.path("kubeconfig"):                     kubeconfig("https://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(c.APIPort)), ca, c.pki.path("admin", "crt"), c.pki.path("admin", "key")),
		c.path("admin-inside.kubeconfig"):        kubeconfig(inside, ca, c.pki.path("admin", "crt"), c.pki.path("admin", "key")),
		c.path("controller-manager.kubeconfig"):  kubeconfig(inside, ca, c.pki.path("controller-manager", "crt"), c.pki.path("controller-manager", "key")),
		c.path("scheduler.kubeconfig"):           kubeconfig(inside, ca, c.pki.path("scheduler", "crt"), c.pki.path("scheduler", "key")),
		c.path("kubelet.kubeconfig"):             kubeconfig(inside, ca, c.pki.path("kubelet", "crt"), c.pki.path("kubelet", "key")),
		c.path("kube-proxy.kubeconfig"):          kubeconfig(inside, ca, c.pki.path("kube-proxy", "crt"), c.pki.path("kube-proxy", "key")),
		c.path("containerd.toml"):                c.containerdConfig(),
		c.path("cni", "10-gitops-node.conflist"): cniConfig(),
		c.path("kubelet.yaml"):                   c.kubeletConfig(),
		c.path("kube-proxy.yaml"):                c.kubeProxyConfig(),
		c.path("Corefile"):                       c.corefile(),
		// Pods resolve through the cluster DNS only: the node has no upstream resolver.
		c.path("resolv.conf"): "nameserver " + dnsIP + "\n",
	}
	for path, body := range files {
		if err := writeFile(path, body, 0o600); err != nil {
			return err
		}
	}
	return os.MkdirAll(c.path("logs"), 0o755)
}

func (c *Cluster) startControlPlane(ctx context.Context) error {
	pki := c.pki.path
	if err := c.start("etcd", c.Etcd, flags(
		"data-dir", c.path("etcd"),
		"listen-client-urls", "http://127.0.0.1:2379", "advertise-client-urls", "http://127.0.0.1:2379",
		"listen-peer-urls", "http://127.0.0.1:2380", "initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"initial-cluster", "default=http://127.0.0.1:2380", "listen-metrics-urls", "http://127.0.0.1:2381",
		"unsafe-no-fsync", "true")); err != nil {
		return err
	}
	if err := c.start("kube-apiserver", filepath.Join(c.KubeDir, "kube-apiserver"), flags(
		"etcd-servers", "http://127.0.0.1:2379",
		"advertise-address", nodeIP, "bind-address", "0.0.0.0", "secure-port", "6443",
		"service-cluster-ip-range", serviceCIDR,
		"client-ca-file", pki("ca", "crt"),
		"tls-cert-file", pki("apiserver", "crt"), "tls-private-key-file", pki("apiserver", "key"),
		"kubelet-client-certificate", pki("apiserver-kubelet-client", "crt"), "kubelet-client-key", pki("apiserver-kubelet-client", "key"),
		"kubelet-certificate-authority", pki("ca", "crt"), "kubelet-preferred-address-types", "InternalIP",
		"service-account-key-file", pki("sa", "pub"), "service-account-signing-key-file", pki("sa", "key"),
		"service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"authorization-mode", "Node,RBAC", "enable-admission-plugins", "NodeRestriction",
		"allow-privileged", "true", "profiling", "false")); err != nil {
		return err
	}
	if err := c.start("forward", c.Self[0], append(c.Self[1:], "forward",
		"--netns", c.Name, "--listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.APIPort)), "--to", net.JoinHostPort(nodeIP, "6443"))); err != nil {
		return err
	}
	cs, err := c.Client()
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	}); err != nil {
		return fmt.Errorf("waiting for the API server through 127.0.0.1:%d: %w", c.APIPort, err)
	}
	common := func(name string) []string {
		kc := c.path(name + ".kubeconfig")
		return flags("kubeconfig", kc, "authentication-kubeconfig", kc, "authorization-kubeconfig", kc, "bind-address", "127.0.0.1", "leader-elect", "false")
	}
	if err := c.start("kube-controller-manager", filepath.Join(c.KubeDir, "kube-controller-manager"), append(common("controller-manager"), flags(
		"cluster-signing-cert-file", pki("ca", "crt"), "cluster-signing-key-file", pki("ca", "key"),
		"root-ca-file", pki("ca", "crt"), "service-account-private-key-file", pki("sa", "key"),
		"use-service-account-credentials", "true", "controllers", "*,bootstrapsigner,tokencleaner")...)); err != nil {
		return err
	}
	if err := c.start("kube-scheduler", filepath.Join(c.KubeDir, "kube-scheduler"), common("scheduler")); err != nil {
		return err
	}
	return c.start("coredns", c.CoreDNS, []string{"-conf", c.path("Corefile")})
}

func (c *Cluster) startNode(ctx context.Context) error {
	// The kubelet's cgroups live under /<Name> in every controller: Down finds every
	// container process there.
	for _, ctrl := range cgroupControllers() {
		if err := os.MkdirAll(filepath.Join("/sys/fs/cgroup", ctrl, c.Name), 0o755); err != nil {
			return fmt.Errorf("creating the node's cgroup: %w", err)
		}
	}
	if err := os.MkdirAll(c.runDir(), 0o755); err != nil {
		return err
	}
	if err := c.start("containerd", "containerd", flags("config", c.path("containerd.toml"))); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return exec.Command("ctr", "--address", c.containerdSocket(), "version").Run() == nil, nil
	}); err != nil {
		return fmt.Errorf("waiting for containerd: %w", err)
	}
	if err := c.ImportImages(ctx, c.PauseArchive); err != nil {
		return err
	}
	if err := c.start("kubelet", filepath.Join(c.KubeDir, "kubelet"), flags(
		"config", c.path("kubelet.yaml"), "kubeconfig", c.path("kubelet.kubeconfig"),
		"root-dir", c.path("kubelet"), "hostname-override", c.Name, "node-ip", nodeIP)); err != nil {
		return err
	}
	return c.start("kube-proxy", filepath.Join(c.KubeDir, "kube-proxy"), flags("config", c.path("kube-proxy.yaml")))
}

// ImportImages imports an OCI archive into the CRI's containerd namespace, where the
// kubelet finds images by the names the archive gives them.
func (c *Cluster) ImportImages(ctx context.Context, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.containerdSocket(), "--namespace", "k8s.io",
		"images", "import", "--no-unpack=false", "--platform", "linux/"+goarch(), archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing %s into containerd: %w: %s", archive, err, out)
	}
	return nil
}

func (c *Cluster) waitNodeReady(ctx context.Context) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = cond.Reason + ": " + cond.Message
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %s to be Ready (last: %s): %w", c.Name, last, err)
	}
	return nil
}

// RESTConfig is the admin configuration through the forwarded port, its certificates
// loaded (client-go would otherwise watch their files, and complain once Down removed them).
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, err
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Client is an admin clientset through the forwarded port.
func (c *Cluster) Client() (*kubernetes.Clientset, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// StartAs runs a process of the node's machine, besides the cluster (a database the
// cluster's pods use, say), as the user uid:gid; Down stops it with the rest.
func (c *Cluster) StartAs(name string, uid, gid int, bin string, args ...string) error {
	return c.startAs(name, fmt.Sprintf("--setuid=%d --setgid=%d", uid, gid), bin, args)
}

// Stop stops a process started with StartAs (SIGTERM, then SIGKILL after ten seconds).
func (c *Cluster) Stop(name string) error { return c.stop(name) }

// start runs a component as root.
func (c *Cluster) start(name, bin string, args []string) error { return c.startAs(name, "", bin, args) }

// startAs runs a component detached (its own session, so it outlives make cluster) inside
// the node's network namespace, logging to logs/<name>.log, its pid in pids/<name>.
func (c *Cluster) startAs(name, user, bin string, args []string) error {
	log, err := os.OpenFile(c.path("logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	argv := append(append([]string{"--net=" + netnsPath(c.Name)}, strings.Fields(user)...), "--")
	argv = append(append(argv, bin), args...)
	if name == "forward" {
		argv = append([]string{bin}, args...) // it enters the namespace by itself for each dial
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if name != "forward" {
		cmd = exec.Command("nsenter", argv...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = c.StateDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	if err := writeFile(c.path("pids", name), strconv.Itoa(cmd.Process.Pid), 0o644); err != nil {
		return err
	}
	// Reap it if it dies while this program still runs; afterwards init does.
	go func() { _ = cmd.Wait() }()
	return nil
}

func cgroupControllers() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), "unified") {
			out = append(out, e.Name())
		}
	}
	return out
}
