package managedenv

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// kind is a resource Argo CD watches on a cluster.
type kind struct {
	Group, Resource string
	Namespaced      bool
}

// String is the resource as kubectl names it: "podtemplates", "deployments.apps".
func (k kind) String() string {
	if k.Group == "" {
		return k.Resource
	}
	return k.Resource + "." + k.Group
}

// watchExcluded are the kinds Argo CD does not watch with the service's Argo CD
// configuration: its built-in exclusions and the resource.exclusions of its default
// install (manifests/argocd). Credentials need not cover them.
var watchExcluded = map[string][]string{ // API group -> Kinds ("*": every kind)
	"":                      {"Event", "Endpoints"},
	"events.k8s.io":         {"*"},
	"metrics.k8s.io":        {"*"},
	"coordination.k8s.io":   {"Lease"},
	"discovery.k8s.io":      {"EndpointSlice"},
	"authentication.k8s.io": {"*"},
	"authorization.k8s.io":  {"*"},
	"certificates.k8s.io":   {"CertificateSigningRequest"},
	"cert-manager.io":       {"CertificateRequest"},
	"cilium.io":             {"CiliumIdentity", "CiliumEndpoint", "CiliumEndpointSlice"},
}

// watchedKinds are the kinds Argo CD's cluster cache lists and watches on the cluster that
// disc discovers: every resource that supports list and watch, less the excluded ones.
// Groups whose discovery fails are left out, as Argo CD leaves them out.
func watchedKinds(disc discovery.DiscoveryInterface) ([]kind, error) {
	lists, err := disc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var kinds []kind
	for _, list := range lists {
		groupName, _, found := strings.Cut(list.GroupVersion, "/")
		if !found {
			groupName = "" // the core group: "v1"
		}
		for _, r := range list.APIResources {
			if watched(groupName, r) {
				kinds = append(kinds, kind{Group: groupName, Resource: r.Name, Namespaced: r.Namespaced})
			}
		}
	}
	return kinds, nil
}

// watched reports whether Argo CD watches resource r of API group group.
func watched(group string, r metav1.APIResource) bool {
	if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
		return false // a subresource, or a kind that cannot be watched
	}
	ex := watchExcluded[group]
	return !slices.Contains(ex, "*") && !slices.Contains(ex, r.Kind)
}

// allows reports whether rules let their subject do verb on every object of k.
func allows(rules []authorizationv1.ResourceRule, k kind, verb string) bool {
	for _, r := range rules {
		if len(r.ResourceNames) == 0 && matches(r.Verbs, verb) && matches(r.APIGroups, k.Group) && matches(r.Resources, k.Resource) {
			return true
		}
	}
	return false
}

func matches(values []string, v string) bool {
	return slices.Contains(values, "*") || slices.Contains(values, v)
}

// watchVerbs are what Argo CD's cluster cache does with every kind it watches.
var watchVerbs = []string{"list", "watch"}

// missingInNamespace lists the kinds of kinds (namespaced ones) that the credentials of cs
// may not list and watch in namespace ns. The rules review answers in one call; where it
// says its answer may be incomplete (an authorizer other than RBAC), access reviews confirm
// each kind it leaves out.
func missingInNamespace(ctx context.Context, cs kubernetes.Interface, ns string, kinds []kind) ([]kind, error) {
	review, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	var missing []kind
	for _, k := range kinds {
		if !k.Namespaced {
			continue
		}
		for _, verb := range watchVerbs {
			if !allows(review.Status.ResourceRules, k, verb) {
				missing = append(missing, k)
				break
			}
		}
	}
	if !review.Status.Incomplete || len(missing) == 0 {
		return missing, nil
	}
	return confirm(ctx, cs, ns, missing)
}

// missingClusterWide lists the kinds that the credentials of cs may not list and watch in
// every namespace (namespaced kinds) or at all (cluster-scoped ones). Credentials allowed
// everything answer in two reviews; others in two per kind.
func missingClusterWide(ctx context.Context, cs kubernetes.Interface, kinds []kind) ([]kind, error) {
	everything, err := confirm(ctx, cs, "", []kind{{Group: "*", Resource: "*"}})
	if err != nil || len(everything) == 0 {
		return nil, err
	}
	return confirm(ctx, cs, "", kinds)
}

// reviewWorkers bounds the access reviews sent at once.
const reviewWorkers = 8

// confirm asks the API server, one access review per kind and verb, which of kinds the
// credentials of cs may not list and watch in ns ("" for every namespace).
func confirm(ctx context.Context, cs kubernetes.Interface, ns string, kinds []kind) ([]kind, error) {
	denied := make([]bool, len(kinds))
	var g errgroup.Group
	g.SetLimit(reviewWorkers)
	for i, k := range kinds {
		g.Go(func() error {
			for _, verb := range watchVerbs {
				review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
					Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: ns, Verb: verb, Group: k.Group, Resource: k.Resource}}}, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				if !review.Status.Allowed {
					denied[i] = true
					return nil
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var missing []kind
	for i, k := range kinds {
		if denied[i] {
			missing = append(missing, k)
		}
	}
	return missing, nil
}

// maxNamed bounds how many missing kinds a condition names.
const maxNamed = 8

// permissionsErr says which kinds the credentials may not list and watch, where.
func permissionsErr(missing []kind, namespace string) error {
	names := make([]string, 0, len(missing))
	for _, k := range missing {
		names = append(names, k.String())
	}
	slices.Sort(names)
	listed := strings.Join(names, ", ")
	if len(names) > maxNamed {
		listed = fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
	}
	where := "cluster-wide"
	grant := "bind them to cluster-admin, or set spec.namespaces to the namespaces they may use"
	if namespace != "" {
		where = fmt.Sprintf("in namespace %q", namespace)
		grant = fmt.Sprintf("grant them list and watch of every resource in namespace %q (for example a Role with apiGroups, resources and verbs \"*\")", namespace)
	}
	return outcome.StalledError(string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials),
		"the credentials may not list and watch %s %s, which Argo CD watches to deploy there: %s; the service checks again within 5 minutes, or when the Secret changes",
		listed, where, grant)
}
