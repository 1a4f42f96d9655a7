package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

var _ = Describe("Credentials", func() {
	It("never appear in the service's logs, in events, in status or in the database in clear", func(ctx SpecContext) {
		ns := tenant(ctx, "secrets")
		// The control plane itself, reached as a managed environment with a token.
		kubeconfig, token, err := f.Stack.ControlPlane.ServiceAccountKubeconfig(ctx, ns, "deployer")
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: ns},
			Type:       v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": kubeconfig},
		})).To(Succeed())
		env := &v1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: ns},
			Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: f.Stack.ControlPlane.Config.Host,
				ClusterCredentialsSecret: "cluster", Namespaces: []string{ns}},
		}
		Expect(f.Client.Create(ctx, env)).To(Succeed())

		password := "pa55-" + ns
		creds := &gitserver.Credentials{Username: "reader", Password: password}
		url, _ := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("secret-app", "k", "v")}, creds)
		Expect(f.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: ns},
			Type:       v1.RepositoryCredentialSecretType,
			StringData: map[string]string{v1.RepositoryCredentialSecretUsernameKey: creds.Username, v1.RepositoryCredentialSecretPasswordKey: password},
		})).To(Succeed())
		repoCred := &v1.GitOpsDeploymentRepositoryCredential{
			ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: ns},
			Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: url, Secret: "git"},
		}
		Expect(f.Client.Create(ctx, repoCred)).To(Succeed())
		depl := gitopsDeployment(ns, "secret-app", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		depl.Spec.Destination = v1.ApplicationDestination{Environment: "env", Namespace: ns}
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(BeSyncedAndHealthy())

		By("a wrong password, so that the error paths are exercised too")
		wrong := "wr0ng-" + ns
		Expect(f.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "git-wrong", Namespace: ns},
			Type:       v1.RepositoryCredentialSecretType,
			StringData: map[string]string{v1.RepositoryCredentialSecretUsernameKey: creds.Username, v1.RepositoryCredentialSecretPasswordKey: wrong},
		})).To(Succeed())
		wrongCred := &v1.GitOpsDeploymentRepositoryCredential{
			ObjectMeta: metav1.ObjectMeta{Name: "git-wrong", Namespace: ns},
			Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: url, Secret: "git-wrong"},
		}
		Expect(f.Client.Create(ctx, wrongCred)).To(Succeed())
		Eventually(Object(ctx, f.Client, wrongCred)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.RepositoryCredentialConditionValidRepositoryCredential),
			HaveField("Status", metav1.ConditionFalse)))))

		secrets := []string{token, password, wrong}
		for _, name := range stack.Binaries {
			data, err := os.ReadFile(filepath.Join(f.LogDir(), name+".log"))
			Expect(err).NotTo(HaveOccurred())
			for _, s := range secrets {
				Expect(string(data)).NotTo(ContainSubstring(s), "%s's log", name)
			}
		}
		var events corev1.EventList
		Expect(f.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		Expect(events.Items).NotTo(BeEmpty())
		statuses, err := json.Marshal([]any{env.Status, repoCred.Status, wrongCred.Status, depl.Status, events.Items})
		Expect(err).NotTo(HaveOccurred())
		dump, err := f.Stack.Postgres.Dump(ctx, "postgres", "--data-only")
		Expect(err).NotTo(HaveOccurred())
		Expect(dump).To(ContainSubstring(url), "the dump holds the service's rows")
		for _, s := range secrets {
			Expect(string(statuses)).NotTo(ContainSubstring(s))
			Expect(dump).NotTo(ContainSubstring(s))
		}
	})
})
