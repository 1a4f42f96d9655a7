package syncrun

import (
	"testing"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestSyncResult(t *testing.T) {
	const mine, theirs = "run-a", "run-b"
	state := func(run string, phase v1.OperationPhase, message string) *v1.OperationState {
		return &v1.OperationState{Phase: phase, Message: message, Operation: v1.ApplicationOperation{
			Info: []v1.OperationInfo{{Name: argocd.InfoSyncOperationID, Value: run}}}}
	}
	kept := &db.SyncOperation{ResultPhase: "Failed", ResultMessage: "one or more objects failed to apply"}
	tests := []struct {
		name               string
		state              *v1.OperationState
		syncOp             *db.SyncOperation
		wantPhase, wantMsg string
	}{
		{"no sync yet", nil, &db.SyncOperation{}, "", ""},
		{"its sync is running", state(mine, "Running", ""), &db.SyncOperation{}, "", ""},
		{"its sync succeeded", state(mine, "Succeeded", "successfully synced"), &db.SyncOperation{}, "Succeeded", "successfully synced"},
		{"its sync failed", state(mine, "Error", "boom"), nil, "Error", "boom"},
		{"its result was kept, and the deployment shows it: read with its status", state(mine, "Succeeded", "synced"), kept, "Succeeded", "synced"},
		{"its result was kept before the deployment showed any", nil, kept, "", ""},
		{"another run's sync replaced it, the result was kept", state(theirs, "Running", ""), kept, "Failed", kept.ResultMessage},
		{"an automated sync replaced it, the result was kept", &v1.OperationState{Phase: "Running"}, kept, "Failed", kept.ResultMessage},
		{"another run's result is not this one's", state(theirs, "Succeeded", ""), &db.SyncOperation{}, "", ""},
		{"a sync the service did not start", &v1.OperationState{Phase: "Succeeded"}, &db.SyncOperation{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			phase, msg := syncResult(mine, tt.state, tt.syncOp)
			if phase != tt.wantPhase || msg != tt.wantMsg {
				t.Fatalf("syncResult = %q, %q; want %q, %q", phase, msg, tt.wantPhase, tt.wantMsg)
			}
		})
	}
}
