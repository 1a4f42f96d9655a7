package argocd

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzUUID formats 16 fuzz bytes as a UUID, the form of every row id.
func fuzzUUID(b []byte) string {
	var u [16]byte
	copy(u[:], b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// acceptedAPIURL is what a spec.apiURL must be to reach ClusterServerURL: the CRD requires
// the https:// prefix, and the backend (managedenv.Resolve) rejects a query or fragment and
// anything net/url cannot parse into a host.
func acceptedAPIURL(apiURL string) bool {
	if !strings.HasPrefix(apiURL, "https://") || strings.ContainsAny(apiURL, "?&#") || len(apiURL) > 2048 {
		return false
	}
	u, err := url.Parse(apiURL)
	return err == nil && u.Host != ""
}

// FuzzClusterServerURL checks that the server URL of a cluster Secret, for every accepted
// spec.apiURL, is an https URL of the same host whose only query parameter is
// managedEnvironment=<id>, from which the API URL and the id are recovered, and that
// environments with different ids get different servers.
func FuzzClusterServerURL(f *testing.F) {
	id := []byte("\x6f\x1c\x2a\x90\x33\x4b\x4e\x8d\x9a\x10\x55\x21\x77\x0e\xab\xcd")
	f.Add("https://api.cluster.example.com:6443", id, []byte{1})
	f.Add("https://api.cluster.example.com:6443/", id, []byte{2})
	f.Add("https://10.0.0.1", id, id)
	f.Add("https://[::1]:6443/k8s/clusters/c-1", id, []byte{})
	f.Add("https://user@host/path%20with%20escape", []byte{}, id)
	f.Add("https://host/a?b=c", id, []byte{3})
	f.Add("https://host/a#frag", id, []byte{3})
	f.Add("https://host/a&b", id, []byte{3})
	f.Add("https://", id, []byte{3})
	f.Add("http://host", id, []byte{3})
	f.Fuzz(func(t *testing.T, apiURL string, idBytes, otherIDBytes []byte) {
		id, otherID := fuzzUUID(idBytes), fuzzUUID(otherIDBytes)
		server := ClusterServerURL(apiURL, id)
		if server != ClusterServerURL(apiURL, id) {
			t.Fatalf("ClusterServerURL is not deterministic")
		}
		if id != otherID && server == ClusterServerURL(apiURL, otherID) {
			t.Fatalf("environments %s and %s on %q share the server %q", id, otherID, apiURL, server)
		}
		if !acceptedAPIURL(apiURL) {
			return
		}
		if strings.Count(server, "?") != 1 {
			t.Fatalf("server %q has %d '?'", server, strings.Count(server, "?"))
		}
		u, err := url.Parse(server)
		if err != nil {
			t.Fatalf("server %q of apiURL %q does not parse: %v", server, apiURL, err)
		}
		api, _ := url.Parse(apiURL)
		if u.Scheme != "https" || u.Host != api.Host || u.Path != api.Path || u.Fragment != "" {
			t.Fatalf("server %q is not https://%s%s: scheme %q host %q path %q fragment %q",
				server, api.Host, api.Path, u.Scheme, u.Host, u.Path, u.Fragment)
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil || len(q) != 1 || !slices.Equal(q["managedEnvironment"], []string{id}) {
			t.Fatalf("server %q: query %v (%v), want only managedEnvironment=%s", server, q, err, id)
		}
		base, found := strings.CutSuffix(server, "?"+u.RawQuery)
		if !found || base != apiURL {
			t.Fatalf("apiURL %q is not recovered from server %q (got %q)", apiURL, server, base)
		}
	})
}

// syncOptionCandidates are what the fuzzer picks user sync options from: the supported
// ones, the service's own, and unsupported ones.
var syncOptionCandidates = []string{
	"CreateNamespace=true", "CreateNamespace=false", SyncOptionPrunePropagationBackground,
	"PrunePropagationPolicy=foreground", "Replace=true", "ServerSideApply=true", "", "CreateNamespace=TRUE",
}

// fuzzSyncOptions picks options by the bytes of sel; a byte past the candidates yields the
// free text of extra.
func fuzzSyncOptions(sel []byte, extra string) []string {
	var opts []string
	for _, b := range sel {
		if int(b) < len(syncOptionCandidates) {
			opts = append(opts, syncOptionCandidates[b])
		} else if b == 0xff {
			opts = append(opts, extra)
		}
	}
	return opts
}

// FuzzApplicationSpec checks the translation of an Application input into an Argo CD
// Application spec: the source and project are carried over as they are, the destination
// is the in-cluster server or the environment's cluster Secret, the automated policy (with
// prune, selfHeal and allowEmpty) is there iff the input is automated, the sync options are
// PrunePropagationPolicy=background first and then each of the user's options once, in
// order, retries are unlimited; and the result does not depend on the order or repetition
// of the user's options, nor on earlier calls.
func FuzzApplicationSpec(f *testing.F) {
	f.Add("https://github.com/org/repo", "environments/prod", "main", "team-a", []byte{}, "app-project-1", true, []byte{0}, "")
	f.Add("https://github.com/org/repo", "deploy", "", "", []byte{1, 2, 3}, "app-project-2", false, []byte{}, "")
	f.Add("git@github.com:org/repo.git", "a/b/c", "v1.2.3", "ns", []byte{9}, "p", true, []byte{0, 0, 1, 2, 2}, "")
	f.Add("ssh://git@host/repo", "./x", "0123456789abcdef0123456789abcdef01234567", "ns", []byte{}, "", false, []byte{3, 4, 5, 6, 7, 0xff}, "Validate=false")
	f.Add("", "", "", "", []byte{}, "", true, []byte{0xff, 0xff}, "CreateNamespace=true")
	f.Fuzz(func(t *testing.T, repoURL, path, revision, namespace string, envIDBytes []byte, project string, automated bool, sel []byte, extra string) {
		envID := ""
		if len(envIDBytes) > 0 {
			envID = fuzzUUID(envIDBytes)
		}
		userOpts := fuzzSyncOptions(sel, extra)
		in := ApplicationInput{
			RepoURL:        repoURL,
			Path:           path,
			TargetRevision: revision,
			Destination:    Destination{ManagedEnvironmentID: envID, Namespace: namespace},
			Project:        project,
			Automated:      automated,
			SyncOptions:    userOpts,
		}
		inCopy := in
		inCopy.SyncOptions = slices.Clone(userOpts)
		spec := ApplicationSpec(in)

		if !slices.Equal(in.SyncOptions, inCopy.SyncOptions) {
			t.Fatalf("ApplicationSpec changed its input's sync options: %q, was %q", in.SyncOptions, inCopy.SyncOptions)
		}
		if spec.Source == nil || spec.Source.RepoURL != repoURL || spec.Source.Path != path || spec.Source.TargetRevision != revision {
			t.Fatalf("source %+v is not repo %q path %q revision %q", spec.Source, repoURL, path, revision)
		}
		if spec.Project != project {
			t.Fatalf("project %q, want %q", spec.Project, project)
		}
		d := spec.Destination
		if d.Namespace != namespace {
			t.Fatalf("destination namespace %q, want %q", d.Namespace, namespace)
		}
		if envID == "" && (d.Server != InClusterServer || d.Name != "") {
			t.Fatalf("in-cluster destination is %+v", d)
		}
		if envID != "" && (d.Server != "" || d.Name != ClusterSecretName(envID)) {
			t.Fatalf("destination of environment %s is %+v", envID, d)
		}
		sp := spec.SyncPolicy
		if sp == nil {
			t.Fatalf("no sync policy")
		}
		if automated != (sp.Automated != nil) {
			t.Fatalf("automated=%v but automated policy is %+v", automated, sp.Automated)
		}
		if a := sp.Automated; a != nil && (!a.Prune || !a.SelfHeal || !a.AllowEmpty) {
			t.Fatalf("automated policy %+v lacks prune, selfHeal or allowEmpty", a)
		}
		if sp.Retry == nil || sp.Retry.Limit != -1 || sp.Retry.Backoff == nil || sp.Retry.Backoff.Factor == nil ||
			*sp.Retry.Backoff.Factor != 2 || sp.Retry.Backoff.Duration != "5s" || sp.Retry.Backoff.MaxDuration != "3m" {
			t.Fatalf("retry strategy %+v is not unlimited with 5s x2 up to 3m backoff", sp.Retry)
		}

		opts := []string(sp.SyncOptions)
		if len(opts) == 0 || opts[0] != SyncOptionPrunePropagationBackground {
			t.Fatalf("sync options %q do not start with %s", opts, SyncOptionPrunePropagationBackground)
		}
		want := map[string]bool{SyncOptionPrunePropagationBackground: true}
		for _, o := range userOpts {
			want[o] = true
		}
		seen := map[string]bool{}
		for _, o := range opts {
			if seen[o] {
				t.Fatalf("sync option %q repeated in %q", o, opts)
			}
			seen[o] = true
			if !want[o] {
				t.Fatalf("sync option %q was not asked for: %q from %q", o, opts, userOpts)
			}
		}
		if len(seen) != len(want) {
			t.Fatalf("sync options %q lose some of %q", opts, userOpts)
		}
		if !slices.IsSorted(opts[1:]) {
			t.Fatalf("user sync options %q are not in a stable order", opts[1:])
		}

		// Deterministic, and independent of the order and repetition of the user's options.
		again := in
		again.SyncOptions = slices.Clone(userOpts)
		slices.Reverse(again.SyncOptions)
		again.SyncOptions = append(again.SyncOptions, userOpts...)
		if spec2 := ApplicationSpec(again); !reflect.DeepEqual(spec, spec2) {
			t.Fatalf("the same input gave different specs:\n%+v\n%+v", spec, spec2)
		}
	})
}

// FuzzValidateSyncOption checks that exactly the documented options are accepted, and that
// a rejection names the option.
func FuzzValidateSyncOption(f *testing.F) {
	for _, o := range syncOptionCandidates {
		f.Add(o)
	}
	f.Add("CreateNamespace=true ")
	f.Add("createnamespace=true")
	f.Fuzz(func(t *testing.T, option string) {
		err := ValidateSyncOption(option)
		supported := option == "CreateNamespace=true" || option == "CreateNamespace=false"
		if supported != (err == nil) {
			t.Fatalf("ValidateSyncOption(%q) = %v", option, err)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", option)) {
			t.Fatalf("error %q does not name the option %q", err, option)
		}
	})
}
