package schema_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/schema"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// withExtra is the binary's migrations and one more, as a later release would add it.
func withExtra(t *testing.T, up, down string, compatibleFrom uint) []schema.Migration {
	t.Helper()
	migrations, err := db.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	extra := schema.Migration{Version: schema.Latest(migrations) + 1, Name: "extra", Up: up, Down: down, CompatibleFrom: compatibleFrom}
	return append(append([]schema.Migration{}, migrations...), extra)
}

func connect(t *testing.T, cfg db.Config) *pgx.Conn {
	t.Helper()
	conn, err := db.Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func state(t *testing.T, cfg db.Config) schema.State {
	t.Helper()
	s, err := db.SchemaState(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tableExists(t *testing.T, conn *pgx.Conn, name string) bool {
	t.Helper()
	var found *string
	if err := conn.QueryRow(context.Background(), `SELECT to_regclass($1)::text`, name).Scan(&found); err != nil {
		t.Fatal(err)
	}
	return found != nil
}

// TestKilledMigrationLeavesThePreviousVersionClean: a migration whose connection dies
// half-way (a killed pod, a failover) leaves nothing behind: the schema stays at the
// version before it, not dirty, and the next start applies it.
func TestKilledMigrationLeavesThePreviousVersionClean(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	cfg := dbtest.NewConfig(t) // migrated to the binary's latest
	before := state(t, cfg)
	admin := connect(t, cfg)
	_, err := admin.Exec(ctx, `CREATE TABLE slow_marker ()`)
	g.Expect(err).NotTo(HaveOccurred())
	// Creates a table, then, while slow_marker exists, sleeps until it is killed.
	migrations := withExtra(t, `CREATE TABLE extra_table (id int);
DO $$ BEGIN IF to_regclass('slow_marker') IS NOT NULL THEN PERFORM pg_sleep(60); END IF; END $$;`, `DROP TABLE extra_table;`, 0)
	m := &schema.Migrator{Migrations: migrations, Log: testr.New(t)}

	migrating := connect(t, cfg)
	var pid int
	g.Expect(migrating.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid)).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- m.Up(ctx, migrating) }()
	g.Eventually(func() (int, error) {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep(60)%'`, pid).Scan(&n)
		return n, err
	}).WithTimeout(20 * time.Second).Should(Equal(1))
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(<-done).To(HaveOccurred())

	g.Expect(state(t, cfg)).To(Equal(before), "the version before the killed migration, clean")
	g.Expect(tableExists(t, admin, "extra_table")).To(BeFalse(), "nothing of the killed migration is left")

	_, err = admin.Exec(ctx, `DROP TABLE slow_marker`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Up(ctx, connect(t, cfg))).To(Succeed())
	g.Expect(state(t, cfg)).To(Equal(schema.State{Version: schema.Latest(migrations)}))
	g.Expect(tableExists(t, admin, "extra_table")).To(BeTrue())
}

// TestDeadlockedMigrationIsTriedAgain: a migration that PostgreSQL cancels to break a
// deadlock with the service's own statements is rolled back whole and tried again.
func TestDeadlockedMigrationIsTriedAgain(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	cfg := dbtest.NewConfig(t)
	// Takes engine_instances, then (after the service's transaction below holds tenants
	// and waits for engine_instances) tenants: a deadlock, which PostgreSQL breaks by
	// cancelling the migration, the last to wait.
	migrations := withExtra(t, `LOCK TABLE engine_instances IN SHARE ROW EXCLUSIVE MODE;
SELECT pg_sleep(2);
LOCK TABLE tenants IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE extra_table (id int);`, `DROP TABLE extra_table;`, 0)
	m := &schema.Migrator{Migrations: migrations, Log: testr.New(t), Backoff: 100 * time.Millisecond}

	service := connect(t, cfg)
	tx, err := service.Begin(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = tx.Exec(ctx, `LOCK TABLE tenants IN ROW EXCLUSIVE MODE`)
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- m.Up(ctx, connect(t, cfg)) }()
	time.Sleep(500 * time.Millisecond) // the migration holds engine_instances and sleeps
	_, err = tx.Exec(ctx, `INSERT INTO engine_instances (engine_cluster_id, namespace_name, namespace_uid)
		SELECT id, 'argocd-deadlock', 'uid-deadlock' FROM engine_clusters LIMIT 0`)
	g.Expect(err).NotTo(HaveOccurred(), "the service's statement is not the one cancelled")
	g.Expect(tx.Commit(ctx)).To(Succeed())

	g.Expect(<-done).To(Succeed())
	g.Expect(state(t, cfg)).To(Equal(schema.State{Version: schema.Latest(migrations)}))
	g.Expect(tableExists(t, service, "extra_table")).To(BeTrue())
}

// TestIncompatibleSchemaIsRefused: after a migration that removes what older binaries use
// (compatible-from), a binary built before it refuses to start and says which it needs; a
// migration that only adds lets it run.
func TestIncompatibleSchemaIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	built, err := db.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		compatibleFrom uint
		refused        bool
	}{
		{name: "a migration that only adds", compatibleFrom: 0},
		{name: "a migration that older binaries survive", compatibleFrom: built},
		{name: "a migration that breaks older binaries", compatibleFrom: built + 1, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			cfg := dbtest.NewConfig(t)
			m := &schema.Migrator{Migrations: withExtra(t, `CREATE TABLE extra_table ();`, `DROP TABLE extra_table;`, tc.compatibleFrom), Log: testr.New(t)}
			g.Expect(m.Up(ctx, connect(t, cfg))).To(Succeed())
			g.Expect(state(t, cfg)).To(Equal(schema.State{Version: built + 1, CompatibleFrom: tc.compatibleFrom}))

			waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			err := db.WaitForSchema(waitCtx, cfg, nil)
			if !tc.refused {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(db.Migrate(ctx, cfg)).To(Succeed(), "an older migrator leaves a newer schema as it is")
				return
			}
			g.Expect(errors.Is(err, schema.ErrIncompatible)).To(BeTrue(), "%v", err)
			g.Expect(err).To(MatchError(ContainSubstring("built for schema version %d or later", built+1)))
		})
	}
}

