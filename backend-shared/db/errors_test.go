package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// TestConstraintViolationsAreTyped: each kind of violation surfaces as its sentinel
// (errors.Is) and as a *db.ConstraintError naming the constraint (errors.As), with the
// driver error underneath.
func TestConstraintViolationsAreTyped(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	app, _ := f.newApp(t, tenant.ID, "")

	cases := []struct {
		name       string
		run        func() error
		kind       error
		constraint string
	}{{
		name: "duplicate engine instance namespace",
		run: func() error {
			return f.store.CreateEngineInstance(f.ctx, f.db, &db.EngineInstance{EngineClusterID: f.cluster.ID,
				NamespaceName: "argocd", NamespaceUID: f.instance.NamespaceUID})
		},
		kind: db.ErrConflict, constraint: "engine_instances_namespace_uid_key",
	}, {
		name: "unknown engine instance state",
		run: func() error {
			return f.store.CreateEngineInstance(f.ctx, f.db, &db.EngineInstance{EngineClusterID: f.cluster.ID,
				NamespaceName: "argocd", NamespaceUID: newUID(), State: "Sleeping"})
		},
		kind: db.ErrCheck, constraint: "engine_instances_state_check",
	}, {
		name: "unknown operation resource type",
		run: func() error {
			return f.store.CreateOperation(f.ctx, f.db, &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: "Pod", ResourceID: newUID()})
		},
		kind: db.ErrCheck, constraint: "operations_resource_type_check",
	}, {
		name: "unknown operation state",
		run: func() error {
			return f.store.CreateOperation(f.ctx, f.db, &db.Operation{EngineInstanceID: f.instance.ID,
				ResourceType: db.OperationResourceApplication, ResourceID: newUID(), State: "Stuck"})
		},
		kind: db.ErrCheck, constraint: "operations_state_check",
	}, {
		name: "unknown sync desired state",
		run: func() error {
			return f.store.CreateSyncOperation(f.ctx, f.db, &db.SyncOperation{TenantID: tenant.ID, DeploymentName: "d", DesiredState: "Paused"})
		},
		kind: db.ErrCheck, constraint: "sync_operations_desired_state_check",
	}, {
		name: "invalid application name",
		run: func() error {
			_, err := f.store.UpsertApplication(f.ctx, f.db, &db.Application{TenantID: tenant.ID, Name: "Not_A_Name",
				EngineInstanceID: f.instance.ID, Spec: appSpec(tenant.ID, "main")})
			return err
		},
		kind: db.ErrCheck, constraint: "applications_name_check",
	}, {
		name: "operation for a missing engine instance",
		run: func() error {
			return f.store.CreateOperation(f.ctx, f.db, &db.Operation{EngineInstanceID: newUID(),
				ResourceType: db.OperationResourceApplication, ResourceID: newUID()})
		},
		kind: db.ErrInvalidReference, constraint: "operations_engine_instance_id_fkey",
	}, {
		name: "managed environment of a missing tenant",
		run: func() error {
			return f.store.CreateManagedEnvironment(f.ctx, f.db, &db.ManagedEnvironment{TenantID: newUID(), Name: "e"},
				&db.ClusterCredentials{Host: "h", BearerToken: "t"})
		},
		kind: db.ErrInvalidReference, constraint: "managed_environments_tenant_id_fkey",
	}, {
		name: "deleting an engine instance with applications",
		run:  func() error { return f.store.DeleteEngineInstance(f.ctx, f.db, app.EngineInstanceID) },
		kind: db.ErrReferenced, constraint: "applications_engine_instance_id_fkey",
	}, {
		name: "deleting an engine cluster with instances",
		run:  func() error { return f.store.DeleteEngineCluster(f.ctx, f.db, f.cluster.ID) },
		kind: db.ErrReferenced, constraint: "engine_instances_engine_cluster_id_fkey",
	}}
	for _, tc := range cases {
		err := tc.run()
		g.Expect(err).To(MatchError(tc.kind), tc.name)
		var ce *db.ConstraintError
		g.Expect(errors.As(err, &ce)).To(BeTrue(), tc.name)
		g.Expect(ce.Constraint).To(Equal(tc.constraint), tc.name)
		var pgErr *pgconn.PgError
		g.Expect(errors.As(err, &pgErr)).To(BeTrue(), tc.name)
		for _, other := range []error{db.ErrConflict, db.ErrCheck, db.ErrInvalidReference, db.ErrReferenced, db.ErrNotFound} {
			if !errors.Is(other, tc.kind) {
				g.Expect(errors.Is(err, other)).To(BeFalse(), tc.name)
			}
		}
	}

	_, err := f.store.GetTenant(f.ctx, f.db, "not-a-uuid")
	g.Expect(err).To(MatchError(db.ErrInvalid))
	_, err = f.store.GetTenant(f.ctx, f.db, newUID())
	g.Expect(err).To(MatchError(db.ErrNotFound))
}

