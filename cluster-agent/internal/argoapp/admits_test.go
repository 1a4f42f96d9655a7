package argoapp

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

func TestAdmitsOnlyWhatTheProjectAsWrittenAllows(t *testing.T) {
	const (
		tenant = "tenant-1"
		repo   = "https://git.example.com/team/config.git"
		envID  = "env-1"
	)
	id := engine.Identity{Namespace: "argocd"}
	// The projects the service writes for a tenant with one namespace on the service's
	// cluster, one managed environment and one repository.
	local, remote := argocd.AppProjects(id.Namespace, tenant, id.ServiceServer(), []string{repo},
		[]argocd.ProjectDestination{{Namespace: "team-a"}, {ManagedEnvironmentID: envID, Namespace: "*"}})
	inCluster := func(ns, repoURL string) *argov1alpha1.Application {
		return id.Application("app", "app-id", tenant, argov1alpha1.ApplicationSpec{
			Source:      &argov1alpha1.ApplicationSource{RepoURL: repoURL, Path: "p"},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: ns},
			Project:     local.Name,
		})
	}
	onEnv := func(env, ns string) *argov1alpha1.Application {
		return id.Application("app", "app-id", tenant, argov1alpha1.ApplicationSpec{
			Source:      &argov1alpha1.ApplicationSource{RepoURL: repo, Path: "p"},
			Destination: argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName(env), Namespace: ns},
			Project:     remote.Name,
		})
	}
	edited := local.DeepCopy()
	edited.Spec.SourceRepos = append(edited.Spec.SourceRepos, "*")
	deleting := local.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	otherTenant := local.DeepCopy()
	otherTenant.Labels[argocd.LabelTenantID] = "tenant-2"
	withoutSource := inCluster("team-a", repo)
	withoutSource.Spec.Source = nil

	tests := []struct {
		name    string
		project *argov1alpha1.AppProject
		app     *argov1alpha1.Application
		want    bool
	}{
		{"its namespace and repository", local, inCluster("team-a", repo), true},
		{"a variant spelling of its repository", local, inCluster("team-a", "https://GIT.example.com/team/config/"), true},
		{"another namespace", local, inCluster("team-b", repo), false},
		{"another repository", local, inCluster("team-a", "https://git.example.com/team/other.git"), false},
		{"its managed environment, any namespace", remote, onEnv(envID, "anything"), true},
		{"another managed environment", remote, onEnv("env-2", "anything"), false},
		{"the in-cluster project does not admit a managed environment", local, onEnv(envID, "team-a"), false},
		// What Ensure would rewrite or recreate is never taken as it is.
		{"a project edited by hand", edited, inCluster("team-a", repo), false},
		{"a project being deleted", deleting, inCluster("team-a", repo), false},
		{"another tenant's project", otherTenant, inCluster("team-a", repo), false},
		{"an Application without a single source", local, withoutSource, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(admits(tt.project, tt.app)).To(Equal(tt.want))
		})
	}
}
