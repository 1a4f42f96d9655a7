package validation

import (
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// syncOptionCandidates are what the fuzzer picks sync options from.
var syncOptionCandidates = []v1.SyncOption{
	v1.SyncOptionCreateNamespaceTrue, v1.SyncOptionCreateNamespaceFalse,
	argocd.SyncOptionPrunePropagationBackground, "PrunePropagationPolicy=foreground", "Replace=true", "",
}

// fuzzDeployment builds a GitOpsDeployment; sel picks its sync options (0xff: extraOpt).
func fuzzDeployment(repoURL, path, revision, ownNamespace, destNamespace, environment string, automated, syncPolicy bool, sel []byte, extraOpt string) *v1.GitOpsDeployment {
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "depl", Namespace: ownNamespace, UID: "0d2a8c5e-4f1b-4c3a-9e7d-1a2b3c4d5e6f"},
		Spec: v1.GitOpsDeploymentSpec{
			Source:      v1.ApplicationSource{RepoURL: repoURL, Path: path, TargetRevision: revision},
			Destination: v1.ApplicationDestination{Environment: environment, Namespace: destNamespace},
			Type:        v1.GitOpsDeploymentSpecTypeManual,
		},
	}
	if automated {
		depl.Spec.Type = v1.GitOpsDeploymentSpecTypeAutomated
	}
	if syncPolicy {
		depl.Spec.SyncPolicy = &v1.SyncPolicy{}
		for _, b := range sel {
			if int(b) < len(syncOptionCandidates) {
				depl.Spec.SyncPolicy.SyncOptions = append(depl.Spec.SyncPolicy.SyncOptions, syncOptionCandidates[b])
			} else if b == 0xff {
				depl.Spec.SyncPolicy.SyncOptions = append(depl.Spec.SyncPolicy.SyncOptions, v1.SyncOption(extraOpt))
			}
		}
	}
	return depl
}

// applicationInput mirrors how the deployment controller turns an accepted GitOpsDeployment
// into the input of its Argo CD Application (backend/internal/deployment/apply.go).
func applicationInput(depl *v1.GitOpsDeployment, tenantID, managedEnvironmentID string) argocd.ApplicationInput {
	namespace := depl.Spec.Destination.Namespace
	if namespace == "" {
		namespace = depl.Namespace
	}
	in := argocd.ApplicationInput{
		RepoURL:        depl.Spec.Source.RepoURL,
		Path:           depl.Spec.Source.Path,
		TargetRevision: depl.Spec.Source.TargetRevision,
		Destination:    argocd.Destination{Namespace: namespace},
		Project:        argocd.AppProjectName(tenantID),
		Automated:      depl.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated,
		SyncOptions:    SyncOptions(depl),
	}
	if depl.Spec.Destination.Environment != "" {
		in.Destination.ManagedEnvironmentID = managedEnvironmentID
	}
	return in
}

