// Package indexes holds the field indexes of the backend's cache, registered in one place
// (Register): the fields by which its controllers and the notification router look up
// the CRs that a change concerns.
package indexes

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

const (
	// UID indexes GitOpsDeployments and SyncRuns by metadata.uid. An application row's id
	// is its GitOpsDeployment's UID and a sync operation's id is its SyncRun's UID, so a
	// database notification maps to its CR through the cache alone.
	UID = "metadata.uid"
	// DeploymentEnvironment indexes GitOpsDeployments by spec.destination.environment.
	DeploymentEnvironment = "spec.destination.environment"
	// SyncRunDeployment indexes SyncRuns by spec.gitopsDeploymentName.
	SyncRunDeployment = "spec.gitopsDeploymentName"
	// ManagedEnvironmentSecret indexes ManagedEnvironments by spec.credentialsSecret.
	ManagedEnvironmentSecret = "spec.credentialsSecret"
	// RepositoryCredentialSecret indexes RepositoryCredentials by spec.secret.
	RepositoryCredentialSecret = "spec.secret"
)

// index is one field index of one kind.
type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// all is every index the backend's controllers use.
var all = []index{
	{&v1.GitOpsDeployment{}, UID, byUID},
	{&v1.GitOpsDeploymentSyncRun{}, UID, byUID},
	{&v1.GitOpsDeployment{}, DeploymentEnvironment, func(o client.Object) []string {
		return []string{o.(*v1.GitOpsDeployment).Spec.Destination.Environment}
	}},
	{&v1.GitOpsDeploymentSyncRun{}, SyncRunDeployment, func(o client.Object) []string {
		return []string{o.(*v1.GitOpsDeploymentSyncRun).Spec.GitopsDeploymentName}
	}},
	{&v1.GitOpsDeploymentManagedEnvironment{}, ManagedEnvironmentSecret, func(o client.Object) []string {
		return []string{o.(*v1.GitOpsDeploymentManagedEnvironment).Spec.ClusterCredentialsSecret}
	}},
	{&v1.GitOpsDeploymentRepositoryCredential{}, RepositoryCredentialSecret, func(o client.Object) []string {
		return []string{o.(*v1.GitOpsDeploymentRepositoryCredential).Spec.Secret}
	}},
}

func byUID(o client.Object) []string { return []string{string(o.GetUID())} }

// Register adds every index to the cache behind indexer; call it once, before the
// controllers are set up.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	for _, i := range all {
		if err := indexer.IndexField(ctx, i.obj, i.field, i.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.field, err)
		}
	}
	return nil
}
