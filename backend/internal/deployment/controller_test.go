package deployment

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// reportError keeps the ErrorOccurred condition of api.md: True with the user's message, or
// a generic one for an internal error; False and ErrorOccurredResolved with an empty message
// once a reconcile succeeds; absent if no error ever happened.
func TestReportErrorKeepsErrorOccurred(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	raised := v1.GitOpsDeploymentCondition{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue,
		Reason: v1.GitOpsDeploymentReasonErrorOccurred, Message: "earlier"}
	userErr := outcome.UserError("InvalidSpec", "spec.source.path %q must be a relative path inside the repository, without '..'", "/x")
	tests := []struct {
		name       string
		before     []v1.GitOpsDeploymentCondition
		err        error
		wantAbsent bool
		want       v1.GitOpsDeploymentCondition
	}{
		{name: "success, never failed: absent", err: nil, wantAbsent: true},
		{
			name: "success after an error: resolved", before: []v1.GitOpsDeploymentCondition{raised},
			want: v1.GitOpsDeploymentCondition{Status: v1.GitOpsConditionStatusFalse, Reason: v1.GitOpsDeploymentReasonErrorOccurredResolved, Message: ""},
		},
		{
			name: "a user error shows its message", err: userErr,
			want: v1.GitOpsDeploymentCondition{Status: v1.GitOpsConditionStatusTrue, Reason: v1.GitOpsDeploymentReasonErrorOccurred,
				Message: `spec.source.path "/x" must be a relative path inside the repository, without '..'`},
		},
		{
			name: "a wrapped user error shows its message", err: fmt.Errorf("resolving: %w", userErr),
			want: v1.GitOpsDeploymentCondition{Status: v1.GitOpsConditionStatusTrue, Reason: v1.GitOpsDeploymentReasonErrorOccurred,
				Message: `spec.source.path "/x" must be a relative path inside the repository, without '..'`},
		},
		{
			// A missing environment is outside the object: still the user's to fix, shown as is.
			name: "a stalled error shows its message", before: []v1.GitOpsDeploymentCondition{raised},
			err: outcome.StalledError(ReasonEnvironmentNotFound, "GitOpsDeploymentManagedEnvironment %q, named in spec.destination.environment, does not exist in namespace %q", "prod", "jane"),
			want: v1.GitOpsDeploymentCondition{Status: v1.GitOpsConditionStatusTrue, Reason: v1.GitOpsDeploymentReasonErrorOccurred,
				Message: `GitOpsDeploymentManagedEnvironment "prod", named in spec.destination.environment, does not exist in namespace "jane"`},
		},
		{
			// The cause (a database error, say) is for the log, never for the tenant.
			name: "an internal error shows the generic message", err: errors.New("pq: connection refused to 10.0.0.1"),
			want: v1.GitOpsDeploymentCondition{Status: v1.GitOpsConditionStatusTrue, Reason: v1.GitOpsDeploymentReasonErrorOccurred,
				Message: "An internal error occurred while reconciling this resource; the service retries automatically."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			depl := &v1.GitOpsDeployment{Status: v1.GitOpsDeploymentStatus{Conditions: append([]v1.GitOpsDeploymentCondition(nil), tt.before...)}}
			(&Reconciler{}).reportError(depl, tt.err, now)
			var found *v1.GitOpsDeploymentCondition
			for i := range depl.Status.Conditions {
				if depl.Status.Conditions[i].Type == v1.GitOpsDeploymentConditionErrorOccurred {
					found = &depl.Status.Conditions[i]
				}
			}
			if tt.wantAbsent {
				g.Expect(found).To(BeNil())
				return
			}
			g.Expect(found).NotTo(BeNil())
			g.Expect(found.Status).To(Equal(tt.want.Status))
			g.Expect(found.Reason).To(Equal(tt.want.Reason))
			g.Expect(found.Message).To(Equal(tt.want.Message))
			g.Expect(depl.Status.Conditions).To(HaveLen(1), "one ErrorOccurred condition, never two")
		})
	}
}

