package db_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
)

// TestCredentialsEncryptedAtRest: a full dump of the database holds none of the stored
// secrets in plaintext (nor base64-encoded), only sealed values.
func TestCredentialsEncryptedAtRest(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	token := "eyJhbGciOiJSUzI1NiJ9.bearer-token-" + newUID()
	kubeconfig := "apiVersion: v1\nkind: Config\nusers:\n- user: {token: kubeconfig-token-" + newUID() + "}\n"
	password := "correct-horse-battery-" + newUID()
	username := "deploy-bot-" + newUID()
	sshKey := "-----BEGIN OPENSSH PRIVATE KEY-----\n" + newUID() + "\n-----END OPENSSH PRIVATE KEY-----\n"

	env := &db.ManagedEnvironment{TenantID: tenant.ID, Name: "prod"}
	g.Expect(f.store.CreateManagedEnvironment(f.ctx, f.db, env,
		&db.ClusterCredentials{Host: "https://prod:6443", BearerToken: db.Secret(token), Kubeconfig: db.Secret(kubeconfig)})).To(Succeed())
	g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID,
		RepositoryURL: "https://git", Username: db.Secret(username), Password: db.Secret(password)})).To(Succeed())
	g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID,
		RepositoryURL: "ssh://git", SSHPrivateKey: db.Secret(sshKey)})).To(Succeed())

	dump, err := dbtest.PgDump(context.Background(), dbtest.DatabaseName(t, f.cfg), "--data-only", "--inserts")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dump).To(ContainSubstring("https://prod:6443"), "the dump has the rows")
	for _, secret := range []string{token, kubeconfig, password, username, sshKey} {
		g.Expect(dump).NotTo(ContainSubstring(secret))
		g.Expect(dump).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secret))))
		for _, line := range strings.Split(secret, "\n") {
			if strings.Contains(line, "-") && len(line) > 30 { // the random part of each secret
				g.Expect(dump).NotTo(ContainSubstring(line))
			}
		}
	}
	g.Expect(strings.Count(dump, "'v1:k1:")).To(Equal(5), "five sealed values, under key k1")

	// And the store reads them back.
	got, err := f.store.GetManagedEnvironmentCredentials(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got.BearerToken)).To(Equal(token))
	g.Expect(string(got.Kubeconfig)).To(Equal(kubeconfig))

	// Secrets do not print.
	for _, s := range []string{fmt.Sprintf("%v", got), fmt.Sprintf("%+v", *got), fmt.Sprintf("%#v", *got)} {
		g.Expect(s).NotTo(ContainSubstring(token))
		g.Expect(s).To(ContainSubstring("[redacted]"))
	}
	js, err := json.Marshal(got)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(js)).NotTo(ContainSubstring(token))
}

// TestSealedValuesAreBoundToTheirColumn: a ciphertext copied into another column does not
// decrypt, and plaintext written behind the store's back is refused by the schema.
func TestSealedValuesAreBoundToTheirColumn(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	rc := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID, RepositoryURL: "https://git", Username: "u", Password: "p"}
	g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, rc)).To(Succeed())

	_, err := f.db.ExecContext(f.ctx, "UPDATE repository_credentials SET username_enc = password_enc WHERE id = ?", rc.ID)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.store.GetRepositoryCredential(f.ctx, f.db, tenant.ID, rc.ID)
	g.Expect(err).To(MatchError(secretbox.ErrDecrypt))

	_, err = f.db.NewRaw("UPDATE repository_credentials SET password_enc = 'hunter2' WHERE id = ?", rc.ID).Exec(f.ctx)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("repository_credentials_password_sealed"))
}

// TestRotateKeys: after adding a new primary key, RotateKeys re-encrypts every credential
// column in batches; the old key is then no longer needed.
func TestRotateKeys(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	const repoCreds = db.RotateKeyBatchSize + 20
	for i := range repoCreds {
		rc := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID,
			RepositoryURL: fmt.Sprintf("https://git/%d", i), Username: "u", Password: db.Secret(fmt.Sprintf("p%d", i))}
		if i%3 == 0 {
			rc.SSHPrivateKey = "key"
		}
		g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, rc)).To(Succeed())
	}
	env, creds := f.newEnv(t, tenant.ID)
	engineCreds := &db.ClusterCredentials{Host: "https://engine", Kubeconfig: "kc"}
	g.Expect(f.store.CreateClusterCredentials(f.ctx, f.db, engineCreds)).To(Succeed())

	// The primary key is now k2; k1 stays for reading until the rotation is done.
	k1 := f.key1
	k2, err := secretbox.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	rotated, err := secretbox.ParseKeyring([]byte(secretbox.FormatKeyLine("k2", k2) + "\n" + secretbox.FormatKeyLine("k1", k1) + "\n"))
	g.Expect(err).NotTo(HaveOccurred())

	n, err := db.RotateKeys(f.ctx, f.db, rotated)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(repoCreds + 2))
	var stale int
	g.Expect(f.db.NewRaw(`SELECT
		(SELECT count(*) FROM cluster_credentials WHERE kubeconfig_enc NOT LIKE 'v1:k2:%' OR bearer_token_enc NOT LIKE 'v1:k2:%') +
		(SELECT count(*) FROM repository_credentials WHERE username_enc NOT LIKE 'v1:k2:%' OR password_enc NOT LIKE 'v1:k2:%'
			OR ssh_private_key_enc NOT LIKE 'v1:k2:%')`).Scan(f.ctx, &stale)).To(Succeed())
	g.Expect(stale).To(BeZero())

	n, err = db.RotateKeys(f.ctx, f.db, rotated)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeZero(), "nothing left to rotate")

	onlyK2, err := secretbox.NewKeyring("k2", map[string][]byte{"k2": k2})
	g.Expect(err).NotTo(HaveOccurred())
	store := db.NewStore(onlyK2)
	list, err := store.ListRepositoryCredentials(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(repoCreds))
	for _, rc := range list {
		g.Expect(rc.Username).To(Equal(db.Secret("u")))
		g.Expect(string(rc.Password)).To(HavePrefix("p"))
	}
	got, err := store.GetManagedEnvironmentCredentials(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.BearerToken).To(Equal(creds.BearerToken))
	gotEngine, err := store.GetClusterCredentials(f.ctx, f.db, engineCreds.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gotEngine.Kubeconfig).To(Equal(db.Secret("kc")))

	// The old keyring alone can no longer read them.
	_, err = f.store.GetClusterCredentials(f.ctx, f.db, engineCreds.ID)
	g.Expect(err).To(MatchError(secretbox.ErrUnknownKey))

	// A value no key opens aborts the rotation.
	k3, _ := newKeyring(t, "k3")
	_, err = db.RotateKeys(f.ctx, f.db, k3)
	g.Expect(err).To(MatchError(secretbox.ErrUnknownKey))
}
