package operation

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

func TestReject(t *testing.T) {
	self := engine.Identity{ClusterID: "c1", InstanceID: "i1", Namespace: "argocd", NamespaceUID: "uid-now"}
	ours := &db.Operation{EngineInstanceID: "i1"}
	theirs := &db.Operation{EngineInstanceID: "i2"}
	tests := []struct {
		name        string
		crNamespace string
		op          *db.Operation
		owner       *db.EngineInstance
		want        string
	}{
		{name: "own operation", crNamespace: "argocd", op: ours, want: ""},
		{name: "CR in another namespace", crNamespace: "elsewhere", op: ours,
			want: `rejected: the Operation is in namespace "elsewhere", but this cluster-agent serves the engine instance in namespace "argocd"`},
		{name: "instance that no longer exists", crNamespace: "argocd", op: theirs,
			want: "rejected: operation belongs to another engine instance (i2), which no longer exists"},
		{name: "instance on another cluster", crNamespace: "argocd", op: theirs,
			owner: &db.EngineInstance{ID: "i2", EngineClusterID: "c2", NamespaceName: "argocd", NamespaceUID: "uid-now"},
			want:  `rejected: operation belongs to an engine instance on another engine cluster (namespace "argocd")`},
		{name: "earlier namespace of the same name", crNamespace: "argocd", op: theirs,
			owner: &db.EngineInstance{ID: "i2", EngineClusterID: "c1", NamespaceName: "argocd", NamespaceUID: "uid-before"},
			want:  `rejected: operation belongs to the engine instance of an earlier namespace "argocd" (namespace UID uid-before, now uid-now)`},
		{name: "another instance on this cluster", crNamespace: "argocd", op: theirs,
			owner: &db.EngineInstance{ID: "i2", EngineClusterID: "c1", NamespaceName: "argocd-2", NamespaceUID: "uid-2"},
			want:  `rejected: operation belongs to another engine instance (namespace "argocd-2")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Reject(self, tt.crNamespace, tt.op, tt.owner)).To(Equal(tt.want))
		})
	}
}
