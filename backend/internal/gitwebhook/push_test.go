package gitwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"reflect"
	"testing"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

var secret = []byte("s3cret")

func sign(body []byte, key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestParse(t *testing.T) {
	github := []byte(`{"ref":"refs/heads/main","repository":{"clone_url":"https://github.com/org/app.git","html_url":"https://github.com/org/app","ssh_url":"git@github.com:org/app.git","default_branch":"main"}}`)
	gitlab := []byte(`{"ref":"refs/heads/dev","project":{"git_http_url":"https://gitlab.com/org/app.git","git_ssh_url":"git@gitlab.com:org/app.git","web_url":"https://gitlab.com/org/app","default_branch":"main"}}`)
	bitbucket := []byte(`{"push":{"changes":[{"new":{"type":"branch","name":"main"}}]},"repository":{"links":{"html":{"href":"https://bitbucket.org/org/app"}},"mainbranch":{"name":"main"}}}`)
	tag := []byte(`{"ref":"refs/tags/v1","repository":{"clone_url":"https://github.com/org/app.git"}}`)
	for name, tc := range map[string]struct {
		h       http.Header
		body    []byte
		want    Push
		wantErr error
	}{
		"github push": {h: headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign(github, secret)), body: github,
			want: Push{Provider: "github", Branch: "main", DefaultBranch: "main", RepoURLs: []string{"https://github.com/org/app.git", "https://github.com/org/app", "git@github.com:org/app.git"}}},
		"github, signed with another secret": {h: headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign(github, []byte("other"))), body: github, wantErr: ErrBadSignature},
		"github, unsigned":                   {h: headers("X-GitHub-Event", "push"), body: github, wantErr: ErrUnsigned},
		"github, signature not hex":          {h: headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256=zz"), body: github, wantErr: ErrBadSignature},
		"github, payload changed after signing": {h: headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign(github, secret)),
			body: append([]byte(" "), github...), wantErr: ErrBadSignature},
		"github ping is ignored":     {h: headers("X-GitHub-Event", "ping", "X-Hub-Signature-256", "sha256="+sign([]byte(`{}`), secret)), body: []byte(`{}`), wantErr: errIgnored, want: Push{Provider: "github"}},
		"a tag push is ignored":      {h: headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign(tag, secret)), body: tag, wantErr: errIgnored, want: Push{Provider: "github"}},
		"signed nonsense is refused": {h: headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign([]byte("{"), secret)), body: []byte("{"), wantErr: ErrBadPayload, want: Push{Provider: "github"}},
		"gitea push": {h: headers("X-Gitea-Event", "push", "X-Gitea-Signature", sign(github, secret)), body: github,
			want: Push{Provider: "gitea", Branch: "main", DefaultBranch: "main", RepoURLs: []string{"https://github.com/org/app.git", "https://github.com/org/app", "git@github.com:org/app.git"}}},
		"forgejo push": {h: headers("X-Forgejo-Event", "push", "X-Forgejo-Signature", sign(github, secret)), body: github,
			want: Push{Provider: "gitea", Branch: "main", DefaultBranch: "main", RepoURLs: []string{"https://github.com/org/app.git", "https://github.com/org/app", "git@github.com:org/app.git"}}},
		"gitlab push": {h: headers("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", string(secret)), body: gitlab,
			want: Push{Provider: "gitlab", Branch: "dev", DefaultBranch: "main", RepoURLs: []string{"https://gitlab.com/org/app.git", "git@gitlab.com:org/app.git", "https://gitlab.com/org/app"}}},
		"gitlab, wrong token": {h: headers("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", "guess"), body: gitlab, wantErr: ErrBadSignature},
		"bitbucket push": {h: headers("X-Event-Key", "repo:push", "X-Hub-Signature", "sha256="+sign(bitbucket, secret)), body: bitbucket,
			want: Push{Provider: "bitbucket", Branch: "main", DefaultBranch: "main", RepoURLs: []string{"https://bitbucket.org/org/app"}}},
		"unknown host": {h: headers("X-Other-Event", "push"), body: github, wantErr: ErrUnknownEvent},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.h, tc.body, secret)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("push %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNormalizeRepoURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/Org/App.git":        "github.com/org/app",
		"https://github.com/org/app/":           "github.com/org/app",
		"https://user@github.com:443/org/app":   "github.com/org/app",
		"git@github.com:org/app.git":            "github.com/org/app",
		"ssh://git@github.com:22/org/app.git":   "github.com/org/app",
		"ssh://git@git.example:2222/org/app":    "git.example:2222/org/app",
		"https://127.0.0.1:8443/app.git":        "127.0.0.1:8443/app",
		"http://git.example/org/app":            "git.example/org/app",
		"https://gitlab.com/group/sub/proj.git": "gitlab.com/group/sub/proj",
	} {
		if got := NormalizeRepoURL(in); got != want {
			t.Errorf("NormalizeRepoURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatches(t *testing.T) {
	push := Push{RepoURLs: []string{"https://github.com/org/app.git", "git@github.com:org/app.git"}, Branch: "main", DefaultBranch: "main"}
	for name, tc := range map[string]struct {
		repoURL, revision string
		push              Push
		want              bool
	}{
		"default branch, no revision":  {"https://github.com/org/app", "", push, true},
		"HEAD":                         {"git@github.com:org/app.git", "HEAD", push, true},
		"the branch":                   {"https://github.com/org/app", "main", push, true},
		"refs/heads form":              {"https://github.com/org/app", "refs/heads/main", push, true},
		"another branch":               {"https://github.com/org/app", "release", push, false},
		"a pinned commit":              {"https://github.com/org/app", "0123abcd", push, false},
		"another repository":           {"https://github.com/org/other", "", push, false},
		"same name on another host":    {"https://gitlab.com/org/app", "", push, false},
		"HEAD, push to another branch": {"https://github.com/org/app", "", Push{RepoURLs: push.RepoURLs, Branch: "dev", DefaultBranch: "main"}, false},
		"HEAD, default unknown":        {"https://github.com/org/app", "", Push{RepoURLs: push.RepoURLs, Branch: "dev"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			depl := &v1.GitOpsDeployment{Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: tc.repoURL, TargetRevision: tc.revision}}}
			if got := Matches(depl, tc.push); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}
