// Package gitwebhook receives the push events of Git hosts (GitHub, GitLab, Gitea and
// Forgejo, Bitbucket Cloud) and refreshes the GitOpsDeployments that deploy the pushed
// branch, so that a push reaches its clusters in seconds instead of at Argo CD's next poll.
//
// A tenant enables it for its namespace with a Secret it owns (SecretName, key SecretKey)
// and points its Git host at /hooks/<namespace> with that secret. Every payload's signature
// (or GitLab's token) is verified with the namespace's own secret, and only that
// namespace's GitOpsDeployments are refreshed.
package gitwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Push is what a push event says: the repository (its clone and web addresses), the branch
// and the repository's default branch ("" when the host does not say).
type Push struct {
	Provider      string
	RepoURLs      []string
	Branch        string
	DefaultBranch string
}

// Errors of Parse: each becomes a 4xx answer with its message.
var (
	ErrUnknownEvent = errors.New("not a push event of a supported Git host (GitHub, GitLab, Gitea, Forgejo, Bitbucket Cloud)")
	ErrUnsigned     = errors.New("the payload carries no signature or token; configure the webhook's secret")
	ErrBadSignature = errors.New("the payload's signature or token does not match the namespace's webhook secret")
	ErrBadPayload   = errors.New("the payload is not a push event the receiver understands")
)

// errIgnored is an event of a supported host that is not a push (a ping, a tag, ...):
// answered with 200 and nothing refreshed.
var errIgnored = errors.New("event ignored")

// provider recognises the events of one Git host.
type provider struct {
	name string
	// event returns the event name from the headers, "" when the request is not from this host.
	event func(h http.Header) string
	push  func(event string) bool
	// verify checks the payload against secret.
	verify func(h http.Header, body, secret []byte) error
	parse  func(body []byte) (Push, error)
}

var providers = []provider{
	{name: "github", event: header("X-GitHub-Event"), push: equals("push"),
		verify: hmacSHA256("X-Hub-Signature-256", "sha256="), parse: parseGitHubStyle},
	{name: "gitea", event: header("X-Gitea-Event", "X-Forgejo-Event", "X-Gogs-Event"), push: equals("push"),
		verify: hmacSHA256Any([]string{"X-Forgejo-Signature", "X-Gitea-Signature", "X-Gogs-Signature"}, ""), parse: parseGitHubStyle},
	{name: "gitlab", event: header("X-Gitlab-Event"), push: equals("Push Hook"),
		verify: token("X-Gitlab-Token"), parse: parseGitLab},
	{name: "bitbucket", event: header("X-Event-Key"), push: equals("repo:push"),
		verify: hmacSHA256("X-Hub-Signature", "sha256="), parse: parseBitbucket},
}

// Parse recognises the host of a request, verifies it with secret and reads its push.
func Parse(h http.Header, body, secret []byte) (Push, error) {
	for _, p := range providers {
		event := p.event(h)
		if event == "" {
			continue
		}
		if err := p.verify(h, body, secret); err != nil {
			return Push{}, err
		}
		if !p.push(event) {
			return Push{Provider: p.name}, errIgnored
		}
		push, err := p.parse(body)
		push.Provider = p.name
		return push, err
	}
	return Push{}, ErrUnknownEvent
}

func header(names ...string) func(http.Header) string {
	return func(h http.Header) string {
		for _, n := range names {
			if v := h.Get(n); v != "" {
				return v
			}
		}
		return ""
	}
}

func equals(want string) func(string) bool { return func(got string) bool { return got == want } }

// hmacSHA256 checks a hex HMAC-SHA256 of the body in header (after prefix).
func hmacSHA256(header, prefix string) func(http.Header, []byte, []byte) error {
	return hmacSHA256Any([]string{header}, prefix)
}

