package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// fuzzName turns fuzz text into a valid object name (a DNS-1123 subdomain of at most 253
// characters), as the names of bindings, applications, environments and components are:
// valid characters are kept, others mapped onto them, and pad 'x's appended so that the
// fuzzer reaches the length limits easily.
func fuzzName(s string, pad uint8) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-."
	var b strings.Builder
	prev := byte('.')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(alphabet, c) < 0 {
			c = alphabet[int(c)%len(alphabet)]
		}
		// No '-' or '.' first, and no "..", ".-" or "-." (each dot-separated part starts and
		// ends with an alphanumeric character).
		if (c == '.' || c == '-') && (prev == '.' || (c == '.' && prev == '-')) {
			continue
		}
		b.WriteByte(c)
		prev = c
	}
	name := b.String() + strings.Repeat("x", int(pad))
	if len(name) > validation.DNS1123SubdomainMaxLength {
		name = name[:validation.DNS1123SubdomainMaxLength]
	}
	if name = strings.TrimRight(name, "-."); name == "" {
		name = "x"
	}
	return name
}

// FuzzDeploymentName checks the naming rule of the GitOpsDeployments of a binding: the name
// is a valid object name (DNS-1123 subdomain) of at most MaxNameLength characters, it is
// "<binding>-<application>-<environment>-<component>", shortened to "<binding>-<component>"
// past MaxNameLength characters, and past that the first 180 characters of the latter, '-'
// and the sha256 of the full name; it is deterministic; and two components of one binding
// never share a GitOpsDeployment: their names differ, or Desired refuses the pair.
func FuzzDeploymentName(f *testing.F) {
	f.Add("binding", uint8(0), "app", uint8(0), "env", uint8(0), "comp", uint8(0), "other", uint8(0))
	f.Add("my-binding", uint8(100), "my-app", uint8(0), "staging", uint8(0), "frontend", uint8(140), "backend", uint8(140))
	f.Add("b", uint8(200), "a.b.c", uint8(100), "e", uint8(100), "c", uint8(0), "d", uint8(0))
	f.Add("UPPER_case", uint8(250), "app", uint8(250), "env", uint8(250), "c-", uint8(250), "c.", uint8(250))
	f.Add("b.", uint8(0), "-a", uint8(0), "e..f", uint8(0), "c.-d", uint8(0), "c-.d", uint8(0))
	// Prefix of 179 characters and '-' at the cut of 180 (trimmed).
	f.Add(strings.Repeat("a", 179)+"-x", uint8(0), "a", uint8(0), "e", uint8(0), "c", uint8(200), "d", uint8(200))
	f.Add(strings.Repeat("a", 179)+".x", uint8(0), "a", uint8(0), "e", uint8(0), "c", uint8(200), "d", uint8(200))
	// Component "c" in full equals component "app-env-c" shortened: the rule itself collides.
	f.Add("b", uint8(199), "app", uint8(0), "env", uint8(0), "c", uint8(39), "app-env-c", uint8(39))
	f.Fuzz(func(t *testing.T, bindingS string, bPad uint8, appS string, aPad uint8, envS string, ePad uint8,
		c1S string, c1Pad uint8, c2S string, c2Pad uint8) {
		binding, app, env := fuzzName(bindingS, bPad), fuzzName(appS, aPad), fuzzName(envS, ePad)
		c1, c2 := fuzzName(c1S, c1Pad), fuzzName(c2S, c2Pad)
		for _, n := range []string{binding, app, env, c1, c2} {
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				t.Fatalf("test input %q is not an object name: %v", n, errs)
			}
		}

		n1 := checkDeploymentName(t, binding, app, env, c1)
		n2 := checkDeploymentName(t, binding, app, env, c2)
		if c1 == c2 {
			if n1 != n2 {
				t.Fatalf("one component, two names: %q and %q", n1, n2)
			}
			return
		}

		b := &appstudio.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Name: binding, Namespace: "tenant"},
			Spec:       appstudio.SnapshotEnvironmentBindingSpec{Application: app, Environment: env, Snapshot: "snap"},
		}
		for _, c := range []string{c1, c2} {
			b.Status.Components = append(b.Status.Components, appstudio.BindingComponentStatus{
				Name:             c,
				GitOpsRepository: appstudio.BindingComponentGitOpsRepository{URL: "https://github.com/org/gitops", Path: "components/" + c},
			})
		}
		desired, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"})
		if n1 == n2 {
			ce := outcome.As(err)
			if ce == nil || ce.Kind != outcome.User || ce.Reason != appstudio.SnapshotEnvironmentBindingReasonNameConflict ||
				!strings.Contains(ce.Message, c1) || !strings.Contains(ce.Message, c2) {
				t.Fatalf("components %q and %q both get %q, and Desired says %v", c1, c2, n1, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Desired refuses components %q and %q with names %q and %q: %v", c1, c2, n1, n2, err)
		}
		if len(desired) != 2 || desired[0].Name != n1 || desired[1].Name != n2 {
			t.Fatalf("Desired does not use DeploymentName: %d deployments", len(desired))
		}
	})
}

// checkDeploymentName checks one name against the rule and returns it.
func checkDeploymentName(t *testing.T, binding, app, env, component string) string {
	t.Helper()
	name := DeploymentName(binding, app, env, component)
	if again := DeploymentName(binding, app, env, component); again != name {
		t.Fatalf("DeploymentName is not deterministic: %q then %q", name, again)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Fatalf("name %q is not a valid object name: %v", name, errs)
	}
	if len(name) > MaxNameLength {
		t.Fatalf("name %q is %d characters long, more than %d", name, len(name), MaxNameLength)
	}
	full := binding + "-" + app + "-" + env + "-" + component
	short := binding + "-" + component
	sum := sha256.Sum256([]byte(full))
	switch {
	case len(full) <= MaxNameLength:
		if name != full {
			t.Fatalf("name %q, want the full %q", name, full)
		}
	case len(short) <= MaxNameLength:
		if name != short {
			t.Fatalf("name %q, want the short %q", name, short)
		}
	default:
		prefix, ok := strings.CutSuffix(name, "-"+hex.EncodeToString(sum[:]))
		if !ok || prefix != strings.TrimRight(short[:180], "-.") {
			t.Fatalf("name %q is not the first 180 characters of %q and the hash of %q", name, short, full)
		}
	}
	return name
}
