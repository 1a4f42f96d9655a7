package indexes

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

func TestEachIndexReadsItsField(t *testing.T) {
	depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{UID: "uid-deployment"},
		Spec: v1.GitOpsDeploymentSpec{Destination: v1.ApplicationDestination{Environment: "prod"}}}
	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{UID: "uid-syncrun"},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "app"}}
	env := &v1.GitOpsDeploymentManagedEnvironment{
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{ClusterCredentialsSecret: "kubeconfig"}}
	cred := &v1.GitOpsDeploymentRepositoryCredential{Spec: v1.GitOpsDeploymentRepositoryCredentialSpec{Secret: "git-creds"}}
	tests := []struct {
		obj   client.Object
		field string
		want  string
	}{
		// A notification carries a row id, which is the CR's UID.
		{depl, UID, "uid-deployment"},
		{run, UID, "uid-syncrun"},
		// A ManagedEnvironment's change reaches the deployments that name it.
		{depl, DeploymentEnvironment, "prod"},
		// A GitOpsDeployment's change reaches the SyncRuns that name it.
		{run, SyncRunDeployment, "app"},
		// A Secret's change reaches the CRs that read their credentials from it.
		{env, ManagedEnvironmentSecret, "kubeconfig"},
		{cred, RepositoryCredentialSecret, "git-creds"},
	}
	g := NewWithT(t)
	g.Expect(all).To(HaveLen(len(tests)), "every index has a case")
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T %s", tt.obj, tt.field), func(t *testing.T) {
			g := NewWithT(t)
			var found bool
			for _, i := range all {
				if i.field == tt.field && fmt.Sprintf("%T", i.obj) == fmt.Sprintf("%T", tt.obj) {
					found = true
					g.Expect(i.extract(tt.obj)).To(Equal([]string{tt.want}))
				}
			}
			g.Expect(found).To(BeTrue(), "the index is registered")
		})
	}
}
