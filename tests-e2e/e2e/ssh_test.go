package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
)

var _ = Describe("A repository over SSH", func() {
	It("deploys with a RepositoryCredential holding a deploy key, through Argo CD", func(ctx SpecContext) {
		ns := tenant(ctx, "ssh")
		_, sha := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("over-ssh", "greeting", "hello")}, nil)
		url := f.Git.SSH.URL(ns)

		Expect(f.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "deploy-key", Namespace: ns},
			Type:       v1.RepositoryCredentialSecretType,
			Data:       map[string][]byte{v1.RepositoryCredentialSecretSSHPrivateKeyKey: f.GitSSHKey},
		})).To(Succeed())
		cred := &v1.GitOpsDeploymentRepositoryCredential{
			ObjectMeta: metav1.ObjectMeta{Name: "deploy-key", Namespace: ns},
			Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: url, Secret: "deploy-key"},
		}
		Expect(f.Client.Create(ctx, cred)).To(Succeed())
		Eventually(Object(ctx, f.Client, cred)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.RepositoryCredentialConditionValidRepositoryCredential),
			HaveField("Status", metav1.ConditionTrue)))))

		depl := gitopsDeployment(ns, "over-ssh", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha), HaveResource("ConfigMap", "over-ssh")))
		Expect(ConfigMapData(ctx, f.Client, ns, "over-ssh")()).To(HaveKeyWithValue("greeting", "hello"))
	})
})
