package binding

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func component(name, url, branch, path string) appstudio.BindingComponentStatus {
	return appstudio.BindingComponentStatus{Name: name,
		GitOpsRepository: appstudio.BindingComponentGitOpsRepository{URL: url, Branch: branch, Path: path}}
}

func newBinding(name, app, env string, components ...appstudio.BindingComponentStatus) *appstudio.SnapshotEnvironmentBinding {
	return &appstudio.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name},
		Spec:       appstudio.SnapshotEnvironmentBindingSpec{Application: app, Environment: env, Snapshot: "snap"},
		Status:     appstudio.SnapshotEnvironmentBindingStatus{Components: components},
	}
}

const repo = "https://github.com/example/gitops"

// Each component becomes one automated GitOpsDeployment of the binding's namespace, deploying
// the component's GitOps repository location to the binding's destination.
func TestDesiredGeneratesOneAutomatedDeploymentPerComponent(t *testing.T) {
	g := NewWithT(t)
	b := newBinding("appa-staging-binding", "new-demo-app", "staging",
		component("frontend", repo, "main", "components/frontend/overlays/staging"),
		component("backend", repo, "", "components/backend/overlays/staging"))
	dest := v1.ApplicationDestination{Environment: "managed-environment-staging", Namespace: "team-a"}
	out, err := Desired(b, dest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveLen(2))

	want := []struct{ name, component, branch, path string }{
		{"appa-staging-binding-new-demo-app-staging-frontend", "frontend", "main", "components/frontend/overlays/staging"},
		{"appa-staging-binding-new-demo-app-staging-backend", "backend", "", "components/backend/overlays/staging"},
	}
	for i, w := range want {
		d := out[i]
		g.Expect(d.Namespace).To(Equal("tenant"), "in the binding's namespace")
		g.Expect(d.Name).To(Equal(w.name))
		g.Expect(d.Labels).To(Equal(map[string]string{
			appstudio.LabelApplication: "new-demo-app", appstudio.LabelComponent: w.component, appstudio.LabelEnvironment: "staging",
		}))
		g.Expect(d.Spec.Source).To(Equal(v1.ApplicationSource{RepoURL: repo, Path: w.path, TargetRevision: w.branch}))
		g.Expect(d.Spec.Destination).To(Equal(dest))
		g.Expect(d.Spec.Type).To(Equal(v1.GitOpsDeploymentSpecTypeAutomated))
		g.Expect(d.Spec.SyncPolicy).To(BeNil())
		// The owner reference is set when the deployment is written (it needs the scheme).
		g.Expect(d.OwnerReferences).To(BeEmpty())
	}
}

func TestDesiredRefusesUnusableComponentStatus(t *testing.T) {
	tests := []struct {
		name       string
		components []appstudio.BindingComponentStatus
		wantReason string
		wantMsg    []string
	}{
		{
			name:       "a component listed twice",
			components: []appstudio.BindingComponentStatus{component("a", repo, "", "a"), component("b", repo, "", "b"), component("a", repo, "", "a2")},
			wantReason: appstudio.SnapshotEnvironmentBindingReasonDuplicateComponents,
			wantMsg:    []string{`status.components lists component "a" more than once`},
		},
		{
			name:       "a component without repository URL",
			components: []appstudio.BindingComponentStatus{component("a", repo, "", "a"), component("b", "", "main", "b")},
			wantReason: appstudio.SnapshotEnvironmentBindingReasonInvalidComponentStatus,
			wantMsg:    []string{`component "b" has no GitOps repository URL or path in status.components`},
		},
		{
			name:       "a component without path",
			components: []appstudio.BindingComponentStatus{component("a", repo, "main", "")},
			wantReason: appstudio.SnapshotEnvironmentBindingReasonInvalidComponentStatus,
			wantMsg:    []string{`component "a" has no GitOps repository URL or path`},
		},
		{
			// "<b>-<app>-<env>-<c>" in full (under the limit) is also the shortened name of
			// component "<app>-<env>-<c>" (whose full name is past it): one deployment for two
			// components would deploy only one of them.
			name: "two components would share a GitOpsDeployment",
			components: []appstudio.BindingComponentStatus{
				component("c"+strings.Repeat("x", 45), repo, "", "one"),
				component("app-env-c"+strings.Repeat("x", 45), repo, "", "two"),
			},
			wantReason: appstudio.SnapshotEnvironmentBindingReasonNameConflict,
			wantMsg:    []string{`components "c` + strings.Repeat("x", 45) + `" and "app-env-c` + strings.Repeat("x", 45) + `" would both be deployed by GitOpsDeployment`, "rename one of them"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// With this binding name, the conflict case's first component has a full name of
			// 245 characters, and its second one of 253, shortened to the first one's name.
			b := newBinding(strings.Repeat("b", 190), "app", "env", tt.components...)
			out, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"})
			g.Expect(out).To(BeNil(), "nothing is applied or deleted while the status is unusable")
			e := outcome.As(err)
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.Kind).To(Equal(outcome.User))
			g.Expect(e.Reason).To(Equal(tt.wantReason))
			for _, m := range tt.wantMsg {
				g.Expect(e.Message).To(ContainSubstring(m))
			}
		})
	}
}

