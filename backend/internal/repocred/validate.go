package repocred

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	stdssh "golang.org/x/crypto/ssh"
	"golang.org/x/net/proxy"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// DefaultCheckTimeout bounds one remote listing, the dial included, unless Verify is given
// another bound.
const DefaultCheckTimeout = 20 * time.Second

// problem is a problem the user has to fix: its reason (which names the condition it makes
// False, see problemCondition) and a message that never contains the credentials.
func problem(reason, format string, args ...any) error {
	return outcome.UserError(reason, format, args...)
}

// problemCondition is the condition a problem's reason makes False.
func problemCondition(reason string) string {
	if reason == v1.RepositoryCredentialReasonInvalidRepositoryUrl {
		return v1.RepositoryCredentialConditionValidRepositoryUrl
	}
	return v1.RepositoryCredentialConditionValidRepositoryCredential
}

// Credentials are the credentials read from a repository credential Secret.
type Credentials struct {
	Username, Password, SSHPrivateKey []byte
}

// Resolve reads the credentials from secret, or reports what is wrong with it.
func Resolve(cred *v1.GitOpsDeploymentRepositoryCredential, secret *corev1.Secret) (*Credentials, error) {
	if secret.Type != v1.RepositoryCredentialSecretType {
		return nil, problem(v1.RepositoryCredentialReasonSecretInvalidType,
			"Secret %q (spec.secret) must be of type %q, not %q", secret.Name, v1.RepositoryCredentialSecretType, secret.Type)
	}
	c := &Credentials{
		Username:      secret.Data[v1.RepositoryCredentialSecretUsernameKey],
		Password:      secret.Data[v1.RepositoryCredentialSecretPasswordKey],
		SSHPrivateKey: secret.Data[v1.RepositoryCredentialSecretSSHPrivateKeyKey],
	}
	ssh := strings.HasPrefix(cred.Spec.Repository, "ssh://")
	switch {
	case ssh && len(c.SSHPrivateKey) == 0:
		return nil, problem(v1.RepositoryCredentialReasonSecretInvalidType,
			"Secret %q (spec.secret) has no %q key, which an ssh:// repository needs", secret.Name, v1.RepositoryCredentialSecretSSHPrivateKeyKey)
	case !ssh && (len(c.Username) == 0 || len(c.Password) == 0):
		return nil, problem(v1.RepositoryCredentialReasonSecretInvalidType,
			"Secret %q (spec.secret) must have non-empty %q and %q keys for an https:// repository", secret.Name,
			v1.RepositoryCredentialSecretUsernameKey, v1.RepositoryCredentialSecretPasswordKey)
	}
	if ssh {
		c.Username, c.Password = nil, nil
	} else {
		c.SSHPrivateKey = nil
	}
	return c, nil
}

