package gitwebhook

import (
	"net/url"
	"strings"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// NormalizeRepoURL reduces the addresses of one repository to one key: host and path,
// lower case, without scheme, user, default port, trailing slash or ".git"; the scp-like
// SSH form git@host:org/repo is read as host/org/repo.
func NormalizeRepoURL(raw string) string {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		// scp-like: [user@]host:path
		if at := strings.Index(s, "@"); at >= 0 {
			s = s[at+1:]
		}
		s = "ssh://" + strings.Replace(s, ":", "/", 1)
	}
	u, err := url.Parse(s)
	if err != nil {
		return strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(raw, "/"), ".git"))
	}
	host := u.Hostname()
	if port := u.Port(); port != "" && port != defaultPorts[u.Scheme] {
		host += ":" + port
	}
	path := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	return strings.ToLower(host + path)
}

// defaultPorts are left out of the normalised form.
var defaultPorts = map[string]string{"https": "443", "http": "80", "ssh": "22"}

// Matches reports whether a push is a new revision for depl: the same repository, and the
// branch it deploys (a targetRevision of "" or HEAD deploys the default branch; when the
// host does not name it, any branch may be it).
func Matches(depl *v1.GitOpsDeployment, p Push) bool {
	want := NormalizeRepoURL(depl.Spec.Source.RepoURL)
	same := false
	for _, u := range p.RepoURLs {
		if NormalizeRepoURL(u) == want {
			same = true
			break
		}
	}
	if !same {
		return false
	}
	switch rev := strings.TrimPrefix(depl.Spec.Source.TargetRevision, "refs/heads/"); rev {
	case "", "HEAD":
		return p.DefaultBranch == "" || p.DefaultBranch == p.Branch
	default:
		return rev == p.Branch
	}
}
