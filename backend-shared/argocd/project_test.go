package argocd

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

func TestAppProjectsSplitDestinations(t *testing.T) {
	const tenant = "6f1c2a90-334b-4e8d-9a10-5521770eabcd"
	local, remote := AppProjects("argocd", tenant, InClusterServer,
		[]string{"https://git.example.com/org/b", "https://git.example.com/org/a"},
		[]ProjectDestination{{Namespace: "team-b"}, {ManagedEnvironmentID: "env-1", Namespace: "*"}, {Namespace: "team-a"}, {Namespace: "team-a"}})

	if local.Name != "app-project-"+tenant || remote.Name != "app-project-"+tenant+"-remote" {
		t.Fatalf("names: %q, %q", local.Name, remote.Name)
	}
	wantLocal := []argov1alpha1.ApplicationDestination{{Server: InClusterServer, Namespace: "team-a"}, {Server: InClusterServer, Namespace: "team-b"}}
	if !reflect.DeepEqual(local.Spec.Destinations, wantLocal) {
		t.Errorf("in-cluster destinations: %+v, want %+v", local.Spec.Destinations, wantLocal)
	}
	if local.Spec.ClusterResourceWhitelist != nil {
		t.Errorf("the in-cluster AppProject allows cluster-scoped resources: %+v", local.Spec.ClusterResourceWhitelist)
	}
	wantRemote := []argov1alpha1.ApplicationDestination{{Name: "managed-env-env-1", Namespace: "*"}}
	if !reflect.DeepEqual(remote.Spec.Destinations, wantRemote) {
		t.Errorf("managed-environment destinations: %+v, want %+v", remote.Spec.Destinations, wantRemote)
	}
	if want := []metav1.GroupKind{{Group: "*", Kind: "*"}}; !reflect.DeepEqual(remote.Spec.ClusterResourceWhitelist, want) {
		t.Errorf("managed-environment cluster resources: %+v, want %+v", remote.Spec.ClusterResourceWhitelist, want)
	}
	for _, p := range []*argov1alpha1.AppProject{local, remote} {
		if want := []string{"https://git.example.com/org/a", "https://git.example.com/org/b"}; !reflect.DeepEqual(p.Spec.SourceRepos, want) {
			t.Errorf("%s sourceRepos: %v, want %v", p.Name, p.Spec.SourceRepos, want)
		}
		if p.Labels[LabelTenantID] != tenant || p.Labels[LabelManagedBy] != ManagedByValue {
			t.Errorf("%s labels: %v", p.Name, p.Labels)
		}
	}
}

func TestProjectName(t *testing.T) {
	if got := ProjectName("t", Destination{Namespace: "n"}); got != "app-project-t" {
		t.Errorf("in-cluster: %q", got)
	}
	if got := ProjectName("t", Destination{ManagedEnvironmentID: "e", Namespace: "n"}); got != "app-project-t-remote" {
		t.Errorf("managed environment: %q", got)
	}
}

func TestRepositoryKeyMatchesArgoCDVariants(t *testing.T) {
	same := [][]string{
		{"https://github.com/Org/Repo", "https://github.com/org/repo.git", " https://GitHub.com/org/repo/ "},
		{"ssh://git@github.com/org/repo", "git@github.com:org/repo.git", "ssh://git@github.com/org/repo.git"},
	}
	for _, group := range same {
		for _, u := range group[1:] {
			if RepositoryKey(u) != RepositoryKey(group[0]) {
				t.Errorf("%q and %q should be one repository: %q != %q", u, group[0], RepositoryKey(u), RepositoryKey(group[0]))
			}
		}
	}
	different := [][2]string{
		{"https://github.com/org/repo", "ssh://git@github.com/org/repo"},
		{"https://github.com/org/repo", "https://github.com/org/repo2"},
		{"https://github.com/org/repo", "https://gitlab.com/org/repo"},
	}
	for _, d := range different {
		if RepositoryKey(d[0]) == RepositoryKey(d[1]) {
			t.Errorf("%q and %q are different repositories", d[0], d[1])
		}
	}
	got := uniqueRepositories([]string{"https://x.example/b.git", "https://x.example/a", "https://X.example/A.git", "https://x.example/b"})
	if want := []string{"https://X.example/A.git", "https://x.example/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("uniqueRepositories: %v, want %v", got, want)
	}
}

func TestRepositorySecretsOnePerProject(t *testing.T) {
	secrets := RepositorySecrets("argocd", Repository{RepositoryCredentialID: "c1", TenantID: "t", URL: "https://x.example/r", Username: "u", Password: "p"})
	if len(secrets) != 2 {
		t.Fatalf("%d Secrets", len(secrets))
	}
	want := map[string]string{"repo-cred-c1": "app-project-t", "repo-cred-c1-remote": "app-project-t-remote"}
	for _, s := range secrets {
		if want[s.Name] == "" || string(s.Data["project"]) != want[s.Name] {
			t.Errorf("Secret %s has project %q", s.Name, s.Data["project"])
		}
		if string(s.Data["password"]) != "p" || s.Data["sshPrivateKey"] != nil {
			t.Errorf("Secret %s data keys wrong", s.Name)
		}
	}
}
