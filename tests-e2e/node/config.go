package node

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFile writes body to path, creating its directory.
func writeFile(path, body string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(body), mode)
}

// kubeconfig is a client-certificate kubeconfig for server.
func kubeconfig(server, ca, cert, key string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gitops-node
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: user
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: gitops-node
  context: {cluster: gitops-node, user: user}
current-context: gitops-node
`, server, ca, cert, key)
}

// containerdConfig runs the CRI plugin with runc on cgroupfs, the CNI plugins from
// Debian's package, the pause image built here, and oom_score_adj kept within what this
// machine allows (it refuses negative values, which pod sandboxes ask for).
func (c *Cluster) containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, c.path("containerd", "root"), c.runDir("containerd"), c.containerdSocket(), PauseImage, c.path("cni"))
}

// cniConfig bridges the pods on cni0 with addresses from podCIDR, the node as their gateway.
func cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "gitops-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, podCIDR)
}

// kubeletConfig: cgroupfs under the node's own cgroup root (cgroup v1 here, so
// failCgroupV1 is off), no image garbage collection (the images are imported, not pulled),
// and eviction thresholds low enough for a shared disk.
func (c *Cluster) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
tlsCertFile: %q
tlsPrivateKeyFile: %q
cgroupDriver: cgroupfs
cgroupRoot: /%s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
clusterDNS: [%s]
clusterDomain: cluster.local
resolvConf: %q
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%}
serializeImagePulls: false
`, nodeIP, c.pki.path("ca", "crt"), c.pki.path("kubelet", "crt"), c.pki.path("kubelet", "key"),
		c.Name, c.containerdSocket(), dnsIP, c.path("resolv.conf"))
}

// kubeProxyConfig: iptables mode; every Service connection is masqueraded so that a pod
// reaching a Service backed by a pod on the same bridge gets the answers back.
func (c *Cluster) kubeProxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
iptables: {masqueradeAll: true}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, c.path("kube-proxy.kubeconfig"), podCIDR, c.Name, nodeIP)
}

// apiServerHosts are the names and addresses the API server's certificate covers.
func apiServerHosts() []string {
	return []string{nodeIP, "127.0.0.1", apiServerIP, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
}

// flags turns pairs into --key=value arguments.
func flags(pairs ...string) []string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, "--"+pairs[i]+"="+pairs[i+1])
	}
	return out
}

// corefile serves the cluster's names from the API server on the node's address. There is
// no upstream to forward other names to: the node has no network beyond itself.
func (c *Cluster) corefile() string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    health 127.0.0.1:8089
    ready 127.0.0.1:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s gitops-node
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
`, dnsIP, c.path("admin-inside.kubeconfig"))
}
