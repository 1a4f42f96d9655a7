package db_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// The reconcile's read of a deployment's rows as the Store sends it (its parameters apart,
// prepared once per connection) and as bun sends a query by default (complete SQL text,
// which PostgreSQL parses and plans on every call): how much of PostgreSQL's CPU per
// statement is parsing and planning. Each reports server-µs/op, the CPU of the PostgreSQL
// process serving the benchmark's connection.

func BenchmarkGetAppliedApplication(b *testing.B) {
	benchAppliedRead(b, func(f *fixture, conn bun.Conn, tenant *db.Tenant, app *db.Application) (*db.AppliedApplication, error) {
		return f.store.GetAppliedApplication(f.ctx, conn, tenant.NamespaceUID, app.ID)
	})
}

func BenchmarkGetAppliedApplicationAsText(b *testing.B) {
	benchAppliedRead(b, func(f *fixture, conn bun.Conn, tenant *db.Tenant, app *db.Application) (*db.AppliedApplication, error) {
		got := new(db.AppliedApplication)
		return got, conn.NewSelect().Model(got).
			ColumnExpr("?TableColumns").
			ColumnExpr("EXISTS (SELECT 1 FROM operations AS op WHERE op.resource_type = ? AND op.resource_id = app.id AND op.state = ?) AS waiting",
				db.OperationResourceApplication, db.OperationWaiting).
			Relation("Tenant").
			Relation("Recorded").
			Where("app.id = ? AND tenant.namespace_uid = ?", app.ID, tenant.NamespaceUID).
			Scan(f.ctx)
	})
}

// benchAppliedRead runs read of a deployment's rows on one connection, checking what it
// returns, and reports the PostgreSQL process's CPU per call beside the time.
func benchAppliedRead(b *testing.B, read func(*fixture, bun.Conn, *db.Tenant, *db.Application) (*db.AppliedApplication, error)) {
	f, conn, tenant, app := appliedFixture(b)
	cpu := serverCPU(b, conn)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := read(f, conn, tenant, app)
		if err != nil || got.ID != app.ID || got.Tenant.ID != tenant.ID {
			b.Fatalf("got %+v, err %v", got, err)
		}
	}
	b.ReportMetric(cpu()*1e6/float64(b.N), "server-µs/op")
}

func appliedFixture(b *testing.B) (*fixture, bun.Conn, *db.Tenant, *db.Application) {
	f := newFixture(b)
	tenant := f.newTenant(b)
	app, _ := f.newApp(b, tenant.ID, "")
	conn, err := f.db.Conn(f.ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	return f, conn, tenant, app
}

// serverCPU returns the CPU seconds, since the call, of the PostgreSQL process serving conn
// (the server runs on this machine).
func serverCPU(b *testing.B, conn bun.Conn) func() float64 {
	var pid int
	if err := conn.QueryRowContext(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	read := func() float64 {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// The fields after the command name: utime and stime are the 12th and 13th.
		fields := strings.Fields(string(raw)[strings.LastIndex(string(raw), ")")+2:])
		utime, _ := strconv.Atoi(fields[11])
		stime, _ := strconv.Atoi(fields[12])
		return float64(utime+stime) / 100 // clock ticks (USER_HZ)
	}
	start := read()
	return func() float64 { return read() - start }
}

// BenchmarkDeploymentWrites: the statements that write a new deployment, on one connection
// as the service sends them: the backend's transaction (the application row, its mapping,
// the AppProject's repository, the Operation and its signal), then the cluster-agent's
// (the row once its tenant's lock is free, the operation's end, the application's state). server-µs/op is what
// PostgreSQL spends on them.
func BenchmarkDeploymentWrites(b *testing.B) {
	f := newFixture(b)
	tenant := f.newTenant(b)
	conn, err := f.db.Conn(f.ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	cpu := serverCPU(b, conn)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		uid := newUID()
		app := &db.Application{ID: uid, TenantID: tenant.ID, Name: db.ApplicationName(uid), EngineInstanceID: f.instance.ID,
			Spec: appSpec(tenant.ID, "main")}
		op := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication,
			ResourceID: uid, OwnerTenantID: tenant.ID, GCExpirationSeconds: 3600}
		err := conn.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if changed, err := f.store.UpsertApplication(ctx, tx, app); err != nil || !changed {
				return fmt.Errorf("upsert: changed=%v err=%w", changed, err)
			}
			if _, err := f.store.GetOrCreateDeploymentMapping(ctx, tx, &db.DeploymentMapping{DeploymentUID: uid, TenantID: tenant.ID,
				DeploymentName: "d-" + uid, DeploymentNamespace: tenant.NamespaceName, ApplicationID: app.ID}); err != nil {
				return err
			}
			if _, err := f.store.AddAppProjectRepository(ctx, tx, tenant.ID, "https://github.com/example/repo"); err != nil {
				return err
			}
			if err := f.store.CreateOperation(ctx, tx, op); err != nil {
				return err
			}
			_, err := f.store.RaiseSignal(ctx, tx, op)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		if located, err := f.store.LocateApplicationOnceTenantFree(f.ctx, conn, app.ID); err != nil || located.ID != app.ID {
			b.Fatalf("located=%v err=%v", located, err)
		}
		if ops, err := f.store.UpdateOperationStates(f.ctx, conn, f.instance.ID, []string{op.ID}, db.OperationCompleted, "done", "bench"); err != nil || len(ops) != 1 {
			b.Fatalf("ops=%d err=%v", len(ops), err)
		}
		st := &db.ApplicationState{ApplicationID: app.ID, EngineInstanceID: f.instance.ID, Health: db.HealthHealthy,
			SyncStatus: db.SyncStatusSynced, Revision: "abc"}
		if changed, err := f.store.RecordApplicationState(f.ctx, conn, st, "bench"); err != nil || !changed {
			b.Fatalf("changed=%v err=%v", changed, err)
		}
	}
	b.ReportMetric(cpu()*1e6/float64(b.N), "server-µs/op")
}
