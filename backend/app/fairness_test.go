package app_test

import (
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/app"
)

// One tenant's cluster and Git server that accept connections and never answer do not
// delay another tenant's checks, even when that tenant has more hanging objects than there
// are workers; they end, after the configured timeout, in a condition that says so.
func TestSlowTenantDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	const (
		timeout = 5 * time.Second
		workers = 4
	)
	srv := gitServer(t)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	a := startBackend(t, func(o *app.Options) {
		o.RepositoryCABundle = caBundle
		o.ClusterCheckTimeout, o.RepositoryCheckTimeout = timeout, timeout
		o.MaxConcurrentReconciles = workers // each hanging check holds a worker until its timeout
	})
	b := a.asOther()

	// Tenant A: a cluster and a Git server that hang, with as many environments and
	// credentials as there are workers.
	clusterURL := "https://" + testenv.StallingListener(t)
	repoURL := "https://" + testenv.StallingListener(t) + "/repo.git"
	slowEnv := a.newEnvironment("hanging", v1.ManagedEnvironmentSecretType,
		map[string][]byte{"kubeconfig": kubeconfig(clusterURL, "a-token")},
		func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = clusterURL })
	slowCred := a.newRepositoryCredential("hanging-git", repoURL, v1.RepositoryCredentialSecretType, basicAuth(gitUser, "a-secret-password"))
	for i := range workers {
		a.newEnvironment(fmt.Sprintf("hanging-%d", i), v1.ManagedEnvironmentSecretType,
			map[string][]byte{"kubeconfig": kubeconfig(clusterURL, "a-token")},
			func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = clusterURL })
		a.newRepositoryCredential(fmt.Sprintf("hanging-git-%d", i), repoURL, v1.RepositoryCredentialSecretType, basicAuth(gitUser, "a-secret-password"))
	}
	sshURL := "ssh://git@" + testenv.StallingListener(t) + "/repo.git"
	key, _ := sshKey(t)
	slowSSH := a.newRepositoryCredential("hanging-ssh", sshURL, v1.RepositoryCredentialSecretType,
		map[string][]byte{v1.RepositoryCredentialSecretSSHPrivateKeyKey: key})
	created := time.Now()
	time.Sleep(500 * time.Millisecond) // A's checks are under way

	// Tenant B: valid ones become valid while A's are still pending.
	env := b.newEnvironment("prod", v1.ManagedEnvironmentSecretType,
		map[string][]byte{"kubeconfig": kubeconfig(cp.Config.Host, b.serviceAccountToken("deployer", true))})
	cred := b.newRepositoryCredential("good-git", srv.URL+"/repo.git", v1.RepositoryCredentialSecretType, basicAuth(gitUser, gitPassword))
	b.g.Eventually(b.connection(env), 3*time.Second, poll).Should(HaveField("Status", metav1.ConditionTrue))
	b.g.Eventually(b.repoCondition(cred, v1.RepositoryCredentialConditionValidRepositoryCredential), 3*time.Second, poll).Should(
		HaveField("Status", metav1.ConditionTrue))
	a.g.Expect(time.Since(created)).To(BeNumerically("<", timeout), "B's checks waited for A's")
	a.g.Expect(a.connection(slowEnv)()).To(BeNil(), "A's environment is still being checked")
	a.g.Expect(a.repoCondition(slowCred, v1.RepositoryCredentialConditionValidRepositoryUrl)()).To(BeNil(), "A's credential is still being checked")

	// A's end in a timeout condition that names the address and the bound, and no secret.
	// They take their turns: a tenant holds at most a quarter of the workers (here one), so
	// A's six credentials take six timeouts.
	patience := 7 * timeout
	a.g.Eventually(a.connection(slowEnv), patience, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)),
		HaveField("Message", ContainSubstring("the cluster at "+clusterURL+" could not be reached")),
		HaveField("Message", Not(ContainSubstring("a-token")))))
	a.g.Eventually(a.repoCondition(slowCred, v1.RepositoryCredentialConditionValidRepositoryUrl), patience, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", v1.RepositoryCredentialReasonInvalidRepositoryUrl),
		HaveField("Message", ContainSubstring("the Git server of repository "+repoURL+" could not be reached")),
		HaveField("Message", Not(ContainSubstring("a-secret-password")))))
	a.g.Eventually(a.repoCondition(slowSSH, v1.RepositoryCredentialConditionValidRepositoryUrl), patience, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Message", ContainSubstring("the Git server of repository "+sshURL+" could not be reached")),
		HaveField("Message", Not(ContainSubstring("PRIVATE KEY")))))
	a.g.Expect(time.Since(created)).To(BeNumerically(">=", timeout-time.Second))
}
