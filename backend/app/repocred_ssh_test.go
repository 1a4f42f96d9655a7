package app_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// bareRepository makes root/repo.git, a bare repository with one commit on main, and
// returns root and the environment to run git with.
func bareRepository(t *testing.T) (root string, env []string) {
	t.Helper()
	root, work := t.TempDir(), t.TempDir()
	env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(root, "init", "--bare", "repo.git")
	run(work, "init", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(work, "add", "README")
	run(work, "commit", "-m", "initial")
	run(work, "push", filepath.Join(root, "repo.git"), "main")
	return root, env
}

// sshKey is a fresh ed25519 key: its private half as an OpenSSH PEM block and its public half.
func sshKey(t *testing.T) ([]byte, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test key")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), sshPub
}

// sshGitServer serves the bare repositories under root over SSH on 127.0.0.1, to clients
// authenticating with the public key authorized only. It runs git-upload-pack for
// "exec git-upload-pack '<path>'" with <path> inside root, and refuses everything else.
// It returns host:port.
func sshGitServer(t *testing.T, root string, env []string, authorized ssh.PublicKey) string {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), authorized.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unauthorised key")
		},
	}
	config.AddHostKey(hostKey)
	root, err = filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveSSHConn(t, conn, config, root, env)
			}()
		}
	}()
	return l.Addr().String()
}

func serveSSHConn(t *testing.T, conn net.Conn, config *ssh.ServerConfig, root string, env []string) {
	defer conn.Close()
	sc, chans, reqs, err := ssh.NewServerConn(conn, config)
	if err != nil {
		return // failed handshake, e.g. an unauthorised key
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go serveSSHSession(t, ch, chReqs, root, env)
	}
}

// serveSSHSession runs the first acceptable exec request of a session and closes it.
func serveSSHSession(t *testing.T, ch ssh.Channel, reqs <-chan *ssh.Request, root string, env []string) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		dir, ok := uploadPackDir(root, payload.Command)
		if !ok {
			t.Logf("ssh git server: refused command %q", payload.Command)
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		go ssh.DiscardRequests(reqs)
		cmd := exec.Command("git", "upload-pack", "--strict", dir)
		// Without safe.directory, git 2.39 answers a missing path with "dubious ownership"
		// rather than "does not appear to be a git repository".
		cmd.Env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		status := uint32(127)
		if err := cmd.Start(); err == nil {
			go func() { _, _ = io.Copy(stdin, ch); _ = stdin.Close() }()
			err = cmd.Wait()
			var exit *exec.ExitError
			switch {
			case err == nil:
				status = 0
			case errors.As(err, &exit):
				status = uint32(exit.ExitCode())
			default:
				status = 1
			}
		} else {
			fmt.Fprintf(ch.Stderr(), "cannot run git-upload-pack: %v\n", err)
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

// uploadPackDir returns the directory under root that command, git-upload-pack '<path>',
// names, or false for any other command or a path leaving root.
func uploadPackDir(root, command string) (string, bool) {
	p, ok := strings.CutPrefix(command, "git-upload-pack '")
	if !ok {
		return "", false
	}
	if p, ok = strings.CutSuffix(p, "'"); !ok || p == "" || strings.ContainsAny(p, "'\\\x00\n") {
		return "", false
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return "", false
		}
	}
	dir := filepath.Join(root, filepath.Clean("/"+p))
	if !strings.HasPrefix(dir, root+string(filepath.Separator)) {
		return "", false
	}
	return dir, true
}

func TestUploadPackDir(t *testing.T) {
	g := NewWithT(t)
	root := "/srv/git"
	for cmd, want := range map[string]string{
		"git-upload-pack '/repo.git'":        "/srv/git/repo.git",
		"git-upload-pack 'repo.git'":         "/srv/git/repo.git",
		"git-upload-pack '/a//b/./repo.git'": "/srv/git/a/b/repo.git",
	} {
		got, ok := uploadPackDir(root, cmd)
		g.Expect(ok).To(BeTrue(), cmd)
		g.Expect(got).To(Equal(want), cmd)
	}
	for _, cmd := range []string{
		"git-upload-pack '/../etc'", "git-upload-pack '/repo.git/../../x'", "git-upload-pack '..'",
		"git-receive-pack '/repo.git'", "git-upload-pack '/repo.git'; rm -rf /", "git-upload-pack '/a'b'",
		"git-upload-pack '/'", "git-upload-pack ''", "sh -c id", "git-upload-pack /repo.git",
	} {
		_, ok := uploadPackDir(root, cmd)
		g.Expect(ok).To(BeFalse(), cmd)
	}
}

func TestRepositoryCredentialSSH(t *testing.T) {
	t.Parallel()
	root, env := bareRepository(t)
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
