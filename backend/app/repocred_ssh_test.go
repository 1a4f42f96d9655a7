package app_test

import (
	"database/sql"
	"encoding/base64"
	"encoding/pem"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// sshKey is a fresh ed25519 key: its private half as an OpenSSH PEM block and its public half.
func sshKey(t *testing.T) ([]byte, ssh.PublicKey) {
	t.Helper()
	key, pub, err := testenv.NewSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	return key, pub
}

// sshGitServer serves the bare repositories under root over SSH to the holder of authorized,
// and returns host:port.
func sshGitServer(t *testing.T, root string, env []string, authorized ssh.PublicKey) string {
	t.Helper()
	srv, err := testenv.StartSSHGitServer(root, env, authorized)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv.Addr
}

func TestRepositoryCredentialSSH(t *testing.T) {
	t.Parallel()
	root, env := testenv.GitRepositories(t)
	goodKey, goodPub := sshKey(t)
	otherKey, _ := sshKey(t)
	addr := sshGitServer(t, root, env, goodPub)
	h := startBackend(t)
	repoURL := "ssh://git@" + addr + "/repo.git"
	keyData := func(key []byte) map[string][]byte {
		return map[string][]byte{v1.RepositoryCredentialSecretSSHPrivateKeyKey: key}
	}

	// The authorised key is valid, and stored encrypted.
	good := h.newRepositoryCredential("ssh-good", repoURL, v1.RepositoryCredentialSecretType, keyData(goodKey))
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
	h.g.Expect(string(row.SSHPrivateKey)).To(Equal(string(goodKey)))
	h.g.Expect(row.Username).To(BeEmpty())
	h.g.Expect(row.Password).To(BeEmpty())
	var keyEnc, passwordEnc sql.NullString
	h.g.Expect(h.db.NewSelect().Table("repository_credentials").Column("ssh_private_key_enc", "password_enc").
		Where("id = ?", credID).Scan(h.ctx, &keyEnc, &passwordEnc)).To(Succeed())
	h.g.Expect(keyEnc.Valid).To(BeTrue())
	h.g.Expect(keyEnc.String).To(HavePrefix("v1:"))
	block, _ := pem.Decode(goodKey)
	h.g.Expect(block).NotTo(BeNil())
	body := base64.StdEncoding.EncodeToString(block.Bytes)
	for _, clear := range []string{string(goodKey), "PRIVATE KEY", body[:40], body[len(body)-40:],
		base64.StdEncoding.EncodeToString(goodKey)[:40]} {
		h.g.Expect(keyEnc.String).NotTo(ContainSubstring(clear))
	}
	h.g.Expect(passwordEnc.Valid).To(BeFalse())
	h.g.Expect(h.operations(db.OperationResourceRepositoryCredential, credID)).To(HaveLen(1))

	// Problems are reported as conditions and store nothing.
	cases := []struct {
		name, repository string
		data             map[string][]byte
		condition        string
		reason, message  string
	}{
		{name: "ssh-unauthorised-key", repository: repoURL, data: keyData(otherKey),
			condition: v1.RepositoryCredentialConditionValidRepositoryCredential, reason: v1.RepositoryCredentialReasonInvalidCredentials, message: "refused the credentials"},
		{name: "ssh-missing-repo", repository: "ssh://git@" + addr + "/missing.git", data: keyData(goodKey),
			condition: v1.RepositoryCredentialConditionValidRepositoryUrl, reason: v1.RepositoryCredentialReasonInvalidRepositoryUrl, message: "not found"},
		{name: "ssh-basic-auth", repository: repoURL, data: basicAuth(gitUser, gitPassword),
			condition: v1.RepositoryCredentialConditionValidRepositoryCredential, reason: v1.RepositoryCredentialReasonSecretInvalidType, message: `has no "sshPrivateKey" key`},
	}
	for _, c := range cases {
		cred := h.newRepositoryCredential(c.name, c.repository, v1.RepositoryCredentialSecretType, c.data)
		h.g.Eventually(h.repoCondition(cred, c.condition), eventually, poll).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", c.reason), HaveField("Message", ContainSubstring(c.message))), c.name)
		h.g.Expect(h.repoCondition(cred, v1.RepositoryCredentialConditionErrorOccurred)()).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", Not(ContainSubstring("PRIVATE KEY"))),
			HaveField("Message", Not(ContainSubstring(gitPassword)))), c.name)
		_, err := h.store.GetAPICRMapping(h.ctx, h.db, tenant.ID, db.APIResourceRepositoryCredential, string(cred.UID))
		h.g.Expect(err).To(MatchError(db.ErrNotFound), c.name)
	}

	// Events never carry the keys.
	events := &corev1.EventList{}
	h.g.Expect(cp.Client.List(h.ctx, events, client.InNamespace(h.tenant))).To(Succeed())
	for _, e := range events.Items {
		h.g.Expect(e.Message).NotTo(Or(ContainSubstring("PRIVATE KEY"), ContainSubstring(body[:40])))
	}
}