func hmacSHA256Any(headers []string, prefix string) func(http.Header, []byte, []byte) error {
	return func(h http.Header, body, secret []byte) error {
		sig := ""
		for _, name := range headers {
			if sig = h.Get(name); sig != "" {
				break
			}
		}
		if sig == "" {
			return ErrUnsigned
		}
		got, err := hex.DecodeString(strings.TrimPrefix(sig, prefix))
		if err != nil || !strings.HasPrefix(sig, prefix) {
			return ErrBadSignature
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		if !hmac.Equal(got, mac.Sum(nil)) {
			return ErrBadSignature
		}
		return nil
	}
}

// token checks a shared token sent as is (GitLab).
func token(header string) func(http.Header, []byte, []byte) error {
	return func(h http.Header, _, secret []byte) error {
		got := h.Get(header)
		if got == "" {
			return ErrUnsigned
		}
		if subtle.ConstantTimeCompare([]byte(got), secret) != 1 {
			return ErrBadSignature
		}
		return nil
	}
}

// branchOf is the branch of a ref; tags and other refs are not branches.
func branchOf(ref string) (string, bool) {
	return strings.CutPrefix(ref, "refs/heads/")
}

// parseGitHubStyle reads the push payload of GitHub, Gitea, Forgejo and Gogs.
func parseGitHubStyle(body []byte) (Push, error) {
	var p struct {
		Ref        string `json:"ref"`
		Repository struct {
			CloneURL      string `json:"clone_url"`
			HTMLURL       string `json:"html_url"`
			SSHURL        string `json:"ssh_url"`
			DefaultBranch string `json:"default_branch"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return Push{}, ErrBadPayload
	}
	branch, ok := branchOf(p.Ref)
	if !ok {
		return Push{}, errIgnored
	}
	return push(branch, p.Repository.DefaultBranch, p.Repository.CloneURL, p.Repository.HTMLURL, p.Repository.SSHURL)
}

func parseGitLab(body []byte) (Push, error) {
	var p struct {
		Ref     string `json:"ref"`
		Project struct {
			HTTPURL       string `json:"git_http_url"`
			SSHURL        string `json:"git_ssh_url"`
			WebURL        string `json:"web_url"`
			DefaultBranch string `json:"default_branch"`
		} `json:"project"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return Push{}, ErrBadPayload
	}
	branch, ok := branchOf(p.Ref)
	if !ok {
		return Push{}, errIgnored
	}
	return push(branch, p.Project.DefaultBranch, p.Project.HTTPURL, p.Project.SSHURL, p.Project.WebURL)
}

// parseBitbucket reads a Bitbucket Cloud repo:push; of its changes, the first branch that
// was updated counts (one push event per branch in practice).
func parseBitbucket(body []byte) (Push, error) {
	var p struct {
		Push struct {
			Changes []struct {
				New *struct {
					Type string `json:"type"`
					Name string `json:"name"`
				} `json:"new"`
			} `json:"changes"`
		} `json:"push"`
		Repository struct {
			Links struct {
				HTML struct {
					Href string `json:"href"`
				} `json:"html"`
			} `json:"links"`
			MainBranch *struct {
				Name string `json:"name"`
			} `json:"mainbranch"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return Push{}, ErrBadPayload
	}
	defaultBranch := ""
	if p.Repository.MainBranch != nil {
		defaultBranch = p.Repository.MainBranch.Name
	}
	for _, c := range p.Push.Changes {
		if c.New != nil && c.New.Type == "branch" {
			return push(c.New.Name, defaultBranch, p.Repository.Links.HTML.Href)
		}
	}
	return Push{}, errIgnored
}

func push(branch, defaultBranch string, urls ...string) (Push, error) {
	p := Push{Branch: branch, DefaultBranch: defaultBranch}
	for _, u := range urls {
		if u != "" {
			p.RepoURLs = append(p.RepoURLs, u)
		}
	}
	if branch == "" || len(p.RepoURLs) == 0 {
		return Push{}, ErrBadPayload
	}
	return p, nil
}