// Verify lists the references of repository with creds, proving that the URL points at a
// Git repository and that the credentials give access to it. caBundle, when not nil, adds
// trusted certificate authorities for https:// repositories. The listing, dial included,
// gives up after timeout (DefaultCheckTimeout when 0).
func Verify(ctx context.Context, repository string, creds *Credentials, caBundle []byte, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	u, err := url.Parse(repository)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "ssh") {
		return problem(v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"spec.repository must be an https:// or ssh:// URL with a host")
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return problem(v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"spec.repository must not contain a password; put it in the Secret")
	}
	var auth transport.AuthMethod
	if u.Scheme == "ssh" {
		user := "git"
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username()
		}
		keys, err := gitssh.NewPublicKeys(user, creds.SSHPrivateKey, "")
		if err != nil {
			return problem(v1.RepositoryCredentialReasonInvalidCredentials,
				"the %q key of the Secret is not a usable, unencrypted SSH private key", v1.RepositoryCredentialSecretSSHPrivateKeyKey)
		}
		// Public-key authentication does not reveal the key to the server, and Argo CD checks
		// host keys itself when it clones; this listing only proves the key is accepted.
		keys.HostKeyCallback = stdssh.InsecureIgnoreHostKey() //nolint:gosec // see above
		auth = keys
	} else {
		auth = &githttp.BasicAuth{Username: string(creds.Username), Password: string(creds.Password)}
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repository}})
	opts := &git.ListOptions{Auth: auth, CABundle: caBundle}
	if u.Scheme == "ssh" {
		opts.ProxyOptions = deadlineProxy(timeout)
	}
	_, err = listContext(lctx, remote, opts)
	switch {
	case err != nil && ctx.Err() == nil && (lctx.Err() != nil || isNetTimeout(err) || isUnreachable(err)):
		// One message whether refused, filtered or unknown, so that the condition does not
		// tell a tenant probing the service's network a closed port from a filtered one.
		return problem(v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"the Git server of repository %s could not be reached: check spec.repository and that the server is reachable from the service", u.Redacted())
	case err == nil, errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		isSSHAuthFailure(err):
		return problem(v1.RepositoryCredentialReasonInvalidCredentials,
			"the repository %s refused the credentials in the Secret", u.Redacted())
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return problem(v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"repository %s was not found", u.Redacted())
	default:
		return problem(v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"repository %s could not be reached: %s", u.Redacted(), redact(cause(err), creds))
	}
}

// isNetTimeout reports whether err is a connection that ran out of time (an SSH
// connection's deadline, say).
func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isUnreachable reports whether err is a failure to reach the server at all: no address,
// a refused or reset connection.
func isUnreachable(err error) bool {
	var (
		op  *net.OpError
		dns *net.DNSError
	)
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// isSSHAuthFailure reports whether the SSH handshake failed on authentication, which
// x/crypto/ssh's client reports only in its message (it has no error type for it).
func isSSHAuthFailure(err error) bool {
	return strings.Contains(err.Error(), "unable to authenticate")
}

// cause drops the URL that a *url.Error repeats.
func cause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// redact removes the credentials from msg, in case a transport echoed them.
func redact(msg string, creds *Credentials) string {
	for _, s := range [][]byte{creds.Password, creds.SSHPrivateKey} {
		if len(s) > 0 {
			msg = strings.ReplaceAll(msg, string(s), "***")
		}
	}
	return msg
}

// listContext lists remote's references, returning when ctx ends even if a transport does
// not watch ctx in every step (a dial or handshake to a server that never answers).
func listContext(ctx context.Context, remote *git.Remote, o *git.ListOptions) ([]*plumbing.Reference, error) {
	type result struct {
		refs []*plumbing.Reference
		err  error
	}
	done := make(chan result, 1)
	go func() {
		refs, err := remote.ListContext(ctx, o)
		done <- result{refs, err}
	}()
	select {
	case r := <-done:
		return r.refs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deadlineScheme names a "proxy" that dials directly and gives the connection a deadline.
// go-git's SSH transport watches no context after the dial: a server that accepts and then
// stalls in the handshake would keep the connection, and a goroutine, until TCP gives up.
// Its proxy option is the one hook it offers into the dial.
const deadlineScheme = "gitops-service-deadline"

func init() {
	proxy.RegisterDialerType(deadlineScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		timeout, err := time.ParseDuration(u.Query().Get("timeout"))
		return deadlineDialer{timeout}, err
	})
}

// deadlineProxy is the proxy option that ends an SSH connection soon after the check's
// timeout: the check itself gives up at its timeout, and the deadline only makes sure the
// connection goes with it.
func deadlineProxy(timeout time.Duration) transport.ProxyOptions {
	return transport.ProxyOptions{URL: deadlineScheme + "://direct?timeout=" + (timeout + deadlineSlack).String()}
}

// deadlineSlack lets the check's own timeout come first.
const deadlineSlack = time.Second

type deadlineDialer struct{ timeout time.Duration }

// Dial completes proxy.Dialer, which has no context; go-git calls DialContext.
func (d deadlineDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d deadlineDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: d.timeout}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(time.Now().Add(d.timeout)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return capConn(conn), nil
}
