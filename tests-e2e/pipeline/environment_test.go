package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
)

// writeKeyring writes a credentials keyring shared by the backend and the cluster-agent.
func writeKeyring(t *testing.T) string {
	t.Helper()
	key, err := secretbox.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte(secretbox.FormatKeyLine("k1", key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// deployerKubeconfig is a kubeconfig of a cluster-admin ServiceAccount of the test cluster.
func (s *service) deployerKubeconfig() (kubeconfig []byte, token string) {
	s.t.Helper()
	kubeconfig, token, err := cp.ServiceAccountKubeconfig(s.ctx, cp.NewNamespace(s.t, "remote-"), "deployer")
	s.g.Expect(err).NotTo(HaveOccurred())
	return kubeconfig, token
}

func TestManagedEnvironmentBecomesAnArgoCDClusterSecret(t *testing.T) {
	t.Parallel()
	s := startService(t)
	kubeconfig, token := s.deployerKubeconfig()
	s.g.Expect(cp.Client.Create(s.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-creds", Namespace: s.tenant},
		Type:       v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": kubeconfig},
	})).To(Succeed())
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: s.tenant},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: cp.Config.Host, ClusterCredentialsSecret: "prod-creds",
			Namespaces: []string{"default"}},
	}
	s.g.Expect(cp.Client.Create(s.ctx, env)).To(Succeed())

	// A deployment to it: its Application targets the environment's cluster Secret.
	depl := s.deploy("remote", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.Destination = v1.ApplicationDestination{Environment: "prod", Namespace: "default"}
	})
	app := s.application(depl)
	clusterName := app.Spec.Destination.Name
	s.g.Expect(clusterName).To(HavePrefix("managed-env-"))
	envID := clusterName[len("managed-env-"):]

	secret := &corev1.Secret{}
	s.g.Eventually(func() error {
		return cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: clusterName}, secret)
	}, eventually, poll).Should(Succeed())
	s.g.Expect(secret.Labels).To(HaveKeyWithValue("argocd.argoproj.io/secret-type", "cluster"))
	s.g.Expect(string(secret.Data["server"])).To(Equal(cp.Config.Host + "?managedEnvironment=" + envID))
	s.g.Expect(string(secret.Data["namespaces"])).To(Equal("default"))
	s.g.Expect(string(secret.Data["project"])).To(Equal(app.Spec.Project))
	var config argov1alpha1.ClusterConfig
	s.g.Expect(json.Unmarshal(secret.Data["config"], &config)).To(Succeed())
	s.g.Expect(config.BearerToken).To(Equal(token))
	s.g.Expect(config.TLSClientConfig.CAData).To(Equal(cp.Config.CAData))

	project := &argov1alpha1.AppProject{}
	s.g.Eventually(func() []argov1alpha1.ApplicationDestination {
		_ = cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: app.Spec.Project}, project)
		return project.Spec.Destinations
	}, eventually, poll).Should(ContainElement(argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName(envID), Namespace: "*"}))

	// Deleting the environment deletes the cluster Secret.
	s.g.Expect(cp.Client.Delete(s.ctx, env)).To(Succeed())
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(s.ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}))
	}, eventually, poll).Should(BeTrue())
}
