package promotion

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestRoots(t *testing.T) {
	const auto, manual = appstudio.DeploymentStrategyAppStudioAutomated, appstudio.DeploymentStrategyManual
	deleting := env("gone", "", auto)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name string
		envs []appstudio.Environment
		want []string
	}{
		{"automated without a parent, sorted", []appstudio.Environment{env("qa", "", auto), env("dev", "", auto)}, []string{"dev", "qa"}},
		{"a child is reached through its parent", []appstudio.Environment{env("dev", "", auto), env("staging", "dev", auto)}, []string{"dev"}},
		{"manual or unset strategy", []appstudio.Environment{env("dev", "", manual), env("qa", "", "")}, nil},
		{"being deleted", []appstudio.Environment{deleting}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Roots(tc.envs)).To(Equal(tc.want))
		})
	}
}

func TestNewest(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	snap := func(name string, created metav1.Time, deleting bool) appstudio.Snapshot {
		s := appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
		if deleting {
			s.DeletionTimestamp = &t1
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		snaps []appstudio.Snapshot
		want  string
	}{
		{"latest created", []appstudio.Snapshot{snap("b", t1, false), snap("c", t0, false)}, "b"},
		{"same second: greatest name", []appstudio.Snapshot{snap("s2", t0, false), snap("s10", t0, false)}, "s2"},
		{"being deleted is left out", []appstudio.Snapshot{snap("a", t0, false), snap("b", t1, true)}, "a"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Newest(tc.snaps)).To(Equal(tc.want))
		})
	}
}

func TestAutomatedRunName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(AutomatedRunName("s1", "dev")).To(Equal("s1-dev-automated"))
	long := strings.Repeat("s", 179) + "." + strings.Repeat("t", 73) // cut right after the dot
	name := AutomatedRunName(long, "dev")
	g.Expect(len(name)).To(BeNumerically("<=", 253))
	g.Expect(validation.IsDNS1123Subdomain(name)).To(BeEmpty())
	g.Expect(name).NotTo(Equal(AutomatedRunName(long, "qa")), "the digest keeps runs of different Environments apart")
}