// FuzzGitOpsDeployment checks the validation rules of a GitOpsDeployment and the Argo CD
// Application spec of every GitOpsDeployment they accept. Validation: errors are user
// errors; whatever admission rejects is rejected; a path naming the repository root, a
// destination namespace other than its own without an environment, and an unsupported sync
// option, control characters in the source, a repoURL that is not https/http/ssh or holds a
// password, and an absolute path or one with '..' are rejected; the object is not modified. Translation of an accepted object: the
// source and project are carried over, the automated policy (prune, selfHeal, allowEmpty)
// is there iff the type is automated, PrunePropagationPolicy=background is there once,
// CreateNamespace at most once and as asked, and equal inputs give deep-equal specs.
func FuzzGitOpsDeployment(f *testing.F) {
	f.Add("https://github.com/org/repo", "environments/prod", "main", "team-a", "", "", true, true, []byte{0}, "")
	f.Add("https://github.com/org/repo", "deploy", "", "team-a", "team-a", "", false, false, []byte{}, "")
	f.Add("https://github.com/org/repo", "deploy", "v1", "team-a", "other", "", true, false, []byte{}, "")
	f.Add("https://github.com/org/repo", "deploy", "v1", "team-a", "other", "prod-cluster", true, true, []byte{1, 1}, "")
	f.Add("https://github.com/org/repo", " / ", "", "team-a", "", "", true, false, []byte{}, "")
	f.Add("https://github.com/org/repo", ".", "", "team-a", "", "", true, false, []byte{}, "")
	f.Add("https://github.com/org/repo", "", "", "team-a", "", "", true, false, []byte{}, "")
	f.Add("https://github.com/org/repo", "./apps", "", "team-a", "", "", false, true, []byte{2}, "")
	f.Add("https://github.com/org/repo", "apps", "", "team-a", "", "", false, true, []byte{0xff}, "CreateNamespace=yes")
	// CreateNamespace=true and =false together contradict each other.
	f.Add("https://github.com/org/repo", "apps", "main", "team-a", "", "", true, true, []byte{0, 1}, "")
	f.Fuzz(func(t *testing.T, repoURL, path, revision, ownNamespace, destNamespace, environment string,
		automated, syncPolicy bool, sel []byte, extraOpt string) {
		depl := fuzzDeployment(repoURL, path, revision, ownNamespace, destNamespace, environment, automated, syncPolicy, sel, extraOpt)
		before := depl.DeepCopy()
		err := GitOpsDeployment(depl)
		admissionErr := GitOpsDeploymentAdmission(depl)
		if !reflect.DeepEqual(before, depl) {
			t.Fatalf("validation modified the GitOpsDeployment")
		}
		for _, e := range []error{err, admissionErr} {
			if e == nil {
				continue
			}
			if !outcome.IsUser(e) || outcome.As(e).Message == "" {
				t.Fatalf("validation error %v (%T) is not a user error with a message", e, e)
			}
		}
		if admissionErr != nil && err == nil {
			t.Fatalf("admission rejects what the controllers accept: %v", admissionErr)
		}
		trimmed := strings.TrimSpace(path)
		if trimmed == "" || trimmed == "/" || trimmed == "." {
			if err == nil {
				t.Fatalf("path %q of the repository root was accepted", path)
			}
			if admissionErr != nil && err.Error() == admissionErr.Error() {
				t.Fatalf("path %q was rejected for another reason first: %v", path, err)
			}
		}
		if environment == "" && destNamespace != "" && destNamespace != ownNamespace && admissionErr == nil {
			t.Fatalf("destination namespace %q of a GitOpsDeployment of %q without environment was accepted", destNamespace, ownNamespace)
		}
		opts := SyncOptions(depl)
		for _, o := range opts {
			if argocd.ValidateSyncOption(o) != nil && admissionErr == nil {
				t.Fatalf("unsupported sync option %q was accepted", o)
			}
		}
		if err != nil {
			return
		}
		for _, v := range []string{repoURL, path, revision} {
			if PlainText("f", v) != nil {
				t.Fatalf("control character in %q was accepted", v)
			}
		}
		if u, perr := url.Parse(repoURL); perr == nil && strings.Contains(repoURL, "://") {
			if _, hasPassword := u.User.Password(); hasPassword || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "ssh") {
				t.Fatalf("repoURL %q was accepted", repoURL)
			}
		}
		if strings.HasPrefix(trimmed, "/") || slices.Contains(strings.Split(trimmed, "/"), "..") {
			t.Fatalf("path %q outside the repository was accepted", path)
		}

		in := applicationInput(depl, "8e0c3a36-4d8b-4a55-b1a0-7ad1f4a0c111", "b7d0c1e2-0f4a-4c5d-8e6f-7a8b9c0d1e2f")
		spec := argocd.ApplicationSpec(in)
		if spec.Source == nil || spec.Source.RepoURL != repoURL || spec.Source.Path != path || spec.Source.TargetRevision != revision {
			t.Fatalf("source %+v is not repo %q path %q revision %q", spec.Source, repoURL, path, revision)
		}
		if spec.Project != in.Project {
			t.Fatalf("project %q, want %q", spec.Project, in.Project)
		}
		if spec.Destination.Namespace != in.Destination.Namespace {
			t.Fatalf("destination namespace %q, want %q", spec.Destination.Namespace, in.Destination.Namespace)
		}
		if (environment == "") != (spec.Destination.Server == argocd.InClusterServer) {
			t.Fatalf("destination %+v for environment %q", spec.Destination, environment)
		}
		sp := spec.SyncPolicy
		if sp == nil {
			t.Fatalf("no sync policy")
		}
		if automated != (sp.Automated != nil) {
			t.Fatalf("type %q but automated policy %+v", depl.Spec.Type, sp.Automated)
		}
		if a := sp.Automated; a != nil && (!a.Prune || !a.SelfHeal || !a.AllowEmpty) {
			t.Fatalf("automated policy %+v lacks prune, selfHeal or allowEmpty", a)
		}
		counts := map[string]int{}
		createNamespace := 0
		for _, o := range sp.SyncOptions {
			counts[o]++
			if strings.HasPrefix(o, "CreateNamespace=") {
				createNamespace++
			}
		}
		if counts[argocd.SyncOptionPrunePropagationBackground] != 1 {
			t.Fatalf("sync options %q do not have %s exactly once", sp.SyncOptions, argocd.SyncOptionPrunePropagationBackground)
		}
		if createNamespace > 1 {
			t.Fatalf("sync options %q set CreateNamespace %d times", sp.SyncOptions, createNamespace)
		}
		for _, v := range []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue, v1.SyncOptionCreateNamespaceFalse} {
			asked := false
			for _, o := range opts {
				asked = asked || o == string(v)
			}
			if asked != (counts[string(v)] == 1) {
				t.Fatalf("sync options %q from %q: %s asked=%v", sp.SyncOptions, opts, v, asked)
			}
		}
		if len(sp.SyncOptions) != 1+createNamespace {
			t.Fatalf("unexpected sync options %q from %q", sp.SyncOptions, opts)
		}

		// Deterministic: a copy of the object gives a deep-equal spec.
		copied := depl.DeepCopy()
		if GitOpsDeployment(copied) != nil {
			t.Fatalf("a copy of an accepted GitOpsDeployment is rejected")
		}
		spec2 := argocd.ApplicationSpec(applicationInput(copied, "8e0c3a36-4d8b-4a55-b1a0-7ad1f4a0c111", "b7d0c1e2-0f4a-4c5d-8e6f-7a8b9c0d1e2f"))
		if !reflect.DeepEqual(spec, spec2) {
			t.Fatalf("equal GitOpsDeployments gave different specs:\n%+v\n%+v", spec, spec2)
		}
	})
}
