// Package crashpoint kills the process at a named step of a multi-step change, as kill -9
// would, so that tests can prove that each such change converges when the binary is
// restarted after a crash between its steps. It does nothing unless the binary was built
// with the build tag "crashpoints" (as the end-to-end stack builds them; release builds
// are not) and the environment variable GITOPS_CRASHPOINT names the point.
package crashpoint

// EnvVar names the point at which the process kills itself.
const EnvVar = "GITOPS_CRASHPOINT"

// The points.
const (
	// BackendAfterApplyCommit: a deployment's rows and Operation rows are committed, its
	// Operation CRs are not created yet.
	BackendAfterApplyCommit = "backend-after-apply-commit"
	// BackendAfterDeleteCommit: a deleted deployment's rows are gone and its deletion
	// Operation rows committed, the Operation CRs are not created yet.
	BackendAfterDeleteCommit = "backend-after-delete-commit"
	// AgentAfterHandler: the handler changed Argo CD, the operation's row does not say so yet.
	AgentAfterHandler = "cluster-agent-after-handler"
	// AgentAfterStateCommit: the operation's row is finished, its CR's status is not.
	AgentAfterStateCommit = "cluster-agent-after-state-commit"
)