// TestWaitCreatesNothing: a binary waiting for the schema of an empty database reads it
// only, and goes on once the backend has migrated it.
func TestWaitCreatesNothing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	cfg := dbtest.NewEmptyConfig(t)
	reasons := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- db.WaitForSchema(ctx, cfg, func(reason string) {
			select {
			case reasons <- reason:
			default:
			}
		})
	}()
	g.Eventually(reasons).WithTimeout(10 * time.Second).Should(Receive(ContainSubstring("waiting for the backend to migrate it")))
	g.Expect(tableExists(t, connect(t, cfg), "schema_migrations")).To(BeFalse())
	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive())

	g.Expect(db.Migrate(ctx, cfg)).To(Succeed())
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

// TestDirtyMarkNeedsForce: a dirty mark (as golang-migrate left one) stops the migrator and
// the waiters with a message naming the way out; force clears it.
func TestDirtyMarkNeedsForce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	cfg := dbtest.NewConfig(t)
	latest, err := db.LatestSchemaVersion()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = connect(t, cfg).Exec(ctx, `UPDATE schema_migrations SET dirty = true`)
	g.Expect(err).NotTo(HaveOccurred())

	err = db.Migrate(ctx, cfg)
	g.Expect(errors.Is(err, schema.ErrDirty)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("backend migrate force")))

	g.Expect(db.ForceSchemaVersion(ctx, cfg, latest)).To(Succeed())
	g.Expect(state(t, cfg)).To(Equal(schema.State{Version: latest}))
	g.Expect(db.Migrate(ctx, cfg)).To(Succeed())
	g.Expect(db.ForceSchemaVersion(ctx, cfg, latest+1)).To(MatchError(ContainSubstring("no migration of version")))
}
