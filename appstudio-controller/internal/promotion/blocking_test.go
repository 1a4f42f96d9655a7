package promotion

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestBlocking(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	const waiting, active, complete = appstudio.PromotionRunStateWaiting, appstudio.PromotionRunStateActive, appstudio.PromotionRunStateComplete
	run := func(name string, created metav1.Time, state appstudio.PromotionRunState) appstudio.PromotionRun {
		return appstudio.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}, Status: appstudio.PromotionRunStatus{State: state}}
	}
	deleting := run("old", t0, active)
	deleting.DeletionTimestamp = &t1
	for _, tc := range []struct {
		name string
		runs []appstudio.PromotionRun
		self string
		want string
	}{
		{"alone", []appstudio.PromotionRun{run("a", t0, "")}, "a", ""},
		{"an earlier unfinished run", []appstudio.PromotionRun{run("b", t1, ""), run("a", t0, waiting)}, "b", "a"},
		{"same second: by name", []appstudio.PromotionRun{run("b", t0, ""), run("a", t0, "")}, "b", "a"},
		{"the oldest goes first", []appstudio.PromotionRun{run("b", t0, ""), run("a", t0, "")}, "a", ""},
		{"earlier runs that completed", []appstudio.PromotionRun{run("a", t0, complete), run("b", t1, "")}, "b", ""},
		{"an active run that sorts after", []appstudio.PromotionRun{run("s2-dev", t0, active), run("s2-demo", t0, "")}, "s2-demo", "s2-dev"},
		{"an earlier run being deleted", []appstudio.PromotionRun{deleting, run("b", t1, "")}, "b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Blocking(tc.runs, tc.self)).To(Equal(tc.want))
		})
	}
}
