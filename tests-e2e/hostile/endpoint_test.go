package hostile

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// TestEndlessAPIServer: a tenant's ManagedEnvironment names an API server, and its
// RepositoryCredential a Git server, that answer every request with an endless body. Both
// get a False condition within 30 s, the backend neither restarts nor grows by 128 MiB, and
// another tenant's new deployment goes on meanwhile.
func TestEndlessAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hostile := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/info/refs") {
			// A Git reference advertisement of up to 2 GiB of refs.
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			hash := strings.Repeat("a", 40)
			_, _ = io.WriteString(w, pkt("# service=git-upload-pack\n")+"0000"+pkt(hash+" HEAD\x00multi_ack\n"))
			_, _ = io.Copy(w, io.LimitReader(&repeated{b: []byte(pkt(hash + " refs/heads/branch\n"))}, 2<<30))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// Up to 2 GiB, for as long as the caller reads.
		_, _ = io.Copy(w, io.LimitReader(zeros{}, 2<<30))
	}))
	defer hostile.Close()

	// The backend trusts the hostile server's certificate, so that its check reads the answer.
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	g.Expect(os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hostile.Certificate().Raw}), 0o600)).To(Succeed())
	s := stack.StartForTest(t, stack.Options{Binaries: []string{"backend", "cluster-agent"},
		Args: map[string][]string{"backend": {"--repository-ca-file=" + caFile}}})
	c := s.ControlPlane.Client
	pid := s.Processes["backend"].Pid()
	before, _ := stack.RSSMiB(pid)

	const attacker, bystander = "attacker", "bystander"
	for _, ns := range []string{attacker, bystander} {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hostile"] = &clientcmdapi.Cluster{Server: hostile.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hostile.Certificate().Raw})}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: "token"}
	cfg.Contexts["hostile"] = &clientcmdapi.Context{Cluster: "hostile", AuthInfo: "user"}
	cfg.CurrentContext = "hostile"
	kubeconfig, err := clientcmd.Write(*cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "hostile"},
		Type: v1.ManagedEnvironmentSecretType, Data: map[string][]byte{v1.ManagedEnvironmentSecretKubeconfigKey: kubeconfig}})).To(Succeed())
	env := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "hostile"},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: hostile.URL, ClusterCredentialsSecret: "hostile"}}
	g.Expect(c.Create(ctx, env)).To(Succeed())

	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "git"},
		Type: v1.RepositoryCredentialSecretType, StringData: map[string]string{
			v1.RepositoryCredentialSecretUsernameKey: "user", v1.RepositoryCredentialSecretPasswordKey: "password"}})).To(Succeed())
	cred := &v1.GitOpsDeploymentRepositoryCredential{ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: "hostile"},
		Spec: v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: hostile.URL + "/repo.git", Secret: "git"}}
	g.Expect(c.Create(ctx, cred)).To(Succeed())

	depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: bystander, Name: "app"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://git.example.com/bystander/config.git", Path: "app"},
			Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	g.Expect(c.Create(ctx, depl)).To(Succeed())

	g.Eventually(func() (metav1.ConditionStatus, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(env), env); err != nil {
			return "", err
		}
		for _, cond := range env.Status.Conditions {
			if cond.Type == v1.ManagedEnvironmentConditionConnectionInitializationSucceeded {
				t.Logf("%s: %s", cond.Reason, cond.Message)
				return cond.Status, nil
			}
		}
		return "", nil
	}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Equal(metav1.ConditionFalse), "the environment is told it cannot connect")
	g.Eventually(func() (metav1.ConditionStatus, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cred), cred); err != nil {
			return "", err
		}
		for _, cond := range cred.Status.Conditions {
			if cond.Type == v1.RepositoryCredentialConditionValidRepositoryUrl {
				t.Logf("%s: %s", cond.Reason, cond.Message)
				// Cut off, not left to stream until the check's timeout.
				g.Expect(cond.Message).To(ContainSubstring("answer exceeds 16 MiB"))
				return cond.Status, nil
			}
		}
		return "", nil
	}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Equal(metav1.ConditionFalse), "the credential is told the repository cannot be read")
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: stack.EngineNamespace, Name: argocd.ApplicationName(depl.UID)}, &argov1alpha1.Application{})
	}).WithTimeout(60*time.Second).Should(Succeed(), "the other tenant's deployment reached Argo CD")

	time.Sleep(10 * time.Second) // the environment's check runs again meanwhile
	g.Expect(s.Processes["backend"].Running()).To(BeTrue(), "the backend was not killed")
	g.Expect(s.Processes["backend"].Pid()).To(Equal(pid))
	_, peak := stack.RSSMiB(pid)
	t.Logf("backend RSS before %.0f MiB, peak %.0f MiB", before, peak)
	g.Expect(peak-before).To(BeNumerically("<", 128), "the backend grows by less than 128 MiB")
}
