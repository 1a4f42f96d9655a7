package v1alpha1

// Condition reasons the appstudio-controller writes on the AppStudio kinds it serves, in one
// place as the core API keeps its own (api/managedgitops).

// Reasons of the ErrorOccurred condition of every kind that has one.
const (
	ReasonErrorOccurred         = "ErrorOccurred"
	ReasonErrorOccurredResolved = "ErrorOccurredResolved"
)

// Reasons of a SnapshotEnvironmentBinding's ErrorOccurred condition (status.bindingConditions).
const (
	SnapshotEnvironmentBindingReasonWaitingForComponentStatus = "WaitingForComponentStatus"
	SnapshotEnvironmentBindingReasonDuplicateComponents       = "DuplicateComponents"
	SnapshotEnvironmentBindingReasonEnvironmentNotFound       = "EnvironmentNotFound"
	SnapshotEnvironmentBindingReasonEnvironmentNotReady       = "EnvironmentNotReady"
	SnapshotEnvironmentBindingReasonInvalidComponentStatus    = "InvalidComponentStatus"
	SnapshotEnvironmentBindingReasonNameConflict              = "GitOpsDeploymentNameConflict"
	// SnapshotEnvironmentBindingReasonInvalidComponentName: a component's GitOpsDeployment
	// name would not be a valid object name; that component is skipped, the others are
	// deployed.
	SnapshotEnvironmentBindingReasonInvalidComponentName = "InvalidComponentName"
	// SnapshotEnvironmentBindingReasonDuplicateBinding: an older binding in the namespace
	// binds the same application to the same environment; this one deploys nothing.
	SnapshotEnvironmentBindingReasonDuplicateBinding = "DuplicateBinding"
	// SnapshotEnvironmentBindingReasonGitOpsRepositoryNotReady: the Application Service
	// reports (status.gitopsRepoConditions) that the GitOps repository resources are not
	// generated; deployments are left as they are.
	SnapshotEnvironmentBindingReasonGitOpsRepositoryNotReady = "GitOpsRepositoryNotReady"
	// SnapshotEnvironmentBindingReasonMissingTargetNamespace: the Environment has cluster
	// credentials but no targetNamespace to deploy to.
	SnapshotEnvironmentBindingReasonMissingTargetNamespace = "MissingTargetNamespace"
	// SnapshotEnvironmentBindingReasonInvalidLabel: an appstudio.openshift.io label of the
	// binding cannot be copied onto its GitOpsDeployments; the other labels are copied and
	// the components deployed.
	SnapshotEnvironmentBindingReasonInvalidLabel = "InvalidLabel"
)

// Reasons of an Environment's ErrorOccurred condition (and of Ready, while it holds).
const (
	EnvironmentReasonInvalidEnvironment       = "InvalidEnvironment"
	EnvironmentReasonMissingCredentialsSecret = "MissingCredentialsSecret"
	EnvironmentReasonClaimNotFound            = "DeploymentTargetClaimNotFound"
	EnvironmentReasonClaimNotBound            = "DeploymentTargetClaimNotBound"
	EnvironmentReasonTargetNotFound           = "DeploymentTargetNotFound"
	EnvironmentReasonNameConflict             = "ManagedEnvironmentNameConflict"
)

// Reasons of an Environment's Ready condition when no error holds.
const (
	EnvironmentReasonOwnNamespace        = "DeploysToOwnNamespace"
	EnvironmentReasonClusterConnected    = "ClusterConnected"
	EnvironmentReasonConnectingCluster   = "ConnectingToCluster"
	EnvironmentReasonClusterNotConnected = "ClusterNotConnected"
)

// Reasons of a DeploymentTargetClaim's Provisioned condition, from the Developer Sandbox
// provisioner.
const (
	// DeploymentTargetClaimReasonWaitingForSpaceRequest (False): the SpaceRequest is
	// created, the sandbox has not reported it Ready yet.
	DeploymentTargetClaimReasonWaitingForSpaceRequest = "WaitingForSpaceRequest"
	// DeploymentTargetClaimReasonSpaceRequestFailed (False): the sandbox reports Ready=False
	// with a failure reason.
	DeploymentTargetClaimReasonSpaceRequestFailed = "SpaceRequestFailed"
	// DeploymentTargetClaimReasonInvalidSpaceRequestStatus (False): Ready=True, but without a
	// cluster URL or a namespace with a Secret.
	DeploymentTargetClaimReasonInvalidSpaceRequestStatus = "InvalidSpaceRequestStatus"
	// DeploymentTargetClaimReasonSpaceRequestConflict (False): a SpaceRequest of the
	// provisioner's name exists and was not made for this claim.
	DeploymentTargetClaimReasonSpaceRequestConflict = "SpaceRequestConflict"
	// DeploymentTargetClaimReasonProvisioned (True): the DeploymentTarget is created.
	DeploymentTargetClaimReasonProvisioned = "Provisioned"
	// DeploymentTargetClaimReasonProvisioningLimitReached (False): the claim's namespace
	// already has as many provisioned namespaces as the installation allows a tenant; the
	// claim is provisioned once one of them is released.
	DeploymentTargetClaimReasonProvisioningLimitReached = "ProvisioningLimitReached"
)

// Reasons of a PromotionRun's Ready condition when no error holds.
const (
	PromotionRunReasonPromoting      = "Promoting"
	PromotionRunReasonWaitingToStart = "WaitingToStart"
	PromotionRunReasonSucceeded      = "PromotionSucceeded"
	PromotionRunReasonFailed         = "PromotionFailed"
)
