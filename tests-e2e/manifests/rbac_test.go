package manifests

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// rightsSection is the heading of docs/install.md whose table justifies, one row each, the
// service's rights that reach far: every rule with a "*", and every rule of a role bound
// cluster-wide that reaches Secrets, RBAC or ServiceAccount tokens.
const rightsSection = "## The service's cluster-wide rights"

// TestFarReachingRightsAreJustified fails when a ClusterRole of the service's manifests
// has a rule that reaches far without a row in docs/install.md naming the role and the
// resource, and when a token may be minted for any ServiceAccount.
func TestFarReachingRightsAreJustified(t *testing.T) {
	roles, clusterWide := serviceRBAC(t)
	rows := justifications(t)
	if len(roles) == 0 {
		t.Fatal("no ClusterRole found under manifests/")
	}
	for _, role := range roles {
		for _, rule := range role.Rules {
			for _, resource := range rule.Resources {
				if resource == "serviceaccounts/token" && len(rule.ResourceNames) == 0 {
					t.Errorf("ClusterRole %s may mint a token for any ServiceAccount: name them (resourceNames)", role.Name)
				}
				if !farReaching(rule, resource, clusterWide[role.Name]) {
					continue
				}
				if !slices.ContainsFunc(rows, func(row string) bool {
					return strings.Contains(row, "`"+role.Name+"`") && strings.Contains(row, "`"+resource+"`")
				}) {
					t.Errorf("ClusterRole %s: the rule %v on %q reaches far; justify it with a row naming `%s` and `%s` under %q in docs/install.md, or narrow it",
						role.Name, rule.Verbs, resource, role.Name, resource, rightsSection)
				}
			}
		}
	}
}

// farReaching: a "*" anywhere, or, for a role bound cluster-wide, Secrets, anything of
// RBAC, or ServiceAccount tokens.
func farReaching(rule rbacv1.PolicyRule, resource string, clusterWide bool) bool {
	if resource == "*" || slices.Contains(rule.Verbs, "*") || slices.Contains(rule.APIGroups, "*") {
		return true
	}
	if !clusterWide {
		return false
	}
	return slices.Contains(rule.APIGroups, rbacv1.GroupName) ||
		(slices.Contains(rule.APIGroups, "") && (resource == "secrets" || resource == "serviceaccounts/token"))
}

// serviceRBAC reads every ClusterRole of the service's manifests (not Argo CD's, nor the
// CRDs) and which of them a ClusterRoleBinding binds.
func serviceRBAC(t *testing.T) ([]rbacv1.ClusterRole, map[string]bool) {
	t.Helper()
	var roles []rbacv1.ClusterRole
	clusterWide := map[string]bool{}
	err := filepath.WalkDir(manifestsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(manifestsDir, path)
		if d.IsDir() && (rel == "crd" || rel == "argocd" || rel == "dashboards") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".yaml" {
			return nil
		}
		for _, obj := range decodeAll(t, path) {
			switch obj.GetKind() {
			case "ClusterRole":
				var role rbacv1.ClusterRole
				mustFromUnstructured(t, obj, &role)
				roles = append(roles, role)
			case "ClusterRoleBinding":
				var binding rbacv1.ClusterRoleBinding
				mustFromUnstructured(t, obj, &binding)
				clusterWide[binding.RoleRef.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return roles, clusterWide
}

// justifications are the table rows of the rights section of docs/install.md.
func justifications(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(manifestsDir, "..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(data), rightsSection+"\n")
	if !found {
		t.Fatalf("docs/install.md has no section %q", rightsSection)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	return rows
}

func decodeAll(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			// Kustomize patches and other fragments that are not objects.
			return out
		}
		if len(obj.Object) != 0 && obj.GetKind() != "" {
			out = append(out, obj)
		}
	}
}

func mustFromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}
