package gitwebhook

import (
	"errors"
	"reflect"
	"testing"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// FuzzParse feeds the receiver's parsing what anyone on the network can send: any event
// header, signature and body. It must never panic, must accept nothing it could not
// verify, and what it accepts must be matched against deployments without panicking.
// `make test` runs it for a bounded time.
func FuzzParse(f *testing.F) {
	github := []byte(`{"ref":"refs/heads/main","after":"0123abc","repository":{"clone_url":"https://git.example.com/a/b.git","default_branch":"main"}}`)
	gitlab := []byte(`{"ref":"refs/heads/main","checkout_sha":"0123abc","project":{"git_http_url":"https://gitlab.example.com/a/b.git"}}`)
	bitbucket := []byte(`{"push":{"changes":[{"new":{"type":"branch","name":"main","target":{"hash":"0123abc"}}}]},"repository":{"full_name":"a/b"}}`)
	f.Add("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256="+sign(github, secret), github)
	f.Add("X-Gitea-Event", "push", "X-Gitea-Signature", sign(github, secret), github)
	f.Add("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", string(secret), gitlab)
	f.Add("X-Event-Key", "repo:push", "X-Hub-Signature", "sha256="+sign(bitbucket, secret), bitbucket)
	f.Add("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256=zz", []byte("{"))
	f.Add("", "", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, eventHeader, event, signatureHeader, signature string, body []byte) {
		h := headers(eventHeader, event, signatureHeader, signature)
		push, err := Parse(h, body, secret)
		if errors.Is(err, ErrUnsigned) || errors.Is(err, ErrBadSignature) || errors.Is(err, ErrUnknownEvent) {
			if !reflect.DeepEqual(push, Push{}) {
				t.Fatalf("an unverified request gave a push: %+v", push)
			}
			return
		}
		depl := &v1.GitOpsDeployment{Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{
			RepoURL: "https://git.example.com/a/b.git", TargetRevision: push.Branch}}}
		_ = Matches(depl, push)
		for _, u := range push.RepoURLs {
			_ = NormalizeRepoURL(u)
		}
	})
}
