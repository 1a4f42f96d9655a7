package argocd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// A tenant has two AppProjects, because Argo CD allows cluster-scoped resources per
// project, not per destination:
//
//   - app-project-<tenant> holds its Applications on the cluster Argo CD runs on. They may
//     deploy only to the tenant's namespaces and no cluster-scoped resource at all, so a
//     tenant cannot create Namespaces or ClusterRoles on the service's own cluster.
//   - app-project-<tenant>-remote holds its Applications on managed environments. There the
//     tenant's own credentials, and the cluster Secret's namespaces and clusterResources,
//     bound what Argo CD may do, so any namespace and any kind is allowed (CreateNamespace
//     and cluster-scoped manifests work as the user's RBAC permits).

// ProjectDestination is one place a tenant's Applications may deploy to.
type ProjectDestination struct {
	// ManagedEnvironmentID empty means the cluster Argo CD runs on.
	ManagedEnvironmentID string
	// Namespace may be "*" for a managed environment (its credentials bound it).
	Namespace string
	// Server is, on the service's cluster, the server an Application names when it is not
	// the project's own (an Application written before the tenant had its own cluster entry).
	Server string
}

// AppProjects are a tenant's two AppProjects: its Applications may only read the tenant's
// repositories and deploy only to the tenant's destinations. local gets the destinations on
// the service's cluster, reached at serviceServer (see ServiceServer), remote the managed
// environments.
func AppProjects(namespace, tenantID, serviceServer string, sourceRepos []string, destinations []ProjectDestination) (local, remote *argov1alpha1.AppProject) {
	repos := uniqueRepositories(sourceRepos)
	var here, there []argov1alpha1.ApplicationDestination
	for _, d := range destinations {
		if d.ManagedEnvironmentID == "" {
			server := serviceServer
			if d.Server != "" {
				server = d.Server
			}
			here = append(here, argov1alpha1.ApplicationDestination{Server: server, Namespace: d.Namespace})
		} else {
			there = append(there, argov1alpha1.ApplicationDestination{Name: ClusterSecretName(d.ManagedEnvironmentID), Namespace: d.Namespace})
		}
	}
	local = appProject(namespace, AppProjectName(tenantID), tenantID, repos, here, nil)
	remote = appProject(namespace, RemoteAppProjectName(tenantID), tenantID, repos, there,
		[]metav1.GroupKind{{Group: "*", Kind: "*"}})
	return local, remote
}

func appProject(namespace, name, tenantID string, repos []string, dests []argov1alpha1.ApplicationDestination,
	clusterResources []metav1.GroupKind) *argov1alpha1.AppProject {
	slices.SortFunc(dests, func(a, b argov1alpha1.ApplicationDestination) int {
		return strings.Compare(a.Server+"|"+a.Name+"|"+a.Namespace, b.Server+"|"+b.Name+"|"+b.Namespace)
	})
	spec := argov1alpha1.AppProjectSpec{
		SourceRepos:              slices.Clone(repos),
		Destinations:             slices.Compact(dests),
		ClusterResourceWhitelist: clusterResources,
	}
	return &argov1alpha1.AppProject{
		TypeMeta: metav1.TypeMeta{APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "AppProject"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   namespace,
			Labels:      map[string]string{LabelManagedBy: ManagedByValue, LabelTenantID: tenantID},
			Annotations: map[string]string{AnnotationDataHash: ProjectSpecHash(spec)},
		},
		Spec: spec,
	}
}

// ProjectSpecHash is a SHA-256 of an AppProject's spec, kept in AnnotationDataHash so that
// the sweep can tell a project edited by hand without reading the rows it came from.
func ProjectSpecHash(spec argov1alpha1.AppProjectSpec) string {
	data, err := json.Marshal(spec)
	if err != nil {
		return "" // never for these types; an empty hash only makes the sweep look closer
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// uniqueRepositories sorts repository URLs and keeps one of each set that Argo CD treats
// as the same repository (see RepositoryKey).
func uniqueRepositories(urls []string) []string {
	repos := slices.Clone(urls)
	slices.SortFunc(repos, func(a, b string) int {
		if c := strings.Compare(RepositoryKey(a), RepositoryKey(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return slices.CompactFunc(repos, func(a, b string) bool { return RepositoryKey(a) == RepositoryKey(b) })
}

// RepositoryKey is the form in which Argo CD compares repository URLs when it matches an
// Application's source with its AppProject's sourceRepos and with repository Secrets:
// case-insensitive, without surrounding spaces, a trailing slash or a ".git" suffix, and
// with scp-like SSH addresses (git@host:org/repo) written as ssh:// URLs. Two URLs with
// the same key are one entry of sourceRepos.
func RepositoryKey(url string) string {
	u := strings.ToLower(strings.TrimSpace(url))
	if !strings.Contains(u, "://") && strings.Contains(u, "@") && strings.Contains(u, ":") {
		u = "ssh://" + strings.Replace(u, ":", "/", 1)
	}
	u = strings.TrimRight(u, "/")
	return strings.TrimSuffix(u, ".git")
}
