// Package agenttest is what the cluster-agent's package tests share: engine instances
// registered as the agent registers its own, on a real API server and database.
package agenttest

import (
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// ClusterName is the engine cluster the instances are registered on.
const ClusterName = "default"

// Instance registers the engine instance of a new namespace of cp.
func Instance(t testing.TB, cp *testenv.ControlPlane, idb bun.IDB, store *db.Store) engine.Identity {
	t.Helper()
	return InstanceIn(t, cp, idb, store, cp.NewNamespace(t, "argocd-"))
}

// InstanceIn registers the engine instance of namespace ns with engine.Register, as the
// agent does when it starts.
func InstanceIn(t testing.TB, cp *testenv.ControlPlane, idb bun.IDB, store *db.Store, ns string) engine.Identity {
	t.Helper()
	id, err := engine.Register(t.Context(), cp.Client, idb, store, engine.Options{Namespace: ns, ClusterName: ClusterName})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Tenant creates a tenant of a new namespace and places it on engine instance instanceID
// ("" leaves it unplaced), as the backend does.
func Tenant(t testing.TB, idb bun.IDB, store *db.Store, instanceID string) *db.Tenant {
	t.Helper()
	tenant, err := store.GetOrCreateTenant(t.Context(), idb, uuid.NewString(), "tenant-"+uuid.NewString()[:8])
	if err != nil {
		t.Fatal(err)
	}
	if instanceID != "" {
		if err := store.SetTenantEngineInstance(t.Context(), idb, tenant.ID, instanceID); err != nil {
			t.Fatal(err)
		}
		tenant.EngineInstanceID = instanceID
	}
	return tenant
}
