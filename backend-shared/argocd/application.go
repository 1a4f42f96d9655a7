// Package argocd builds the Argo CD objects the service manages (Applications, AppProjects,
// cluster and repository Secrets) as typed structs, and names them. The backend uses it to
// compute the desired state it stores; the cluster-agent to apply that state.
package argocd

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// Names and labels of the objects the service creates in an Argo CD namespace.
const (
	// InClusterServer is Argo CD's address of the cluster it runs on.
	InClusterServer = "https://kubernetes.default.svc"

	// LabelManagedBy marks every object the service creates, so that sweeps never touch others.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the LabelManagedBy value of the service's objects.
	ManagedByValue = "gitops-service"
	// LabelApplicationID holds the database id of an Application's row.
	LabelApplicationID = "managed-gitops.redhat.com/application-id"
	// LabelTenantID holds the database id of the tenant an object belongs to.
	LabelTenantID = "managed-gitops.redhat.com/tenant-id"

	// FieldManager is the server-side apply field owner of the service's objects.
	FieldManager = "gitops-service"
	// AnnotationRefreshHandled on an Application is the last refresh request (see
	// db.Application.Refresh) the cluster-agent passed on to Argo CD.
	AnnotationRefreshHandled = "managed-gitops.redhat.com/refresh"
	// InfoSyncOperationID names the `operation.info` item that carries the id of the sync
	// operation (the SyncRun's UID) a sync the cluster-agent starts is for, so that its result
	// (in `status.operationState`, and the GitOpsDeployment's copy) is told from any other's.
	InfoSyncOperationID = "gitops-service-sync-operation-id"
)

// Sync behaviour every Application gets: background pruning (foreground deletion needs
// the garbage collector to finish before Argo CD does), and retries without limit with
// exponential backoff, as the original service configured them.
const (
	SyncOptionPrunePropagationBackground = "PrunePropagationPolicy=background"
	retryBackoffDuration                 = "5s"
	retryBackoffFactor                   = int64(2)
	retryBackoffMaxDuration              = "3m"
)

// MessageResourcesMayRemain ends the state of an Application deletion whose Argo CD
// finalizer had to be removed before Argo CD pruned everything; the resources it still
// listed follow it. The backend shows it to the user.
const MessageResourcesMayRemain = "resources it deployed may remain"

// ApplicationName is the Argo CD Application name of a GitOpsDeployment.
func ApplicationName(gitopsDeploymentUID types.UID) string {
	return "gitopsdepl-" + string(gitopsDeploymentUID)
}

// AppProjectName is the name of the tenant's AppProject for the cluster Argo CD runs on.
func AppProjectName(tenantID string) string { return "app-project-" + tenantID }

// RemoteAppProjectName is the name of the tenant's AppProject for its managed environments.
func RemoteAppProjectName(tenantID string) string { return AppProjectName(tenantID) + "-remote" }

// ProjectName is the AppProject of a tenant's Application with this destination.
func ProjectName(tenantID string, d Destination) string {
	if d.ManagedEnvironmentID != "" {
		return RemoteAppProjectName(tenantID)
	}
	return AppProjectName(tenantID)
}

// ClusterSecretName is the Argo CD cluster Secret of a managed environment.
func ClusterSecretName(managedEnvironmentID string) string {
	return "managed-env-" + managedEnvironmentID
}

// RepositorySecretName is the Argo CD repository Secret of a repository credential for the
// tenant's in-cluster AppProject.
func RepositorySecretName(repositoryCredentialID string) string {
	return "repo-cred-" + repositoryCredentialID
}

// RemoteRepositorySecretName is the repository Secret of a repository credential for the
// tenant's managed-environment AppProject.
func RemoteRepositorySecretName(repositoryCredentialID string) string {
	return RepositorySecretName(repositoryCredentialID) + "-remote"
}

// ClusterServerURL is the `server` of a managed environment's cluster Secret: the query
// parameter keeps two environments on one cluster with different credentials apart, since
// Argo CD identifies clusters by this URL.
func ClusterServerURL(apiURL, managedEnvironmentID string) string {
	return apiURL + "?managedEnvironment=" + managedEnvironmentID
}

// Destination says where an Application deploys to.
type Destination struct {
	// ManagedEnvironmentID is the managed environment's row id; empty means the cluster
	// Argo CD runs on.
	ManagedEnvironmentID string `json:"managedEnvironmentID,omitempty"`
	// Namespace is the target namespace.
	Namespace string `json:"namespace"`
}

// ApplicationInput is everything the desired Application depends on, already resolved
// from the GitOpsDeployment and the rows it references.
type ApplicationInput struct {
	RepoURL        string
	Path           string
	TargetRevision string
	Destination    Destination
	Project        string
	Automated      bool
	// SyncOptions are the user's options (e.g. CreateNamespace=true), validated upstream.
	SyncOptions []string
}

