package testenv

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// SSHGitServer serves the bare repositories <root>/<name>.git over SSH on loopback, to
// clients that authenticate with the one key it authorizes, as a Git host serves deploy
// keys. It runs git-upload-pack for "git-upload-pack '<path>'" with <path> inside root, and
// refuses everything else (no pushes, no shell).
type SSHGitServer struct {
	// Addr is host:port.
	Addr string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey

	root string
	env  []string
	ln   net.Listener
	wg   sync.WaitGroup
}

// StartSSHGitServer serves root over SSH to the holder of authorized; env is the
// environment git runs with.
func StartSSHGitServer(root string, env []string, authorized ssh.PublicKey) (*SSHGitServer, error) {
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	hostKey, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return nil, err
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
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &SSHGitServer{Addr: ln.Addr().String(), HostKey: hostKey.PublicKey(), root: root, env: env, ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serveConn(conn, config)
			}()
		}
	}()
	return s, nil
}

// Close stops accepting connections and waits for the open ones to end.
func (s *SSHGitServer) Close() error {
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// URL is the ssh:// URL of repository name.
func (s *SSHGitServer) URL(name string) string {
	return "ssh://git@" + s.Addr + "/" + name + ".git"
}

// KnownHosts is the server's line of an OpenSSH known_hosts file.
func (s *SSHGitServer) KnownHosts() string {
	host, port, _ := net.SplitHostPort(s.Addr)
	return "[" + host + "]:" + port + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostKey)))
}

// NewSSHKey is a fresh ed25519 key: its private half as an OpenSSH PEM block and its public half.
func NewSSHKey() ([]byte, ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "test key")
	if err != nil {
		return nil, nil, err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(block), sshPub, nil
}

func (s *SSHGitServer) serveConn(conn net.Conn, config *ssh.ServerConfig) {
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
		go s.serveSession(ch, chReqs)
	}
}

// serveSession runs the first acceptable exec request of a session and closes it.
func (s *SSHGitServer) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
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
		dir, ok := uploadPackDir(s.root, payload.Command)
		if !ok {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		go ssh.DiscardRequests(reqs)
		status := s.uploadPack(ch, dir)
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

// uploadPack runs git-upload-pack on dir over ch and returns its exit status.
func (s *SSHGitServer) uploadPack(ch ssh.Channel, dir string) uint32 {
	// Not --strict: a repository may be a working tree (<dir>/.git), as the e2e Git server's are.
	cmd := exec.Command("git", "upload-pack", dir)
	// Without safe.directory, git 2.39 answers a missing path with "dubious ownership"
	// rather than "does not appear to be a git repository".
	cmd.Env = append(s.env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ch.Stderr(), "cannot run git-upload-pack: %v\n", err)
		return 127
	}
	go func() { _, _ = io.Copy(stdin, ch); _ = stdin.Close() }()
	var exit *exec.ExitError
	switch err := cmd.Wait(); {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return uint32(exit.ExitCode())
	}
	return 1
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
