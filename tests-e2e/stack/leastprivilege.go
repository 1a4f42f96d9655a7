package stack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// Under Options.LeastPrivilege each binary runs as the ServiceAccount manifests/base gives it,
// with exactly the RBAC the manifests give it:
//
//   - manifests/rbac/<binary>/*.yaml: the roles generated from the binary's
//     +kubebuilder:rbac markers by `make manifests`;
//   - manifests/base/<binary>/rbac.yaml: its ServiceAccount, the bindings of the generated
//     roles (cluster-wide, or only in the engine namespace for the cluster-agent), and the
//     leader-election Role and its binding;
//   - for the cluster-agent, also manifests/rbac/cluster-agent-tenants, its rights in the
//     tenants' namespaces;
//   - for the appstudio-controller, whose namespace provisioner the stack runs, also
//     manifests/rbac/namespace-provisioner and manifests/components/namespace-provisioner.
//
// Both are read from this checkout when the stack starts and applied unchanged, so a call a
// binary makes without a marker is refused as it would be in a cluster.

// leastPrivilegeKinds are the kinds the RBAC files may hold.
var leastPrivilegeKinds = map[string]bool{
	"ServiceAccount": true, "ClusterRole": true, "Role": true, "ClusterRoleBinding": true, "RoleBinding": true,
}

// tokenLifetime is how long a binary's token is valid: longer than any run of the stack
// (the API server may shorten it).
const tokenLifetime = 24 * time.Hour

// rbacObjects reads the generated roles and the base RBAC of a binary.
func rbacObjects(name string) ([]*unstructured.Unstructured, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	roles := []string{name}
	extra := []string{filepath.Join(root, "manifests", "base", name, "rbac.yaml")}
	if name == "cluster-agent" {
		// Its rights in the tenants' namespaces, bound cluster-wide by its base RBAC.
		roles = append(roles, "cluster-agent-tenants")
	}
	if name == "appstudio-controller" {
		// The stack runs the namespace provisioner, so it adds the component that grants it.
		roles = append(roles, "namespace-provisioner")
		extra = append(extra, filepath.Join(root, "manifests", "components", "namespace-provisioner", "rbac.yaml"))
	}
	var files []string
	for _, role := range roles {
		generated, err := filepath.Glob(filepath.Join(root, "manifests", "rbac", role, "*.yaml"))
		if err != nil {
			return nil, err
		}
		n := len(files)
		for _, f := range generated {
			if filepath.Base(f) != "kustomization.yaml" {
				files = append(files, f)
			}
		}
		if len(files) == n {
			return nil, fmt.Errorf("no generated roles in manifests/rbac/%s (run make manifests)", role)
		}
	}
	files = append(files, extra...)
	var objs []*unstructured.Unstructured
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue // an empty document
			}
			if !leastPrivilegeKinds[obj.GetKind()] {
				return nil, fmt.Errorf("%s: unexpected %s %s", file, obj.GetKind(), obj.GetName())
			}
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// grantLeastPrivilege applies the RBAC of binary name and returns its ServiceAccount and a
// kubeconfig file with a token of it, written into dir.
func grantLeastPrivilege(ctx context.Context, cp *testenv.ControlPlane, dir, name string) (sa client.ObjectKey, kubeconfig string, err error) {
	objs, err := rbacObjects(name)
	if err != nil {
		return sa, "", err
	}
	for _, obj := range objs {
		if obj.GetKind() != "ServiceAccount" {
			continue
		}
		if sa.Name != "" {
			return sa, "", fmt.Errorf("manifests/base/%s/rbac.yaml has more than one ServiceAccount", name)
		}
		sa = client.ObjectKeyFromObject(obj)
	}
	if sa.Name == "" || sa.Namespace == "" {
		return sa, "", fmt.Errorf("manifests/base/%s/rbac.yaml has no namespaced ServiceAccount", name)
	}
	// The binaries' namespace (gitops-service); the engine namespace exists already.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sa.Namespace}}
	if err := cp.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return sa, "", err
	}
	for _, obj := range objs {
		if err := cp.Client.Create(ctx, obj); err != nil {
			return sa, "", fmt.Errorf("creating %s %s/%s of %s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), name, err)
		}
	}
	data, _, err := cp.ServiceAccountTokenKubeconfig(ctx, sa.Namespace, sa.Name, tokenLifetime)
	if err != nil {
		return sa, "", err
	}
	kubeconfig = filepath.Join(dir, "kubeconfig-"+name)
	return sa, kubeconfig, os.WriteFile(kubeconfig, data, 0o600)
}

// leaderElectionArgs turn on leader election as the production Deployments do. Out of a
// cluster there is no pod namespace: the lease goes in the ServiceAccount's namespace, where
// manifests/base grants it, except for the cluster-agent, which keeps its lease in the engine
// namespace by default (and is granted it there).
func leaderElectionArgs(name string, sa client.ObjectKey) []string {
	args := []string{"--leader-elect=true"}
	if name != "cluster-agent" {
		args = append(args, "--leader-election-namespace="+sa.Namespace)
	}
	return args
}

// Forbidden returns the lines of the binaries' logs where the API server refused a request
// of a binary's own ServiceAccount (under Options.LeastPrivilege; nil otherwise): each is a
// call the binary makes that no +kubebuilder:rbac marker grants. Refusals to other users
// (tenants' credentials of managed environments) are not included.
func (s *Stack) Forbidden() ([]string, error) {
	var found []string
	for name, sa := range s.ServiceAccounts {
		f, err := os.Open(filepath.Join(s.LogDir, name+".log"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return found, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			if line := sc.Text(); refusedTo(line, sa) {
				found = append(found, name+": "+line)
			}
		}
		err = sc.Err()
		_ = f.Close()
		if err != nil {
			return found, err
		}
	}
	return found, nil
}

// refusedTo reports whether a log line holds the API server's refusal of a request of
// ServiceAccount sa ('... is forbidden: User "system:serviceaccount:NS:NAME" cannot VERB
// resource ...', quoted or not).
func refusedTo(line string, sa client.ObjectKey) bool {
	user := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	i := strings.Index(line, user)
	return i >= 0 && strings.Contains(line[i:], " cannot ")
}

// forbiddenError is Forbidden as an error, for Stop.
func (s *Stack) forbiddenError() error {
	lines, err := s.Forbidden()
	if err != nil || len(lines) == 0 {
		return err
	}
	const max = 20
	n, more := len(lines), ""
	if n > max {
		more = fmt.Sprintf("\n... and %d more", len(lines)-max)
		lines = lines[:max]
	}
	return fmt.Errorf("the API server refused %d request(s) of the binaries' ServiceAccounts: a +kubebuilder:rbac marker is missing (see manifests/rbac):\n%s%s",
		n, strings.Join(lines, "\n"), more)
}