// ApplicationSpec is the desired Argo CD Application spec for in.
func ApplicationSpec(in ApplicationInput) argov1alpha1.ApplicationSpec {
	spec := argov1alpha1.ApplicationSpec{
		Source: &argov1alpha1.ApplicationSource{
			RepoURL:        in.RepoURL,
			Path:           in.Path,
			TargetRevision: in.TargetRevision,
		},
		Destination: argov1alpha1.ApplicationDestination{Namespace: in.Destination.Namespace},
		Project:     in.Project,
		SyncPolicy: &argov1alpha1.SyncPolicy{
			SyncOptions: syncOptions(in.SyncOptions),
			Retry:       retryStrategy(),
		},
	}
	if in.Destination.ManagedEnvironmentID == "" {
		spec.Destination.Server = InClusterServer
	} else {
		spec.Destination.Name = ClusterSecretName(in.Destination.ManagedEnvironmentID)
	}
	if in.Automated {
		spec.SyncPolicy.Automated = &argov1alpha1.SyncPolicyAutomated{Prune: true, SelfHeal: true, AllowEmpty: true}
	}
	return spec
}

// syncOptions puts the service's own option first, then the user's, sorted and deduplicated
// so that equal inputs give equal specs.
func syncOptions(user []string) argov1alpha1.SyncOptions {
	opts := slices.Clone(user)
	slices.Sort(opts)
	opts = slices.Compact(opts)
	opts = slices.DeleteFunc(opts, func(o string) bool { return o == SyncOptionPrunePropagationBackground })
	return append(argov1alpha1.SyncOptions{SyncOptionPrunePropagationBackground}, opts...)
}

func retryStrategy() *argov1alpha1.RetryStrategy {
	factor := retryBackoffFactor
	return &argov1alpha1.RetryStrategy{
		Limit: -1,
		Backoff: &argov1alpha1.Backoff{
			Duration:    retryBackoffDuration,
			Factor:      &factor,
			MaxDuration: retryBackoffMaxDuration,
		},
	}
}

// Application is the full object the cluster-agent applies for an Application row.
func Application(namespace, name, applicationID, tenantID string, spec argov1alpha1.ApplicationSpec) *argov1alpha1.Application {
	return &argov1alpha1.Application{
		TypeMeta: metav1.TypeMeta{APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "Application"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels: map[string]string{
				LabelManagedBy:     ManagedByValue,
				LabelApplicationID: applicationID,
				LabelTenantID:      tenantID,
			},
			// Deleting the Application prunes what it deployed, in the background.
			Finalizers: []string{argov1alpha1.BackgroundPropagationPolicyFinalizer},
		},
		Spec: spec,
	}
}

// SyncOperationID is the id of the sync operation (the SyncRun's UID) an Argo CD
// operation was started for, "" for one the cluster-agent did not start for a SyncRun.
func SyncOperationID(op *argov1alpha1.Operation) string {
	if op == nil {
		return ""
	}
	for _, info := range op.Info {
		if info != nil && info.Name == InfoSyncOperationID {
			return info.Value
		}
	}
	return ""
}

// SyncOperation is the `operation` a manual sync patches into an Application: a sync to
// revision with the spec's sync options and retry strategy. It does not prune, as the
// original service's manual sync and `argocd app sync` without --prune do not: a resource
// removed from Git stays, and the deployment shows it OutOfSync, until it is deleted by hand
// or the deployment becomes automated.
func SyncOperation(spec argov1alpha1.ApplicationSpec, revision, initiator string) *argov1alpha1.Operation {
	op := &argov1alpha1.Operation{
		InitiatedBy: argov1alpha1.OperationInitiator{Username: initiator},
		Sync:        &argov1alpha1.SyncOperation{Revision: revision},
	}
	if spec.SyncPolicy != nil {
		op.Sync.SyncOptions = slices.Clone(spec.SyncPolicy.SyncOptions)
		if spec.SyncPolicy.Retry != nil {
			op.Retry = *spec.SyncPolicy.Retry.DeepCopy()
		}
	}
	if op.Sync.Revision == "" && spec.Source != nil {
		op.Sync.Revision = spec.Source.TargetRevision
	}
	return op
}

// ValidateSyncOption reports whether the service accepts a user's sync option.
func ValidateSyncOption(option string) error {
	switch option {
	case "CreateNamespace=true", "CreateNamespace=false":
		return nil
	}
	return fmt.Errorf("unsupported sync option %q: supported are CreateNamespace=true and CreateNamespace=false", option)
}
