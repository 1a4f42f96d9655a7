package managedenv

import (
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestWatched(t *testing.T) {
	listWatch := []string{"get", "list", "watch"}
	cases := []struct {
		name  string
		group string
		res   metav1.APIResource
		want  bool
	}{
		{"a core kind", "", metav1.APIResource{Name: "podtemplates", Kind: "PodTemplate", Verbs: listWatch}, true},
		{"a kind of a group", "apps", metav1.APIResource{Name: "deployments", Kind: "Deployment", Verbs: listWatch}, true},
		{"a subresource", "", metav1.APIResource{Name: "pods/log", Kind: "Pod", Verbs: listWatch}, false},
		{"no watch", "", metav1.APIResource{Name: "bindings", Kind: "Binding", Verbs: []string{"create"}}, false},
		{"core Events", "", metav1.APIResource{Name: "events", Kind: "Event", Verbs: listWatch}, false},
		{"a whole excluded group", "events.k8s.io", metav1.APIResource{Name: "events", Kind: "Event", Verbs: listWatch}, false},
		{"Leases", "coordination.k8s.io", metav1.APIResource{Name: "leases", Kind: "Lease", Verbs: listWatch}, false},
		{"EndpointSlices", "discovery.k8s.io", metav1.APIResource{Name: "endpointslices", Kind: "EndpointSlice", Verbs: listWatch}, false},
		{"another kind of a group with exclusions", "cilium.io", metav1.APIResource{Name: "ciliumnetworkpolicies", Kind: "CiliumNetworkPolicy", Verbs: listWatch}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := watched(c.group, c.res); got != c.want {
				t.Errorf("watched(%q, %s) = %v, want %v", c.group, c.res.Name, got, c.want)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	podtemplates := kind{Resource: "podtemplates", Namespaced: true}
	deployments := kind{Group: "apps", Resource: "deployments", Namespaced: true}
	rule := func(groups, resources, verbs []string, names ...string) authorizationv1.ResourceRule {
		return authorizationv1.ResourceRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
	}
	cases := []struct {
		name  string
		rules []authorizationv1.ResourceRule
		k     kind
		verb  string
		want  bool
	}{
		{"everything", []authorizationv1.ResourceRule{rule([]string{"*"}, []string{"*"}, []string{"*"})}, deployments, "watch", true},
		{"the kind and verb", []authorizationv1.ResourceRule{rule([]string{"apps"}, []string{"deployments"}, []string{"list"})}, deployments, "list", true},
		{"another verb", []authorizationv1.ResourceRule{rule([]string{"apps"}, []string{"deployments"}, []string{"list"})}, deployments, "watch", false},
		{"another group", []authorizationv1.ResourceRule{rule([]string{""}, []string{"deployments"}, []string{"*"})}, deployments, "list", false},
		{"the admin role's core kinds, without podtemplates", []authorizationv1.ResourceRule{
			rule([]string{""}, []string{"pods", "configmaps", "secrets", "services"}, []string{"*"})}, podtemplates, "list", false},
		{"named objects only", []authorizationv1.ResourceRule{rule([]string{""}, []string{"podtemplates"}, []string{"*"}, "one")}, podtemplates, "list", false},
		{"any of several rules", []authorizationv1.ResourceRule{
			rule([]string{"apps"}, []string{"*"}, []string{"get"}), rule([]string{"*"}, []string{"deployments"}, []string{"watch"})}, deployments, "watch", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := allows(c.rules, c.k, c.verb); got != c.want {
				t.Errorf("allows(%s, %s) = %v, want %v", c.k, c.verb, got, c.want)
			}
		})
	}
}

func TestPermissionsErrNamesWhatIsMissing(t *testing.T) {
	var many []kind
	for _, r := range []string{"j", "i", "h", "g", "f", "e", "d", "c", "b", "a"} {
		many = append(many, kind{Resource: r})
	}
	cases := []struct {
		name      string
		missing   []kind
		namespace string
		want      []string
	}{
		{"one kind in a namespace", []kind{{Resource: "podtemplates"}}, "team-a",
			[]string{`may not list and watch podtemplates in namespace "team-a"`, `grant them list and watch of every resource in namespace "team-a"`}},
		{"a kind of a group, cluster-wide", []kind{{Group: "apps", Resource: "deployments"}}, "",
			[]string{"deployments.apps cluster-wide", "set spec.namespaces"}},
		{"many, sorted and cut", many, "x", []string{"a, b, c, d, e, f, g, h and 2 more"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := outcome.As(permissionsErr(c.missing, c.namespace))
			if e == nil || e.Kind != outcome.Stalled {
				t.Fatalf("permissionsErr = %v, want a stalled error", e)
			}
			for _, w := range c.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not contain %q", e.Message, w)
				}
			}
		})
	}
}
