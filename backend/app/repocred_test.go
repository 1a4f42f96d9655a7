package app_test

import (
	"encoding/base64"
	"encoding/pem"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/app"
)

const (
	gitUser     = "alice"
	gitPassword = "s3cret"
)

// gitServer serves the bare repository repo.git (one commit) over https with git
// http-backend, for user alice with password s3cret only.
func gitServer(t *testing.T) *httptest.Server {
	t.Helper()
	password := &atomic.Value{}
	password.Store(gitPassword)
	return gitServerWithPassword(t, password)
}

// gitServerWithPassword is gitServer accepting the password password holds at the time of
// each request, so that a test can change it on the server side.
func gitServerWithPassword(t *testing.T, password *atomic.Value) *httptest.Server {
	t.Helper()
	root, env := testenv.GitRepositories(t)
	return testenv.GitHTTPSServer(t, root, env, gitUser, func() string { return password.Load().(string) })
}

func (h *harness) newRepositoryCredential(name, repository string, secretType corev1.SecretType, data map[string][]byte) *v1.GitOpsDeploymentRepositoryCredential {
	h.t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-secret", Namespace: h.tenant}, Type: secretType, Data: data}
	h.g.Expect(cp.Client.Create(h.ctx, secret)).To(Succeed())
	cred := &v1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.tenant},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: repository, Secret: secret.Name},
	}
	h.g.Expect(cp.Client.Create(h.ctx, cred)).To(Succeed())
	return cred
}

func (h *harness) repoCondition(cred *v1.GitOpsDeploymentRepositoryCredential, typ string) func() *metav1.Condition {
	return func() *metav1.Condition {
		got := &v1.GitOpsDeploymentRepositoryCredential{}
		h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(cred), got)).To(Succeed())
		return meta.FindStatusCondition(got.Status.Conditions, typ)
	}
}

func basicAuth(user, password string) map[string][]byte {
	return map[string][]byte{v1.RepositoryCredentialSecretUsernameKey: []byte(user), v1.RepositoryCredentialSecretPasswordKey: []byte(password)}
}

