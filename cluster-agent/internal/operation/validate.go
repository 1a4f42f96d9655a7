package operation

import (
	"fmt"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// Reject says why an operation must not be carried out by the agent of self, or returns ""
// when it may. crNamespace is the namespace of the Operation CR that named the operation;
// owner is the engine instance row the operation belongs to, looked up only when it is not
// self's (nil when that row does not exist).
func Reject(self engine.Identity, crNamespace string, op *db.Operation, owner *db.EngineInstance) string {
	if crNamespace != self.Namespace {
		return fmt.Sprintf("rejected: the Operation is in namespace %q, but this cluster-agent serves the engine instance in namespace %q",
			crNamespace, self.Namespace)
	}
	if op.EngineInstanceID == self.InstanceID {
		return ""
	}
	switch {
	case owner == nil:
		return fmt.Sprintf("rejected: operation belongs to another engine instance (%s), which no longer exists", op.EngineInstanceID)
	case owner.EngineClusterID != self.ClusterID:
		return fmt.Sprintf("rejected: operation belongs to an engine instance on another engine cluster (namespace %q)", owner.NamespaceName)
	case owner.NamespaceName == self.Namespace && owner.NamespaceUID != self.NamespaceUID:
		return fmt.Sprintf("rejected: operation belongs to the engine instance of an earlier namespace %q (namespace UID %s, now %s)",
			owner.NamespaceName, owner.NamespaceUID, self.NamespaceUID)
	default:
		return fmt.Sprintf("rejected: operation belongs to another engine instance (namespace %q)", owner.NamespaceName)
	}
}
