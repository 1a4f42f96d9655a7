package gitwebhook

import (
	"errors"
	"net/http"
	"reflect"
	"testing"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// The payload cases each Git host sends besides the plain push of TestParse.
func TestParseHostSpecifics(t *testing.T) {
	githubNoRepo := []byte(`{"ref":"refs/heads/main","repository":{}}`)
	githubEmptyBranch := []byte(`{"ref":"refs/heads/","repository":{"clone_url":"https://github.com/org/app.git"}}`)
	githubNoDefault := []byte(`{"ref":"refs/heads/feature/x","repository":{"clone_url":"https://github.com/org/app.git"}}`)
	gitlabTag := []byte(`{"ref":"refs/tags/v1","project":{"git_http_url":"https://gitlab.com/org/app.git"}}`)
	bbTwoChanges := []byte(`{"push":{"changes":[{"new":{"type":"tag","name":"v1"}},{"new":{"type":"branch","name":"dev"}},{"new":{"type":"branch","name":"main"}}]},"repository":{"links":{"html":{"href":"https://bitbucket.org/org/app"}},"mainbranch":{"name":"main"}}}`)
	bbDeleted := []byte(`{"push":{"changes":[{"new":null}]},"repository":{"links":{"html":{"href":"https://bitbucket.org/org/app"}}}}`)
	bbNoMain := []byte(`{"push":{"changes":[{"new":{"type":"branch","name":"dev"}}]},"repository":{"links":{"html":{"href":"https://bitbucket.org/org/app"}}}}`)
	bbNoLink := []byte(`{"push":{"changes":[{"new":{"type":"branch","name":"dev"}}]},"repository":{}}`)
	ping := []byte(`{"zen":"Keep it logically awesome."}`)
	tests := []struct {
		name    string
		h       http.Header
		body    []byte
		want    Push
		wantErr error
	}{
		{
			name: "gogs push is read as Gitea's",
			h:    headers("X-Gogs-Event", "push", "X-Gogs-Signature", sign(githubNoDefault, secret)), body: githubNoDefault,
			want: Push{Provider: "gitea", Branch: "feature/x", RepoURLs: []string{"https://github.com/org/app.git"}},
		},
		{
			// A branch name with slashes is kept whole.
			name: "a branch with slashes, no default branch named",
			h:    headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign(githubNoDefault, secret)), body: githubNoDefault,
			want: Push{Provider: "github", Branch: "feature/x", RepoURLs: []string{"https://github.com/org/app.git"}},
		},
		{
			// GitHub's SHA-1 signature is not accepted: only the SHA-256 one verifies.
			name: "github, only the SHA-1 signature",
			h:    headers("X-GitHub-Event", "push", "X-Hub-Signature", "sha1=0123"), body: githubNoDefault,
			wantErr: ErrUnsigned,
		},
		{
			name: "github, signature without its prefix",
			h:    headers("X-GitHub-Event", "push", "X-Hub-Signature-256", sign(githubNoDefault, secret)), body: githubNoDefault,
			wantErr: ErrBadSignature,
		},
		{
			// The signature is checked before the event is looked at: an unsigned ping
			// tells nobody whether the namespace exists with a secret.
			name: "a ping with a wrong signature",
			h:    headers("X-GitHub-Event", "ping", "X-Hub-Signature-256", "sha256="+sign(ping, []byte("other"))), body: ping,
			wantErr: ErrBadSignature,
		},
		{
			name: "a push without any repository address",
			h:    headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign(githubNoRepo, secret)), body: githubNoRepo,
			want: Push{Provider: "github"}, wantErr: ErrBadPayload,
		},
		{
			name: "a push to an empty branch name",
			h:    headers("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign(githubEmptyBranch, secret)), body: githubEmptyBranch,
			want: Push{Provider: "github"}, wantErr: ErrBadPayload,
		},
		{
			name: "gitlab, no token", h: headers("X-Gitlab-Event", "Push Hook"), body: gitlabTag,
			wantErr: ErrUnsigned,
		},
		{
			name: "gitlab tag push event is ignored", h: headers("X-Gitlab-Event", "Tag Push Hook", "X-Gitlab-Token", string(secret)), body: gitlabTag,
			want: Push{Provider: "gitlab"}, wantErr: errIgnored,
		},
		{
			name: "gitlab push hook of a tag ref is ignored", h: headers("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", string(secret)), body: gitlabTag,
			want: Push{Provider: "gitlab"}, wantErr: errIgnored,
		},
		{
			name: "gitlab, a token that only starts like the secret", h: headers("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", string(secret[:3])), body: gitlabTag,
			wantErr: ErrBadSignature,
		},
		{
			// Of several changes, the first branch counts; tags are skipped.
			name: "bitbucket, a tag and two branches",
			h:    headers("X-Event-Key", "repo:push", "X-Hub-Signature", "sha256="+sign(bbTwoChanges, secret)), body: bbTwoChanges,
			want: Push{Provider: "bitbucket", Branch: "dev", DefaultBranch: "main", RepoURLs: []string{"https://bitbucket.org/org/app"}},
		},
		{
			name: "bitbucket, a deleted branch is ignored",
			h:    headers("X-Event-Key", "repo:push", "X-Hub-Signature", "sha256="+sign(bbDeleted, secret)), body: bbDeleted,
			want: Push{Provider: "bitbucket"}, wantErr: errIgnored,
		},
		{
			name: "bitbucket, no main branch named",
			h:    headers("X-Event-Key", "repo:push", "X-Hub-Signature", "sha256="+sign(bbNoMain, secret)), body: bbNoMain,
			want: Push{Provider: "bitbucket", Branch: "dev", RepoURLs: []string{"https://bitbucket.org/org/app"}},
		},
		{
			name: "bitbucket, no repository link",
			h:    headers("X-Event-Key", "repo:push", "X-Hub-Signature", "sha256="+sign(bbNoLink, secret)), body: bbNoLink,
			want: Push{Provider: "bitbucket"}, wantErr: ErrBadPayload,
		},
		{
			name: "bitbucket, another event is ignored",
			h:    headers("X-Event-Key", "repo:updated", "X-Hub-Signature", "sha256="+sign(bbNoMain, secret)), body: bbNoMain,
			want: Push{Provider: "bitbucket"}, wantErr: errIgnored,
		},
		{
			name: "bitbucket, unsigned", h: headers("X-Event-Key", "repo:push"), body: bbNoMain,
			wantErr: ErrUnsigned,
		},
		{name: "no headers at all", h: http.Header{}, body: githubNoDefault, wantErr: ErrUnknownEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.h, tt.body, secret)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("push %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNormalizeRepoURLEquivalents(t *testing.T) {
	// Each group holds addresses of one repository; different groups are different ones.
	groups := [][]string{
		{
			"https://github.com/org/app", "https://github.com/org/app.git", "https://GitHub.com/Org/App", "http://github.com/org/app",
			"https://github.com:443/org/app", "http://github.com:80/org/app", "git@github.com:org/app.git", "git@github.com:org/app",
			"ssh://git@github.com/org/app.git", "ssh://github.com:22/org/app", "github.com:org/app", "  https://github.com/org/app/  ",
		},
		{"https://github.com/org/app-two", "git@github.com:org/app-two.git"},
		{"https://github.com:8443/org/app", "ssh://git@github.com:8443/org/app"},
		{"https://gitlab.com/org/app", "git@gitlab.com:org/app.git"},
		{"https://gitlab.com/group/org/app"},
	}
	seen := map[string]int{}
	for i, group := range groups {
		want := NormalizeRepoURL(group[0])
		for _, u := range group {
			got := NormalizeRepoURL(u)
			if got != want {
				t.Errorf("NormalizeRepoURL(%q) = %q, want %q as for %q", u, got, want, group[0])
			}
		}
		if j, ok := seen[want]; ok {
			t.Errorf("groups %d and %d normalise to the same %q", j, i, want)
		}
		seen[want] = i
	}
}

func TestMatchesMoreCases(t *testing.T) {
	push := Push{RepoURLs: []string{"https://github.com/org/app.git", "https://github.com/org/app", "git@github.com:org/app.git"},
		Branch: "release/1.2", DefaultBranch: "main"}
	tests := []struct {
		name              string
		repoURL, revision string
		push              Push
		want              bool
	}{
		{"a branch with slashes", "https://github.com/org/app", "release/1.2", push, true},
		{"a branch with slashes, refs/heads form", "ssh://git@github.com/org/app", "refs/heads/release/1.2", push, true},
		{"a prefix of the branch", "https://github.com/org/app", "release", push, false},
		// Branch names are case sensitive in Git.
		{"another case", "https://github.com/org/app", "Release/1.2", push, false},
		{"a tag ref is never a pushed branch", "https://github.com/org/app", "refs/tags/release/1.2", push, false},
		{"no repository addresses in the push", "https://github.com/org/app", "", Push{Branch: "main"}, false},
		{"HEAD, push to the default branch through the SSH address", "git@github.com:org/app", "HEAD", Push{RepoURLs: []string{"git@github.com:org/app.git"}, Branch: "main", DefaultBranch: "main"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			depl := &v1.GitOpsDeployment{Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: tt.repoURL, TargetRevision: tt.revision}}}
			if got := Matches(depl, tt.push); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}
