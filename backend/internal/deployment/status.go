package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/conditions"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// Argo CD conditions mirrored on the GitOpsDeployment, with their resolved reasons.
var mirrored = []struct {
	argo     string
	typ      v1.GitOpsDeploymentConditionType
	reason   v1.GitOpsDeploymentReasonType
	resolved v1.GitOpsDeploymentReasonType
}{
	{argov1alpha1.ApplicationConditionSyncError, v1.GitOpsDeploymentConditionSyncError, v1.GitOpsDeploymentReasonSyncError, v1.GitOpsDeploymentReasonSyncErrorResolved},
	{argov1alpha1.ApplicationConditionComparisonError, v1.GitOpsDeploymentConditionComparisonError, v1.GitOpsDeploymentReasonComparisonError, v1.GitOpsDeploymentReasonComparisonErrorResolved},
}

// readStatus copies the application state the cluster-agent reported into depl.Status, and
// returns that state (nil while Argo CD has not reported). want (nil when unresolved) may
// carry the state, read with the application's row.
func (r *Reconciler) readStatus(ctx context.Context, tenant *db.Tenant, depl *v1.GitOpsDeployment, want *desired, now metav1.Time) (*db.ApplicationState, error) {
	st, err := r.recordedState(ctx, tenant, depl, want)
	if st == nil || err != nil {
		return nil, err
	}
	status := &depl.Status
	status.Sync = v1.SyncStatus{Status: v1.SyncStatusCode(st.SyncStatus), Revision: st.Revision}
	status.Health = v1.HealthStatus{Status: v1.HealthStatusCode(st.Health), Message: st.HealthMessage}
	status.Resources = resources(st.Resources)
	if status.ReconciledState, err = reconciledState(st.ReconciledState, r.environmentName(ctx, tenant)); err != nil {
		return nil, err
	}
	if status.OperationState, err = operationState(st.OperationState); err != nil {
		return nil, err
	}
	for _, m := range mirrored {
		if msg := conditionMessage(st.Conditions, m.argo); msg != "" {
			status.Conditions, _ = conditions.Set(status.Conditions, m.typ, v1.GitOpsConditionStatusTrue, m.reason, msg, now)
		} else {
			status.Conditions, _ = conditions.Resolve(status.Conditions, m.typ, m.resolved, now)
		}
	}
	return st, nil
}

// recordedState is the application's state (nil when none), as want read it or read now.
func (r *Reconciler) recordedState(ctx context.Context, tenant *db.Tenant, depl *v1.GitOpsDeployment, want *desired) (*db.ApplicationState, error) {
	if want != nil && want.recordedRead {
		return want.recorded, nil
	}
	st, err := r.Store.GetApplicationState(ctx, r.DB, tenant.ID, string(depl.UID))
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	return st, err
}

// conditionMessage joins the messages of Argo CD's conditions of one type.
func conditionMessage(list []argov1alpha1.ApplicationCondition, typ string) string {
	var msgs []string
	for _, c := range list {
		if c.Type == typ {
			msgs = append(msgs, c.Message)
		}
	}
	return strings.Join(msgs, "; ")
}

func resources(in []argov1alpha1.ResourceStatus) []v1.ResourceStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]v1.ResourceStatus, 0, len(in))
	for _, res := range in {
		rs := v1.ResourceStatus{
			Group: res.Group, Version: res.Version, Kind: res.Kind,
			Namespace: res.Namespace, Name: res.Name,
			Status: v1.SyncStatusCode(res.Status),
		}
		if res.Health != nil {
			rs.Health = &v1.HealthStatus{Status: v1.HealthStatusCode(res.Health.Status), Message: res.Health.Message}
		}
		out = append(out, rs)
	}
	return out
}

// reconciledState says what Argo CD last compared against. A destination that is a managed
// environment's cluster Secret is named by the GitOpsDeploymentManagedEnvironment that
// environmentName finds for that environment's id, which is called only then: the
// environment compared against, not the one the spec names now, which Argo CD may not have
// compared yet.
func reconciledState(cmp *argov1alpha1.ComparedTo, environmentName func(id string) (string, error)) (v1.ReconciledState, error) {
	if cmp == nil {
		return v1.ReconciledState{}, nil
	}
	state := v1.ReconciledState{Destination: v1.GitOpsDeploymentDestination{Namespace: cmp.Destination.Namespace}}
	if cmp.Source.RepoURL != "" {
		state.Source = v1.GitOpsDeploymentSource{RepoURL: cmp.Source.RepoURL, Path: cmp.Source.Path, Branch: cmp.Source.TargetRevision}
	}
	if id := comparedEnvironmentID(cmp); id != "" {
		name, err := environmentName(id)
		if err != nil {
			return v1.ReconciledState{}, err
		}
		state.Destination.Name = name
	}
	return state, nil
}

// comparedEnvironmentID is the id of the managed environment whose cluster Secret Argo CD
// compared against, or "" for any other destination.
func comparedEnvironmentID(cmp *argov1alpha1.ComparedTo) string {
	id, ok := strings.CutPrefix(cmp.Destination.Name, argocd.ClusterSecretName(""))
	if !ok {
		return ""
	}
	return id
}

// environmentName returns a lookup of the name of the tenant's
// GitOpsDeploymentManagedEnvironment that maps to a managed environment id: "" when none
// does any more (the environment was deleted, or re-created with another id).
func (r *Reconciler) environmentName(ctx context.Context, tenant *db.Tenant) func(id string) (string, error) {
	return func(id string) (string, error) {
		m, err := r.Store.GetAPICRMappingByTarget(ctx, r.DB, tenant.ID, db.APIResourceManagedEnvironment, id)
		if errors.Is(err, db.ErrNotFound) || errors.Is(err, db.ErrInvalid) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return m.APIResourceName, nil
	}
}

// operationState converts Argo CD's operationState to the API's copy of it: the API mirrors
// Argo CD's field names, so a JSON round trip keeps every field both know.
func operationState(in *argov1alpha1.OperationState) (*v1.OperationState, error) {
	if in == nil {
		return nil, nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out := &v1.OperationState{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("converting operationState: %w", err)
	}
	return out, nil
}
