// Package validation holds the rules on the core API that the CRD schema cannot express.
// The validating webhook rejects violations at admission; the controllers apply the same
// rules again (objects written while the webhook was down, or before it existed) and show
// violations as conditions.
package validation

import (
	"net/url"
	"slices"
	"strings"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// GitOpsDeployment checks every rule on depl; the error is an outcome.User error.
func GitOpsDeployment(depl *v1.GitOpsDeployment) error {
	p := strings.TrimSpace(depl.Spec.Source.Path)
	if p == "" || p == "/" || p == "." {
		return invalid("spec.source.path must name a directory inside the repository; %q would deploy the whole repository root, which is not supported", depl.Spec.Source.Path)
	}
	if err := GitOpsDeploymentAdmission(depl); err != nil {
		return err
	}
	if strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") {
		return invalid("spec.source.path %q must be a relative path inside the repository, without '..'", depl.Spec.Source.Path)
	}
	return nil
}

// GitOpsDeploymentAdmission checks the rules the webhook enforces. An unusable path is not
// among them: it is accepted and reported in the ErrorOccurred condition, as the API
// documents.
func GitOpsDeploymentAdmission(depl *v1.GitOpsDeployment) error {
	for field, value := range map[string]string{
		"spec.source.repoURL":        depl.Spec.Source.RepoURL,
		"spec.source.path":           depl.Spec.Source.Path,
		"spec.source.targetRevision": depl.Spec.Source.TargetRevision,
	} {
		if err := PlainText(field, value); err != nil {
			return err
		}
	}
	if err := RepositoryURL(depl.Spec.Source.RepoURL); err != nil {
		return err
	}
	if err := Refresh(depl.Annotations[v1.RefreshAnnotation]); err != nil {
		return err
	}
	if depl.Spec.Destination.Environment == "" && depl.Spec.Destination.Namespace != "" &&
		depl.Spec.Destination.Namespace != depl.Namespace {
		return invalid("spec.destination.namespace %q: without spec.destination.environment a GitOpsDeployment can only deploy to its own namespace %q",
			depl.Spec.Destination.Namespace, depl.Namespace)
	}
	opts := SyncOptions(depl)
	for _, opt := range opts {
		if err := argocd.ValidateSyncOption(opt); err != nil {
			return invalid("spec.syncPolicy.syncOptions: %s", err.Error())
		}
	}
	if slices.Contains(opts, string(v1.SyncOptionCreateNamespaceTrue)) && slices.Contains(opts, string(v1.SyncOptionCreateNamespaceFalse)) {
		return invalid("spec.syncPolicy.syncOptions: %s and %s contradict each other; keep one of them",
			v1.SyncOptionCreateNamespaceTrue, v1.SyncOptionCreateNamespaceFalse)
	}
	return nil
}

// SyncRunRevision returns the revision a SyncRun asks for: spec.revisionID, or else
// spec.revisionId, the spelling of older documents. The CRD refuses the two set to
// different values; an object stored before it did is refused here.
func SyncRunRevision(spec *v1.GitOpsDeploymentSyncRunSpec) (string, error) {
	revision, field := spec.RevisionID, "spec.revisionID"
	switch old := spec.DeprecatedRevisionId; {
	case old != "" && revision != "" && old != revision:
		return "", invalid("spec.revisionId %q is an older spelling of spec.revisionID and names another revision than spec.revisionID %q; set only spec.revisionID", old, revision)
	case revision == "" && old != "":
		revision, field = old, "spec.revisionId"
	}
	return revision, PlainText(field, revision)
}

// SyncOptions returns the sync options of depl as strings.
func SyncOptions(depl *v1.GitOpsDeployment) []string {
	if depl.Spec.SyncPolicy == nil {
		return nil
	}
	opts := make([]string, 0, len(depl.Spec.SyncPolicy.SyncOptions))
	for _, o := range depl.Spec.SyncPolicy.SyncOptions {
		opts = append(opts, string(o))
	}
	return opts
}

// PlainText rejects control characters (NUL included) and Unicode bidirectional controls
// in a field that names something: they cannot be stored, or make a value read differently
// from what it is.
func PlainText(field, value string) error {
	for _, r := range value {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
			r == 0x200e || r == 0x200f || r == 0x061c {
			return invalid("%s contains the control character %U; remove it", field, r)
		}
	}
	return nil
}

// MaxRefreshLength bounds the refresh annotation's value: a request's token (a time, a
// commit, a counter) is short, and the value is stored and copied to Argo CD.
const MaxRefreshLength = 256

// Refresh checks the value of the refresh annotation: printable and at most
// MaxRefreshLength bytes.
func Refresh(value string) error {
	field := "metadata.annotations[" + v1.RefreshAnnotation + "]"
	if len(value) > MaxRefreshLength {
		return invalid("%s is %d bytes long; at most %d are allowed (a time or a counter will do)", field, len(value), MaxRefreshLength)
	}
	return PlainText(field, value)
}

// RepositoryURL accepts the Git URLs Argo CD can clone: https://, http://, ssh:// and
// scp-like user@host:path. A password in the URL is refused (it would be stored and shown
// in clear); credentials belong in a GitOpsDeploymentRepositoryCredential.
func RepositoryURL(repoURL string) error {
	if !strings.Contains(repoURL, "://") {
		if at, colon := strings.Index(repoURL, "@"), strings.Index(repoURL, ":"); at > 0 && colon > at+1 && colon < len(repoURL)-1 {
			return nil // scp-like SSH: git@github.com:org/repo.git
		}
		return invalid("spec.source.repoURL must be an https://, http:// or ssh:// URL, or an SSH address like git@host:org/repo.git")
	}
	u, err := url.Parse(repoURL)
	if err != nil {
		return invalid("spec.source.repoURL is not a URL with a host")
	}
	switch u.Scheme {
	case "https", "http", "ssh":
	default:
		return invalid("spec.source.repoURL must be an https://, http:// or ssh:// URL, not %s://", u.Scheme)
	}
	if u.Host == "" {
		return invalid("spec.source.repoURL is not a URL with a host")
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return invalid("spec.source.repoURL must not contain a password; put the credentials in a GitOpsDeploymentRepositoryCredential")
	}
	return nil
}

// ReasonInvalidSpec is the Ready reason of a spec that breaks a rule.
const ReasonInvalidSpec = "InvalidSpec"

func invalid(format string, args ...any) error {
	return outcome.UserError(ReasonInvalidSpec, format, args...)
}
