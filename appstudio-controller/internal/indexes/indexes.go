// Package indexes holds the field indexes of the appstudio-controller's cache, registered in
// one place (Register): the fields by which its controllers and its admission webhook look
// up the objects that a change concerns.
package indexes

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

const (
	// Application indexes PromotionRuns, SnapshotEnvironmentBindings and Snapshots by
	// spec.application.
	Application = "spec.application"
	// BindingEnvironment indexes SnapshotEnvironmentBindings by spec.environment.
	BindingEnvironment = "spec.environment"
	// BindingApplicationEnvironment indexes SnapshotEnvironmentBindings by
	// ApplicationEnvironmentKey.
	BindingApplicationEnvironment = "spec.application/spec.environment"
	// EnvironmentClaim indexes Environments by the DeploymentTargetClaim they deploy to.
	EnvironmentClaim = "appstudio.environment.claimName"
	// EnvironmentSecret indexes Environments by the Secret of their cluster credentials.
	EnvironmentSecret = "appstudio.environment.credentialsSecret" //nolint:gosec // an index name, not a credential
)

// ApplicationEnvironmentKey is the BindingApplicationEnvironment value of a binding. Names
// are not validated as DNS names, so two different pairs can share a key ("a/b"+"c" and
// "a"+"b/c"); lookups compare the fields themselves after using the index.
func ApplicationEnvironmentKey(application, environment string) string {
	return application + "/" + environment
}

// index is one field index of one kind.
type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// all is every index the appstudio-controller uses.
var all = []index{
	{&appstudio.PromotionRun{}, Application, func(o client.Object) []string {
		return []string{o.(*appstudio.PromotionRun).Spec.Application}
	}},
	{&appstudio.SnapshotEnvironmentBinding{}, Application, func(o client.Object) []string {
		return []string{o.(*appstudio.SnapshotEnvironmentBinding).Spec.Application}
	}},
	{&appstudio.Snapshot{}, Application, func(o client.Object) []string {
		return []string{o.(*appstudio.Snapshot).Spec.Application}
	}},
	{&appstudio.SnapshotEnvironmentBinding{}, BindingEnvironment, func(o client.Object) []string {
		return []string{o.(*appstudio.SnapshotEnvironmentBinding).Spec.Environment}
	}},
	{&appstudio.SnapshotEnvironmentBinding{}, BindingApplicationEnvironment, func(o client.Object) []string {
		b := o.(*appstudio.SnapshotEnvironmentBinding)
		return []string{ApplicationEnvironmentKey(b.Spec.Application, b.Spec.Environment)}
	}},
	{&appstudio.Environment{}, EnvironmentClaim, func(o client.Object) []string {
		if t := o.(*appstudio.Environment).Spec.Configuration.Target; t != nil && t.DeploymentTargetClaim.ClaimName != "" {
			return []string{t.DeploymentTargetClaim.ClaimName}
		}
		return nil
	}},
	{&appstudio.Environment{}, EnvironmentSecret, func(o client.Object) []string {
		if u := o.(*appstudio.Environment).Spec.UnstableConfigurationFields; u != nil && u.KubernetesClusterCredentials.ClusterCredentialsSecret != "" {
			return []string{u.KubernetesClusterCredentials.ClusterCredentialsSecret}
		}
		return nil
	}},
}

// Register adds every index to the cache behind indexer; call it once, before the
// controllers and webhooks are set up.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	for _, i := range all {
		if err := indexer.IndexField(ctx, i.obj, i.field, i.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.field, err)
		}
	}
	return nil
}
