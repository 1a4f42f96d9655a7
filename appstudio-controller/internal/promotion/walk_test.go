package promotion

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func env(name, parent string, strategy appstudio.DeploymentStrategyType) appstudio.Environment {
	return appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appstudio.EnvironmentSpec{ParentEnvironment: parent, DeploymentStrategy: strategy}}
}

func TestDepths(t *testing.T) {
	const auto, manual = appstudio.DeploymentStrategyAppStudioAutomated, appstudio.DeploymentStrategyManual
	for _, tc := range []struct {
		name    string
		envs    []appstudio.Environment
		initial string
		want    [][]string
	}{
		{"chain", []appstudio.Environment{env("prod", "staging", auto), env("dev", "", manual), env("staging", "dev", auto)}, "dev",
			[][]string{{"dev"}, {"staging"}, {"prod"}}},
		{"start in the middle", []appstudio.Environment{env("prod", "staging", auto), env("dev", "", auto), env("staging", "dev", auto)}, "staging",
			[][]string{{"staging"}, {"prod"}}},
		{"children by depth, sorted", []appstudio.Environment{
			env("dev", "", auto), env("stage-b", "dev", auto), env("stage-a", "dev", auto),
			env("prod-b", "stage-b", auto), env("prod-a", "stage-a", auto), env("prod-a2", "stage-a", auto)}, "dev",
			[][]string{{"dev"}, {"stage-a", "stage-b"}, {"prod-a", "prod-a2", "prod-b"}}},
		{"manual environments end their branch", []appstudio.Environment{
			env("dev", "", auto), env("staging", "dev", manual), env("prod", "staging", auto), env("qa", "dev", auto), env("unset", "dev", "")}, "dev",
			[][]string{{"dev"}, {"qa"}}},
		{"cycle", []appstudio.Environment{env("a", "c", auto), env("b", "a", auto), env("c", "b", auto)}, "a",
			[][]string{{"a"}, {"b"}, {"c"}}},
		{"self-parent", []appstudio.Environment{env("a", "a", auto)}, "a", [][]string{{"a"}}},
		{"diamond-like reuse is visited once", []appstudio.Environment{
			env("a", "", auto), env("b", "a", auto), env("c", "b", auto), env("b2", "a", auto)}, "a",
			[][]string{{"a"}, {"b", "b2"}, {"c"}}},
		{"missing initial", []appstudio.Environment{env("a", "", auto)}, "nope", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Depths(tc.envs, tc.initial)).To(Equal(tc.want))
		})
	}
}

func TestChildrenSkipsVisited(t *testing.T) {
	g := NewWithT(t)
	envs := []appstudio.Environment{env("a", "x", appstudio.DeploymentStrategyAppStudioAutomated), env("b", "x", appstudio.DeploymentStrategyAppStudioAutomated)}
	g.Expect(Children(envs, []string{"x"}, map[string]bool{"a": true})).To(Equal([]string{"b"}))
	g.Expect(Children(envs, []string{"y"}, nil)).To(BeEmpty())
}