// A component whose deployment name is not a valid object name is left out and reported; the
// others are deployed all the same.
func TestDesiredLeavesOutComponentsWithInvalidNames(t *testing.T) {
	g := NewWithT(t)
	b := newBinding("b", "app", "env", component("good", repo, "", "good"), component("Bad_Name", repo, "", "bad"))
	out, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"})
	g.Expect(out).To(HaveLen(1))
	g.Expect(out[0].Name).To(Equal("b-app-env-good"))
	e := outcome.As(err)
	g.Expect(e).NotTo(BeNil())
	g.Expect(e.Kind).To(Equal(outcome.User))
	g.Expect(e.Reason).To(Equal(appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName))
	g.Expect(e.Message).To(HavePrefix("1 of 2 components cannot be deployed"))
	g.Expect(e.Message).To(ContainSubstring(`component "Bad_Name": GitOpsDeployment name "b-app-env-Bad_Name" is not a valid object name`))
	g.Expect(e.Message).NotTo(ContainSubstring(`component "good"`))
}

// With no valid component at all, the result is an empty (not nil) list: the reconcile still
// deletes the deployments no longer wanted.
func TestDesiredWithOnlyInvalidNamesStillDeletes(t *testing.T) {
	g := NewWithT(t)
	b := newBinding("b", "app", "env", component("UPPER", repo, "", "p"))
	out, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"})
	g.Expect(out).NotTo(BeNil())
	g.Expect(out).To(BeEmpty())
	g.Expect(outcome.As(err).Reason).To(Equal(appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName))
}

// Invalid component names and invalid labels are both reported.
func TestDesiredReportsInvalidNamesAndLabelsTogether(t *testing.T) {
	g := NewWithT(t)
	b := newBinding("b", "app", "env", component("good", repo, "", "good"), component("UPPER", repo, "", "p"))
	b.Labels = map[string]string{"appstudio.openshift.io/team": strings.Repeat("v", 64)}
	out, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"})
	g.Expect(out).To(HaveLen(1))
	var reasons []string
	for _, e := range leaves(err) {
		reasons = append(reasons, outcome.As(e).Reason)
	}
	g.Expect(reasons).To(ConsistOf(appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName, appstudio.SnapshotEnvironmentBindingReasonInvalidLabel))
	g.Expect(out[0].Labels).NotTo(HaveKey("appstudio.openshift.io/team"))
}

// Only invalid labels, and no components: an empty list with the label error, so that the
// reconcile goes on deleting.
func TestDesiredWithOnlyALabelErrorAndNoComponents(t *testing.T) {
	g := NewWithT(t)
	b := newBinding("b", "app", "env")
	b.Labels = map[string]string{"appstudio.openshift.io/bad/key": "v"}
	out, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"})
	g.Expect(out).NotTo(BeNil())
	g.Expect(out).To(BeEmpty())
	g.Expect(outcome.As(err).Reason).To(Equal(appstudio.SnapshotEnvironmentBindingReasonInvalidLabel))
}

func TestOwnLabelsLeaveOutValuesThatCannotBeLabels(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct {
		name                   string
		application, comp, env string
		want                   map[string]string
	}{
		{"all fit", "app", "comp", "env", map[string]string{
			appstudio.LabelApplication: "app", appstudio.LabelComponent: "comp", appstudio.LabelEnvironment: "env"}},
		// 63 characters is the longest label value.
		{"63 characters", strings.Repeat("a", 63), "comp", "env", map[string]string{
			appstudio.LabelApplication: strings.Repeat("a", 63), appstudio.LabelComponent: "comp", appstudio.LabelEnvironment: "env"}},
		// A long name does not fail the deployment; the label is just not there.
		{"a long application", long, "comp", "env", map[string]string{
			appstudio.LabelComponent: "comp", appstudio.LabelEnvironment: "env"}},
		{"a long component", "app", long, "env", map[string]string{
			appstudio.LabelApplication: "app", appstudio.LabelEnvironment: "env"}},
		{"a dotted component", "app", "comp.v2", "env", map[string]string{
			appstudio.LabelApplication: "app", appstudio.LabelComponent: "comp.v2", appstudio.LabelEnvironment: "env"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(labels(tt.application, tt.comp, tt.env)).To(Equal(tt.want))
		})
	}
}