// Only a status change of ErrorOccurred moves its lastTransitionTime; a new message
// of a condition that stays True does not.
func TestReportErrorTransitionTime(t *testing.T) {
	g := NewWithT(t)
	t1 := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Minute))
	t3 := metav1.NewTime(t2.Add(time.Minute))
	depl := &v1.GitOpsDeployment{}
	r := &Reconciler{}
	r.reportError(depl, outcome.UserError("InvalidSpec", "first"), t1)
	r.reportError(depl, outcome.UserError("InvalidSpec", "second"), t2)
	c := depl.Status.Conditions[0]
	g.Expect(c.Message).To(Equal("second"))
	g.Expect(c.LastTransitionTime.Equal(&t1)).To(BeTrue(), "still True since t1")
	g.Expect(c.LastProbeTime.Equal(&t2)).To(BeTrue())
	r.reportError(depl, nil, t3)
	c = depl.Status.Conditions[0]
	g.Expect(c.Status).To(Equal(v1.GitOpsConditionStatusFalse))
	g.Expect(c.LastTransitionTime.Equal(&t3)).To(BeTrue())
}

// The controller reconciles on changes of the spec and of the lifecycle, and not on its own
// status writes (which would otherwise wake it after each one).
func TestSpecOrLifecycleChanged(t *testing.T) {
	base := func() *v1.GitOpsDeployment {
		return &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "n", Generation: 1,
			Annotations: map[string]string{v1.RefreshAnnotation: "1", "note": "a"}, Finalizers: []string{v1.FinalizerResourcesFinalizer}}}
	}
	deleted := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tests := []struct {
		name   string
		change func(d *v1.GitOpsDeployment)
		want   bool
	}{
		{"nothing", func(*v1.GitOpsDeployment) {}, false},
		{"a status write", func(d *v1.GitOpsDeployment) {
			d.Status.Sync.Status = v1.SyncStatusCodeSynced
			d.ResourceVersion = "2"
		}, false},
		{"a new generation (spec)", func(d *v1.GitOpsDeployment) { d.Generation = 2 }, true},
		{"a new refresh annotation", func(d *v1.GitOpsDeployment) { d.Annotations[v1.RefreshAnnotation] = "2" }, true},
		{"the refresh annotation removed", func(d *v1.GitOpsDeployment) { delete(d.Annotations, v1.RefreshAnnotation) }, true},
		{"another annotation", func(d *v1.GitOpsDeployment) { d.Annotations["note"] = "b" }, false},
		{"a label", func(d *v1.GitOpsDeployment) { d.Labels = map[string]string{"x": "y"} }, false},
		{"deletion started", func(d *v1.GitOpsDeployment) { d.DeletionTimestamp = &deleted }, true},
		{"the finalizer removed", func(d *v1.GitOpsDeployment) { d.Finalizers = nil }, true},
		{"another finalizer added", func(d *v1.GitOpsDeployment) { d.Finalizers = append(d.Finalizers, "other") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, updated := base(), base()
			tt.change(updated)
			if got := (specOrLifecycleChanged{}).Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSpecOrLifecycleChangedPassesEverythingElse(t *testing.T) {
	g := NewWithT(t)
	p := specOrLifecycleChanged{}
	depl := &v1.GitOpsDeployment{}
	g.Expect(p.Create(event.CreateEvent{Object: depl})).To(BeTrue())
	g.Expect(p.Delete(event.DeleteEvent{Object: depl})).To(BeTrue())
	g.Expect(p.Generic(event.GenericEvent{Object: depl})).To(BeTrue())
	// An update event without both objects cannot be compared: reconcile to be safe.
	g.Expect(p.Update(event.UpdateEvent{ObjectNew: depl})).To(BeTrue())
}
