package syncop

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

func withID(id string) *argov1alpha1.Operation {
	return &argov1alpha1.Operation{Info: []*argov1alpha1.Info{{Name: argocd.InfoSyncOperationID, Value: id}}}
}

func TestBusyWhileAnOperationIsPendingOrRunning(t *testing.T) {
	tests := []struct {
		name string
		app  argov1alpha1.Application
		want bool
	}{
		{name: "idle", want: false},
		// Set but not started by Argo CD yet: replacing it would lose someone's sync.
		{name: "an operation pending", app: argov1alpha1.Application{Operation: &argov1alpha1.Operation{}}, want: true},
		{name: "an operation running", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
			OperationState: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationRunning}}}, want: true},
		{name: "the last operation finished", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
			OperationState: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationSucceeded}}}, want: false},
		{name: "the last operation failed", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
			OperationState: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationFailed}}}, want: false},
		// Terminating is on its way to Failed; only Running counts as running.
		{name: "an operation terminating", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
			OperationState: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationTerminating}}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Busy(&tt.app)).To(Equal(tt.want))
		})
	}
}

func TestOwnedByMatchesTheSyncOperationID(t *testing.T) {
	tests := []struct {
		name string
		op   *argov1alpha1.Operation
		id   string
		want bool
	}{
		{name: "no operation", op: nil, id: "so-1", want: false},
		{name: "ours", op: withID("so-1"), id: "so-1", want: true},
		{name: "another sync's", op: withID("so-2"), id: "so-1", want: false},
		// An operation started by someone else (Argo CD's automated sync, a person) carries no id.
		{name: "not the service's", op: &argov1alpha1.Operation{Info: []*argov1alpha1.Info{{Name: "reason", Value: "so-1"}}}, id: "so-1", want: false},
		{name: "nil info items", op: &argov1alpha1.Operation{Info: []*argov1alpha1.Info{nil}}, id: "so-1", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(ownedBy(tt.op, tt.id)).To(Equal(tt.want))
		})
	}
}

func TestSyncOperationAPIMessage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "an API status", err: apierrors.NewBadRequest("operation.sync.revision: Invalid value"), want: "operation.sync.revision: Invalid value"},
		{name: "a wrapped API status", err: fmt.Errorf("patching Argo CD Application x: %w", apierrors.NewBadRequest("bad")), want: "bad"},
		{name: "any other error", err: errors.New("connection reset"), want: "connection reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(apiMessage(tt.err)).To(Equal(tt.want))
		})
	}
}

func TestSyncPollDefaultsToASecond(t *testing.T) {
	g := NewWithT(t)
	g.Expect((&Handler{}).poll()).To(Equal(DefaultPollInterval))
	g.Expect((&Handler{PollInterval: -time.Second}).poll()).To(Equal(DefaultPollInterval))
	g.Expect((&Handler{PollInterval: 200 * time.Millisecond}).poll()).To(Equal(200 * time.Millisecond))
	g.Expect(DefaultPollInterval).To(Equal(time.Second))
}