func TestCopiedLabelsOfTheBinding(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		want    map[string]string
		wantErr []string // substrings; none: no error
	}{
		{"none", nil, map[string]string{}, nil},
		{"only the appstudio.openshift.io prefix is copied", map[string]string{
			"appstudio.openshift.io/team": "a", "appstudio.application": "app", "app.kubernetes.io/name": "x",
		}, map[string]string{"appstudio.openshift.io/team": "a"}, nil},
		// The binding sets these itself from its spec; the labels cannot override them.
		{"the binding's own keys are not copied", map[string]string{
			appstudio.LabelApplication: "other", appstudio.LabelComponent: "other", appstudio.LabelEnvironment: "other",
		}, map[string]string{}, nil},
		{"an empty value is a valid label value", map[string]string{"appstudio.openshift.io/flag": ""},
			map[string]string{"appstudio.openshift.io/flag": ""}, nil},
		{"invalid ones are named in key order", map[string]string{
			"appstudio.openshift.io/z": "bad value", "appstudio.openshift.io/a": "-bad", "appstudio.openshift.io/ok": "fine",
		}, map[string]string{"appstudio.openshift.io/ok": "fine"}, []string{
			"2 labels of the binding cannot be copied onto its GitOpsDeployments",
			`label "appstudio.openshift.io/a" value "-bad"`,
			`; label "appstudio.openshift.io/z" value "bad value"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := copiedLabels(tt.in)
			g.Expect(got).To(Equal(tt.want))
			if tt.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			e := outcome.As(err)
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.Reason).To(Equal(appstudio.SnapshotEnvironmentBindingReasonInvalidLabel))
			for _, s := range tt.wantErr {
				g.Expect(e.Message).To(ContainSubstring(s))
			}
		})
	}
}

func TestWithCopiedKeepsTheOwnLabels(t *testing.T) {
	g := NewWithT(t)
	own := map[string]string{"k": "own"}
	got := withCopied(own, map[string]string{"k": "copied", "extra": "x"})
	g.Expect(got).To(Equal(map[string]string{"k": "own", "extra": "x"}))
}

func TestCapitalizeEventReasons(t *testing.T) {
	// Event reasons are GitOpsDeployment + the CreateOrUpdate operation, in CamelCase.
	tests := []struct{ in, want string }{{"created", "Created"}, {"updated", "Updated"}, {"", ""}}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			NewWithT(t).Expect(capitalize(tt.in)).To(Equal(tt.want))
		})
	}
}

// Long names shorten the GitOpsDeployment's name (NOTES.md) and drop the labels whose value
// would be too long, but the component is deployed all the same.
func TestDesiredWithLongNames(t *testing.T) {
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	tests := []struct {
		name       string
		binding    string
		app, env   string
		component  string
		wantName   string
		wantLabels map[string]string
	}{
		{
			name: "a long application", binding: "b", app: long("a", 100), env: "env", component: "c",
			wantName:   "b-" + long("a", 100) + "-env-c",
			wantLabels: map[string]string{appstudio.LabelComponent: "c", appstudio.LabelEnvironment: "env"},
		},
		{
			// Past 250 characters in full: "<binding>-<component>".
			name: "past the name limit", binding: long("b", 120), app: long("a", 100), env: "env", component: long("c", 30),
			wantName:   long("b", 120) + "-" + long("c", 30),
			wantLabels: map[string]string{appstudio.LabelComponent: long("c", 30), appstudio.LabelEnvironment: "env"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newBinding(tt.binding, tt.app, tt.env, component(tt.component, repo, "main", "p"))
			out, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(HaveLen(1))
			g.Expect(out[0].Name).To(Equal(tt.wantName))
			g.Expect(out[0].Labels).To(Equal(tt.wantLabels))
			g.Expect(out[0].Spec.Source.Path).To(Equal("p"))
		})
	}
}
