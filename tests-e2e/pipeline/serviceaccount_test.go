package pipeline

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// clientCertKubeconfig is ControlPlane.ClientCertKubeconfig for a test.
func clientCertKubeconfig(t *testing.T, plane *testenv.ControlPlane, name string, groups ...string) ([]byte, *rest.Config) {
	t.Helper()
	data, cfg, err := plane.ClientCertKubeconfig(name, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return data, cfg
}

// connectEnvironment creates a ManagedEnvironment (and its Secret) for apiURL and returns
// the Argo CD cluster Secret the cluster-agent writes for it, with its decoded config.
func (s *service) connectEnvironment(name, apiURL string, kubeconfig []byte, createNewServiceAccount bool) (*corev1.Secret, argov1alpha1.ClusterConfig) {
	s.t.Helper()
	s.g.Expect(cp.Client.Create(s.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-creds", Namespace: s.tenant},
		Type:       v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": kubeconfig},
	})).To(Succeed())
	s.g.Expect(cp.Client.Create(s.ctx, &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.tenant},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: apiURL, ClusterCredentialsSecret: name + "-creds",
			CreateNewServiceAccount: createNewServiceAccount},
	})).To(Succeed())
	var secret corev1.Secret
	s.g.Eventually(func() []corev1.Secret {
		list := &corev1.SecretList{}
		s.g.Expect(cp.Client.List(s.ctx, list, client.InNamespace(s.engine),
			client.MatchingLabels{argocd.LabelSecretType: argocd.SecretTypeCluster})).To(Succeed())
		return list.Items
	}, 2*eventually, poll).Should(ContainElement(HaveField("Data", HaveKey("config")), &secret))
	var config argov1alpha1.ClusterConfig
	s.g.Expect(json.Unmarshal(secret.Data["config"], &config)).To(Succeed())
	return &secret, config
}

// clusterClient is what Argo CD would connect with, from a cluster Secret's config.
func clusterClient(server string, config argov1alpha1.ClusterConfig) (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(&rest.Config{
		Host: server, BearerToken: config.BearerToken, Username: config.Username, Password: config.Password,
		TLSClientConfig: rest.TLSClientConfig{Insecure: config.Insecure, CAData: config.CAData,
			CertData: config.CertData, KeyData: config.KeyData},
	})
}

func TestCreateNewServiceAccountGivesArgoCDTheServiceAccountToken(t *testing.T) {
	t.Parallel()
	remote, err := testenv.StartControlPlane(testenv.Options{ControllerManager: true, WithoutServiceCRDs: true, WithoutArgoCDCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remote.Stop() })
	s := startService(t)
	kubeconfig, user := clientCertKubeconfig(t, remote, "installer", "system:masters")

	secret, config := s.connectEnvironment("sa", remote.Config.Host, kubeconfig, true)

	// Argo CD gets the installed ServiceAccount's token, not the user's credentials.
	tokenSecrets := &corev1.SecretList{}
	s.g.Expect(remote.Client.List(s.ctx, tokenSecrets, client.InNamespace("kube-system"),
		client.HasLabels{"managed-gitops.redhat.com/managed-environment-uid"})).To(Succeed())
	s.g.Expect(tokenSecrets.Items).To(HaveLen(1))
	token := string(tokenSecrets.Items[0].Data[corev1.ServiceAccountTokenKey])
	s.g.Expect(token).NotTo(BeEmpty())
	s.g.Expect(config.BearerToken).To(Equal(token))
	s.g.Expect(config.TLSClientConfig.CertData).To(BeEmpty())
	s.g.Expect(config.TLSClientConfig.KeyData).To(BeEmpty())
	s.g.Expect(string(secret.Data["config"])).NotTo(ContainSubstring(string(user.KeyData)))
	s.g.Expect(config.TLSClientConfig.CAData).To(Equal(user.CAData))

	// ... and it works on the target cluster.
	cs, err := clusterClient(remote.Config.Host, config)
	s.g.Expect(err).NotTo(HaveOccurred())
	namespaces, err := cs.CoreV1().Namespaces().List(s.ctx, metav1.ListOptions{})
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(namespaces.Items).NotTo(BeEmpty())
}

func TestClientCertificateKubeconfigBecomesAnArgoCDClusterSecret(t *testing.T) {
	t.Parallel()
	s := startService(t)
	kubeconfig, user := clientCertKubeconfig(t, cp, "deployer-cert", "system:masters")
	// spec.apiURL has a trailing slash, the kubeconfig's server has none.
	s.g.Expect(cp.Config.Host).To(HaveSuffix("/"))
	secret, config := s.connectEnvironment("cert", cp.Config.Host, kubeconfig, false)

	s.g.Expect(config.BearerToken).To(BeEmpty())
	s.g.Expect(config.TLSClientConfig.CertData).To(Equal(user.CertData))
	s.g.Expect(config.TLSClientConfig.KeyData).To(Equal(user.KeyData))
	s.g.Expect(config.TLSClientConfig.CAData).To(Equal(user.CAData))
	s.g.Expect(string(secret.Data["server"])).To(HavePrefix(cp.Config.Host + "?managedEnvironment="))

	// Argo CD can connect with it.
	cs, err := clusterClient(cp.Config.Host, config)
	s.g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().Namespaces().List(s.ctx, metav1.ListOptions{Limit: 1})
	s.g.Expect(err).NotTo(HaveOccurred())
}