// TestRepositoryComposesInTransactions: calls on one transaction commit or roll back
// together.
func TestRepositoryComposesInTransactions(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	boom := errors.New("boom")

	err := f.db.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		app := &db.Application{TenantID: tenant.ID, Name: db.ApplicationName(newUID()), EngineInstanceID: f.instance.ID, Spec: appSpec(tenant.ID, "main")}
		if _, err := f.store.UpsertApplication(ctx, tx, app); err != nil {
			return err
		}
		if err := f.store.CreateOperation(ctx, tx, &db.Operation{EngineInstanceID: f.instance.ID,
			ResourceType: db.OperationResourceApplication, ResourceID: app.ID, OwnerTenantID: tenant.ID}); err != nil {
			return err
		}
		return boom
	})
	g.Expect(err).To(MatchError(boom))
	g.Expect(f.count(t, "applications")).To(BeZero())
	g.Expect(f.count(t, "operations")).To(BeZero())

	// CreateManagedEnvironment's own savepoint nests inside the caller's transaction.
	err = f.db.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		env := &db.ManagedEnvironment{TenantID: tenant.ID, Name: "e"}
		return f.store.CreateManagedEnvironment(ctx, tx, env, &db.ClusterCredentials{Host: "h", BearerToken: "t"})
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.count(t, "managed_environments")).To(Equal(1))
}

// TestConcurrentGetOrCreate: 20 goroutines getting-or-creating the same rows at once get
// one row each, and all the same one.
func TestConcurrentGetOrCreate(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	const n = 20
	nsUID := newUID()
	k8sUID := newUID()
	tenantIDs := make([]string, n)
	clusterIDs := make([]string, n)
	instanceIDs := make([]string, n)
	errs := make([]error, 0, 3*n)
	var mu sync.Mutex
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			tenant, err1 := f.store.GetOrCreateTenant(f.ctx, f.db, nsUID, "team")
			cluster, err2 := f.store.GetOrCreateEngineCluster(f.ctx, f.db, "shared", "")
			ei, err3 := f.store.GetOrCreateEngineInstance(f.ctx, f.db, &db.EngineInstance{EngineClusterID: f.cluster.ID,
				NamespaceName: "argocd", NamespaceUID: k8sUID})
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err1, err2, err3)
			if err1 == nil {
				tenantIDs[i] = tenant.ID
			}
			if err2 == nil {
				clusterIDs[i] = cluster.ID
			}
			if err3 == nil {
				instanceIDs[i] = ei.ID
			}
		}()
	}
	start.Done()
	done.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	for _, ids := range [][]string{tenantIDs, clusterIDs, instanceIDs} {
		g.Expect(ids[0]).NotTo(BeEmpty())
		for _, id := range ids {
			g.Expect(id).To(Equal(ids[0]))
		}
	}
	g.Expect(f.count(t, "tenants")).To(Equal(1))
	g.Expect(f.count(t, "engine_clusters")).To(Equal(2)) // the fixture's and "shared"
	g.Expect(f.count(t, "engine_instances")).To(Equal(2))
}
