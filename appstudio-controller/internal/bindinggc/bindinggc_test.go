package bindinggc

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A grace period that is not positive would delete bindings at once, while the Application
// Service re-creates an Application (or the cache lags): the controller refuses to start.
// The check comes before the manager is used, so no manager is needed here.
func TestSetupRefusesANonPositiveGrace(t *testing.T) {
	tests := []struct {
		name  string
		grace time.Duration
		want  string
	}{
		{"zero", 0, "binding-application-gc: the grace period must be positive, got 0s"},
		{"negative", -time.Second, "binding-application-gc: the grace period must be positive, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Reconciler{Grace: tt.grace}).SetupWithManager(context.Background(), nil)
			NewWithT(t).Expect(err).To(MatchError(tt.want))
		})
	}
}

func TestApplicationIsTheAppStudioKind(t *testing.T) {
	g := NewWithT(t)
	app := newApplication()
	// Only metadata is read; the kind must be the Application Service's Application.
	g.Expect(app.GroupVersionKind()).To(Equal(schema.GroupVersionKind{Group: "appstudio.redhat.com", Version: "v1alpha1", Kind: "Application"}))
}

// Bindings are listed through the index the promotion controller registers; a different name
// would find nothing (and registering it here as well fails the manager).
func TestNowUsesTheInjectedClock(t *testing.T) {
	g := NewWithT(t)
	fixed := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	g.Expect((&Reconciler{Now: func() time.Time { return fixed }}).now()).To(Equal(fixed))
	before := time.Now()
	g.Expect((&Reconciler{}).now()).To(BeTemporally(">=", before))
}