func TestRepositoryCredential(t *testing.T) {
	t.Parallel()
	srv := gitServer(t)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	h := startBackend(t, func(o *app.Options) { o.RepositoryCABundle = caBundle })
	repoURL := srv.URL + "/repo.git"

	// Valid credentials are stored encrypted and signalled to the cluster-agent.
	good := h.newRepositoryCredential("good", repoURL, v1.RepositoryCredentialSecretType, basicAuth(gitUser, gitPassword))
	h.g.Eventually(h.repoCondition(good, v1.RepositoryCredentialConditionValidRepositoryCredential), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1.RepositoryCredentialReasonValidCredentials)))
	h.g.Expect(h.repoCondition(good, v1.RepositoryCredentialConditionValidRepositoryUrl)()).To(HaveField("Status", metav1.ConditionTrue))
	h.g.Expect(h.repoCondition(good, v1.RepositoryCredentialConditionErrorOccurred)()).To(HaveField("Status", metav1.ConditionFalse))
	tenant := h.tenantRow()
	mapping, err := h.store.GetAPICRMapping(h.ctx, h.db, tenant.ID, db.APIResourceRepositoryCredential, string(good.UID))
	h.g.Expect(err).NotTo(HaveOccurred())
	credID := mapping.TargetID()
	row, err := h.store.GetRepositoryCredential(h.ctx, h.db, tenant.ID, credID)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(row.RepositoryURL).To(Equal(repoURL))
	h.g.Expect(string(row.Username)).To(Equal(gitUser))
	h.g.Expect(string(row.Password)).To(Equal(gitPassword))
	var passwordEnc string
	h.g.Expect(h.db.NewSelect().Table("repository_credentials").Column("password_enc").Where("id = ?", credID).Scan(h.ctx, &passwordEnc)).To(Succeed())
	h.g.Expect(passwordEnc).NotTo(BeEmpty())
	h.g.Expect(passwordEnc).NotTo(ContainSubstring(gitPassword))
	h.g.Expect(passwordEnc).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(gitPassword))))
	h.g.Expect(h.operations(db.OperationResourceRepositoryCredential, credID)).To(HaveLen(1))
	repos, err := h.store.ListAppProjectRepositories(h.ctx, h.db, tenant.ID)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(repos).To(ContainElement(repoURL))

	// Re-validating unchanged credentials (here after a change to the Secret's labels) writes nothing.
	secret := &corev1.Secret{}
	h.g.Expect(cp.Client.Get(h.ctx, keyOf(h.tenant, good.Spec.Secret), secret)).To(Succeed())
	secret.Labels = map[string]string{"touched": "yes"}
	h.g.Expect(cp.Client.Update(h.ctx, secret)).To(Succeed())
	h.g.Consistently(func() []db.Operation { return h.operations(db.OperationResourceRepositoryCredential, credID) }, "2s", poll).Should(HaveLen(1))

	// Problems are reported as conditions and store nothing.
	cases := []struct {
		name, repository string
		secretType       corev1.SecretType
		data             map[string][]byte
		condition        string
		reason, message  string
	}{
		{name: "wrong-password", repository: repoURL, secretType: v1.RepositoryCredentialSecretType, data: basicAuth(gitUser, "wrong-pw"),
			condition: v1.RepositoryCredentialConditionValidRepositoryCredential, reason: v1.RepositoryCredentialReasonInvalidCredentials, message: "refused the credentials"},
		{name: "missing-repo", repository: srv.URL + "/missing.git", secretType: v1.RepositoryCredentialSecretType, data: basicAuth(gitUser, gitPassword),
			condition: v1.RepositoryCredentialConditionValidRepositoryUrl, reason: v1.RepositoryCredentialReasonInvalidRepositoryUrl, message: "not found"},
		{name: "wrong-type", repository: repoURL, secretType: corev1.SecretTypeOpaque, data: basicAuth(gitUser, gitPassword),
			condition: v1.RepositoryCredentialConditionValidRepositoryCredential, reason: v1.RepositoryCredentialReasonSecretInvalidType, message: "must be of type"},
		{name: "no-keys", repository: repoURL, secretType: v1.RepositoryCredentialSecretType, data: map[string][]byte{"token": []byte("x")},
			condition: v1.RepositoryCredentialConditionValidRepositoryCredential, reason: v1.RepositoryCredentialReasonSecretInvalidType, message: `"username" and "password"`},
	}
	for _, c := range cases {
		cred := h.newRepositoryCredential(c.name, c.repository, c.secretType, c.data)
		h.g.Eventually(h.repoCondition(cred, c.condition), eventually, poll).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", c.reason), HaveField("Message", ContainSubstring(c.message))), c.name)
		h.g.Expect(h.repoCondition(cred, v1.RepositoryCredentialConditionErrorOccurred)()).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", Not(ContainSubstring("wrong-pw"))), HaveField("Message", Not(ContainSubstring(gitPassword)))), c.name)
		_, err := h.store.GetAPICRMapping(h.ctx, h.db, tenant.ID, db.APIResourceRepositoryCredential, string(cred.UID))
		h.g.Expect(err).To(MatchError(db.ErrNotFound), c.name)
	}
	// A missing Secret is reported too.
	missing := &v1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "no-secret", Namespace: h.tenant},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: repoURL, Secret: "absent"},
	}
	h.g.Expect(cp.Client.Create(h.ctx, missing)).To(Succeed())
	h.g.Eventually(h.repoCondition(missing, v1.RepositoryCredentialConditionValidRepositoryCredential), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.RepositoryCredentialReasonSecretNotFound)))

	// Events never carry the passwords.
	events := &corev1.EventList{}
	h.g.Expect(cp.Client.List(h.ctx, events, client.InNamespace(h.tenant))).To(Succeed())
	for _, e := range events.Items {
		h.g.Expect(e.Message).NotTo(Or(ContainSubstring(gitPassword), ContainSubstring("wrong-pw")))
	}

	// Deleting the credential removes its row and signals the cluster-agent.
	h.g.Expect(cp.Client.Delete(h.ctx, good)).To(Succeed())
	h.g.Eventually(func() error {
		_, err := h.store.GetRepositoryCredential(h.ctx, h.db, tenant.ID, credID)
		return err
	}, eventually, poll).Should(MatchError(db.ErrNotFound))
	h.g.Expect(h.operations(db.OperationResourceRepositoryCredential, credID)).To(HaveLen(2))
}

func TestRepositoryCredentialIsRevalidatedPeriodically(t *testing.T) {
	t.Parallel()
	password := &atomic.Value{}
	password.Store(gitPassword)
	srv := gitServerWithPassword(t, password)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	h := startBackend(t, func(o *app.Options) {
		o.RepositoryCABundle = caBundle
		o.RepositoryRevalidateInterval = time.Second
	})
	cred := h.newRepositoryCredential("revalidated", srv.URL+"/repo.git", v1.RepositoryCredentialSecretType, basicAuth(gitUser, gitPassword))
	valid := h.repoCondition(cred, v1.RepositoryCredentialConditionValidRepositoryCredential)
	h.g.Eventually(valid, eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1.RepositoryCredentialReasonValidCredentials)))
	secret := &corev1.Secret{}
	h.g.Expect(cp.Client.Get(h.ctx, keyOf(h.tenant, cred.Spec.Secret), secret)).To(Succeed())

	// The password changes on the Git server only: the next re-validation notices.
	password.Store("changed-on-the-server")
	h.g.Eventually(valid, eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.RepositoryCredentialReasonInvalidCredentials)))
	h.g.Expect(h.repoCondition(cred, v1.RepositoryCredentialConditionErrorOccurred)()).To(HaveField("Status", metav1.ConditionTrue))
	got := &v1.GitOpsDeploymentRepositoryCredential{}
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(cred), got)).To(Succeed())
	h.g.Expect(got.Generation).To(Equal(cred.Generation), "the CR did not change")
	unchanged := &corev1.Secret{}
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(secret), unchanged)).To(Succeed())
	h.g.Expect(unchanged.ResourceVersion).To(Equal(secret.ResourceVersion), "the Secret did not change")

	// The server takes the password again: failing credentials are re-validated too.
	password.Store(gitPassword)
	h.g.Eventually(valid, eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
}
