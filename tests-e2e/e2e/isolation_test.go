package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
)

var _ = Describe("Tenants", func() {
	It("read a private repository with their own GitOpsDeploymentRepositoryCredential, and only they do", func(ctx SpecContext) {
		owner, other := tenant(ctx, "owner"), tenant(ctx, "other")
		creds := &gitserver.Credentials{Username: "deployer", Password: "s3cret-token"}
		url, sha := repository(owner, map[string]string{"app/configmap.yaml": ConfigMap("private", "greeting", "secret")}, creds)

		Expect(f.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: owner},
			Type:       v1.RepositoryCredentialSecretType,
			StringData: map[string]string{
				v1.RepositoryCredentialSecretUsernameKey: creds.Username,
				v1.RepositoryCredentialSecretPasswordKey: creds.Password,
			},
		})).To(Succeed())
		credential := &v1.GitOpsDeploymentRepositoryCredential{
			ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: owner},
			Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: url, Secret: "git-creds"},
		}
		Expect(f.Client.Create(ctx, credential)).To(Succeed())
		Eventually(Object(ctx, f.Client, credential)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.RepositoryCredentialConditionValidRepositoryCredential),
			HaveField("Status", metav1.ConditionTrue)))))

		depl := gitopsDeployment(owner, "private", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha)))
		Expect(configMap(ctx, f.Client, owner, "private")()).To(HaveKeyWithValue("greeting", "secret"))

		By("another tenant pointing at the same repository without credentials of its own")
		theirs := gitopsDeployment(other, "private", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, theirs)).To(Succeed())
		Eventually(Object(ctx, f.Client, theirs)).Should(HaveCondition(v1.GitOpsDeploymentConditionComparisonError, v1.GitOpsConditionStatusTrue))
		Consistently(configMap(ctx, f.Client, other, "private")).Should(absent)
	})

	It("cannot deploy into another tenant's namespace", func(ctx SpecContext) {
		victim, attacker := tenant(ctx, "victim"), tenant(ctx, "attacker")
		intrusion := ConfigMap("intrusion", "owned", "yes")
		intrusion = intrusion[:len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n")] + "  namespace: " + victim + "\n" +
			intrusion[len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n"):]
		url, _ := repository(attacker, map[string]string{
			"app/intrusion.yaml": intrusion,
			"app/own.yaml":       ConfigMap("own", "fine", "yes"),
		}, nil)
		depl := gitopsDeployment(attacker, "intrude", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		// Argo CD refuses the whole sync: the resource's namespace is outside the tenant's project.
		Eventually(Object(ctx, f.Client, depl)).ShouldNot(HaveField("Status.Sync.Status", BeEmpty()))
		Consistently(configMap(ctx, f.Client, victim, "intrusion"), "15s").Should(absent)
		Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(depl), depl)).To(Succeed())
		Expect(depl.Status.Sync.Status).NotTo(Equal(v1.SyncStatusCodeSynced))
	})
})
