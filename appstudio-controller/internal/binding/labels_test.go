package binding

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestDesiredCopiesLabels(t *testing.T) {
	long := strings.Repeat("x", 64)
	b := &appstudio.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "b", Labels: map[string]string{
			"appstudio.openshift.io/foo":         "bar",
			"appstudio.openshift.io/environment": "other",
			"appstudio.openshift.io/long":        long,
			"appstudio.openshift.io/bad/key":     "v",
			"example.com/not-copied":             "v",
		}},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "env"},
		Status: appstudio.SnapshotEnvironmentBindingStatus{Components: []appstudio.BindingComponentStatus{{Name: "c",
			GitOpsRepository: appstudio.BindingComponentGitOpsRepository{URL: "https://example.com/r", Path: "p"}}}},
	}
	out, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"})
	if len(out) != 1 {
		t.Fatalf("want 1 deployment, got %d (err %v)", len(out), err)
	}
	want := map[string]string{
		appstudio.LabelApplication: "app", appstudio.LabelComponent: "c", appstudio.LabelEnvironment: "env",
		"appstudio.openshift.io/foo": "bar",
	}
	if got := out[0].Labels; len(got) != len(want) {
		t.Fatalf("labels %v, want %v", got, want)
	}
	for k, v := range want {
		if out[0].Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, out[0].Labels[k], v)
		}
	}
	e := outcome.As(err)
	if e == nil || e.Kind != outcome.User || e.Reason != appstudio.SnapshotEnvironmentBindingReasonInvalidLabel {
		t.Fatalf("want a user error %s, got %v", appstudio.SnapshotEnvironmentBindingReasonInvalidLabel, err)
	}
	for _, s := range []string{`label key "appstudio.openshift.io/bad/key"`, `label "appstudio.openshift.io/long" value`, "2 labels"} {
		if !strings.Contains(e.Message, s) {
			t.Errorf("message %q lacks %q", e.Message, s)
		}
	}
	if strings.Contains(e.Message, "foo") {
		t.Errorf("message %q names a valid label", e.Message)
	}

	delete(b.Labels, "appstudio.openshift.io/long")
	delete(b.Labels, "appstudio.openshift.io/bad/key")
	if _, err := Desired(b, v1.ApplicationDestination{Namespace: "tenant"}); err != nil {
		t.Fatalf("valid labels: %v", err)
	}
}
