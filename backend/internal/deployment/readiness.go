package deployment

import (
	"cmp"
	"fmt"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/conditions"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// Reasons of the Ready condition of a GitOpsDeployment (besides validation.ReasonInvalidSpec
// and outcome.ReasonInternalError).
const (
	ReasonDeployed                = "Deployed"
	ReasonProgressing             = "Progressing"
	ReasonOutOfSync               = "OutOfSync"
	ReasonComparisonError         = "ComparisonError"
	ReasonSyncError               = "SyncError"
	ReasonSyncFailed              = "SyncFailed"
	ReasonDegraded                = "Degraded"
	ReasonSuspended               = "Suspended"
	ReasonEnvironmentNotFound     = "ManagedEnvironmentNotFound"
	ReasonEnvironmentNotConnected = "ManagedEnvironmentNotConnected"
)

// messageAwaitingComparison explains Ready until Argo CD has compared the current spec. A new
// GitOpsDeployment reads it from the CRD's default status (Ready False and Reconciling
// True, both Progressing with this message), so that the first reconcile, which finds
// nothing compared yet, has no status to write.
const messageAwaitingComparison = "Waiting for Argo CD to compare the current spec"

// progress says how far a GitOpsDeployment whose rows are written is from Ready. Its
// generation counts as processed once Argo CD has compared the current spec (the state's
// comparedTo is what want asks for) or failed to; it is Ready when that comparison is
// Synced and Healthy.
func progress(depl *v1.GitOpsDeployment, want *desired, st *db.ApplicationState) outcome.Progress {
	if want == nil || st == nil {
		return outcome.Working(ReasonProgressing, messageAwaitingComparison, true)
	}
	status := &depl.Status
	// A failed comparison leaves comparedTo at the last spec that could be compared, so
	// it is an answer about the current spec too.
	for _, c := range []struct {
		typ    v1.GitOpsDeploymentConditionType
		reason string
	}{{v1.GitOpsDeploymentConditionComparisonError, ReasonComparisonError}, {v1.GitOpsDeploymentConditionSyncError, ReasonSyncError}} {
		if found := conditions.Find(status.Conditions, c.typ); found != nil && found.Status == v1.GitOpsConditionStatusTrue {
			return outcome.Failed(c.reason, found.Message)
		}
	}
	if !compared(st.ReconciledState, want) {
		return outcome.Working(ReasonProgressing, messageAwaitingComparison, true)
	}
	revision := shortRevision(status.Sync.Revision)
	if op := status.OperationState; op != nil && (op.Phase == "Failed" || op.Phase == "Error") && status.Sync.Status != v1.SyncStatusCodeSynced {
		return outcome.Failed(ReasonSyncFailed, fmt.Sprintf("The sync of revision %s failed: %s", revision, op.Message))
	}
	switch status.Sync.Status {
	case v1.SyncStatusCodeSynced:
	case v1.SyncStatusCodeOutOfSync:
		if depl.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated {
			return outcome.Working(ReasonOutOfSync, fmt.Sprintf("Deploying revision %s", revision), false)
		}
		return outcome.Waiting(ReasonOutOfSync, fmt.Sprintf("The live resources differ from revision %s; a GitOpsDeploymentSyncRun deploys it", revision))
	default:
		return outcome.Working(ReasonProgressing, "Waiting for Argo CD to compare the live resources", false)
	}
	switch health := status.Health; health.Status {
	case v1.HealthStatusCodeHealthy:
		return outcome.Done(ReasonDeployed, fmt.Sprintf("Revision %s is deployed and healthy", revision))
	case v1.HealthStatusCodeDegraded:
		return outcome.Failed(ReasonDegraded, cmp.Or(health.Message, fmt.Sprintf("Revision %s is deployed, and some of its resources are Degraded", revision)))
	case v1.HealthStatusCodeSuspended:
		return outcome.Waiting(ReasonSuspended, cmp.Or(health.Message, fmt.Sprintf("Revision %s is deployed, and some of its resources are Suspended", revision)))
	default:
		return outcome.Working(ReasonProgressing, fmt.Sprintf("Revision %s is deployed; waiting for its resources to become healthy (%s)", revision, cmp.Or(string(health.Status), "Unknown")), false)
	}
}

// compared reports whether Argo CD's last comparison was of the source and destination
// that want asks for.
func compared(got *argov1alpha1.ComparedTo, want *desired) bool {
	if got == nil {
		return false
	}
	in := want.input
	if got.Source.RepoURL != in.RepoURL || got.Source.Path != in.Path || revision(got.Source.TargetRevision) != revision(in.TargetRevision) {
		return false
	}
	dest := argocd.ApplicationSpec(in).Destination
	return got.Destination.Namespace == dest.Namespace &&
		(dest.Name == "" || got.Destination.Name == dest.Name) &&
		(dest.Server == "" || got.Destination.Server == dest.Server)
}

// revision is a target revision as Argo CD resolves it: empty means HEAD.
func revision(targetRevision string) string {
	if targetRevision == "" {
		return "HEAD"
	}
	return targetRevision
}

// shortRevision is the first 12 characters of a commit id, as people quote them.
func shortRevision(rev string) string {
	if rev == "" {
		return "(unknown)"
	}
	return rev[:min(len(rev), 12)]
}
