package db_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
)

func schemaDump(t *testing.T, cfg db.Config) string {
	t.Helper()
	out, err := dbtest.PgDump(context.Background(), dbtest.DatabaseName(t, cfg), "--schema-only", "--no-owner", "--no-privileges")
	if err != nil {
		t.Fatal(err)
	}
	// pg_dump >= 15.14 brackets its output with \restrict <random key> lines.
	var kept []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, `\restrict `) && !strings.HasPrefix(line, `\unrestrict `) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

// TestMigrationsUpDownUp: every down migration exactly undoes its up migration, so up ->
// down -> up yields an identical schema (pg_dump --schema-only), step by step and whole.
func TestMigrationsUpDownUp(t *testing.T) {
	t.Parallel()
	g := g(t)
	ctx := context.Background()
	cfg := dbtest.NewEmptyConfig(t)
	latest, err := db.LatestSchemaVersion()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(latest).To(BeNumerically(">=", 2))

	v, dirty, err := db.SchemaVersion(ctx, cfg) // reads only: no version table yet
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(db.MigrateTo(ctx, cfg, 0)).To(Succeed()) // creates the version table
	g.Expect(v).To(BeZero())
	g.Expect(dirty).To(BeFalse())
	dumps := map[uint]string{0: schemaDump(t, cfg)}
	for v := uint(1); v <= latest; v++ {
		g.Expect(db.MigrateTo(ctx, cfg, v)).To(Succeed())
		dumps[v] = schemaDump(t, cfg)
		g.Expect(dumps[v]).NotTo(Equal(dumps[v-1]), "migration %d changes the schema", v)
	}
	for v := int(latest) - 1; v >= 0; v-- {
		g.Expect(db.MigrateDown(ctx, cfg, 1)).To(Succeed())
		g.Expect(schemaDump(t, cfg)).To(Equal(dumps[uint(v)]), "down to version %d", v)
	}
	g.Expect(db.Migrate(ctx, cfg)).To(Succeed())
	g.Expect(schemaDump(t, cfg)).To(Equal(dumps[latest]))
	v, dirty, err = db.SchemaVersion(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(Equal(latest))
	g.Expect(dirty).To(BeFalse())

	// Whole down, whole up.
	g.Expect(db.MigrateDown(ctx, cfg, int(latest))).To(Succeed())
	g.Expect(schemaDump(t, cfg)).To(Equal(dumps[0]))
	g.Expect(db.Migrate(ctx, cfg)).To(Succeed())
	g.Expect(schemaDump(t, cfg)).To(Equal(dumps[latest]))
	// Applied at once (the template) or step by step: the same schema.
	g.Expect(schemaDump(t, dbtest.Config(dbtest.TemplateDatabase))).To(Equal(dumps[latest]))
	// Applying again is a no-op.
	g.Expect(db.Migrate(ctx, cfg)).To(Succeed())
	g.Expect(db.MigrateDown(ctx, cfg, 0)).To(HaveOccurred())
}

// TestConcurrentMigrate: replicas migrating at once serialise on the advisory lock.
func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	g := g(t)
	ctx := context.Background()
	cfg := dbtest.NewEmptyConfig(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Migrate(ctx, cfg)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	latest, err := db.LatestSchemaVersion()
	g.Expect(err).NotTo(HaveOccurred())
	v, dirty, err := db.SchemaVersion(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(Equal(latest))
	g.Expect(dirty).To(BeFalse())
}

// migrationFixtures holds rows written in the SQL of each schema version; the rows of
// version N must come through migration N+1 (and every later one) unchanged. A new
// migration adds a fixture for its tables.
var migrationFixtures = map[uint]string{
	1: `
INSERT INTO cluster_credentials (id, host, bearer_token_enc, namespaces)
    VALUES ('00000000-0000-0000-0000-0000000000c1', 'https://env:6443', 'v1:k1:AAAA', '{a,b}'),
           ('00000000-0000-0000-0000-0000000000c2', 'https://engine:6443', 'v1:k1:BBBB', '{}');
INSERT INTO engine_clusters (id, name, cluster_credentials_id)
    VALUES ('00000000-0000-0000-0000-0000000000e1', 'remote', '00000000-0000-0000-0000-0000000000c2');
INSERT INTO engine_instances (id, engine_cluster_id, namespace_name, namespace_uid)
    VALUES ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000e1', 'argocd', 'ns-uid-argocd');
INSERT INTO tenants (id, namespace_uid, namespace_name, engine_instance_id)
    VALUES ('00000000-0000-0000-0000-0000000000f1', 'ns-uid-team', 'team', '00000000-0000-0000-0000-0000000000a1');
INSERT INTO managed_environments (id, tenant_id, name, cluster_credentials_id)
    VALUES ('00000000-0000-0000-0000-0000000000d1', '00000000-0000-0000-0000-0000000000f1', 'prod', '00000000-0000-0000-0000-0000000000c1');
INSERT INTO cluster_access (tenant_id, managed_environment_id, engine_instance_id)
    VALUES ('00000000-0000-0000-0000-0000000000f1', '00000000-0000-0000-0000-0000000000d1', '00000000-0000-0000-0000-0000000000a1');
INSERT INTO kubernetes_resource_mappings (kubernetes_resource_type, kubernetes_resource_uid, engine_cluster_id)
    VALUES ('Namespace', 'kube-system-uid', '00000000-0000-0000-0000-0000000000e1');
`,
	2: `
INSERT INTO applications (id, tenant_id, name, engine_instance_id, managed_environment_id, spec)
    VALUES ('00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000f1', 'gitopsdepl-uid1',
            '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000d1', '{"project": "p"}');
INSERT INTO application_states (application_id, health_status, sync_status, resources)
    VALUES ('00000000-0000-0000-0000-0000000000b1', 'Healthy', 'Synced', '[{"kind": "Deployment"}]');
INSERT INTO deployment_application_mappings (deployment_uid, tenant_id, deployment_name, deployment_namespace, application_id)
    VALUES ('uid1', '00000000-0000-0000-0000-0000000000f1', 'web', 'team', '00000000-0000-0000-0000-0000000000b1');
INSERT INTO sync_operations (id, tenant_id, application_id, deployment_name, revision)
    VALUES ('00000000-0000-0000-0000-000000000051', '00000000-0000-0000-0000-0000000000f1',
            '00000000-0000-0000-0000-0000000000b1', 'web', 'main');
`,
	3: `
INSERT INTO repository_credentials (id, tenant_id, engine_instance_id, repository_url, password_enc)
    VALUES ('00000000-0000-0000-0000-000000000061', '00000000-0000-0000-0000-0000000000f1',
            '00000000-0000-0000-0000-0000000000a1', 'https://git', 'v1:k1:CCCC');
INSERT INTO appproject_repositories (tenant_id, repository_url) VALUES ('00000000-0000-0000-0000-0000000000f1', 'https://git');
INSERT INTO appproject_destinations (tenant_id, managed_environment_id)
    VALUES ('00000000-0000-0000-0000-0000000000f1', '00000000-0000-0000-0000-0000000000d1');
INSERT INTO api_cr_mappings (api_resource_type, api_resource_uid, api_resource_name, api_resource_namespace, tenant_id, repository_credential_id)
    VALUES ('GitOpsDeploymentRepositoryCredential', 'cr-uid', 'creds', 'team', '00000000-0000-0000-0000-0000000000f1',
            '00000000-0000-0000-0000-000000000061');
INSERT INTO operations (engine_instance_id, resource_type, resource_id, owner_tenant_id)
    VALUES ('00000000-0000-0000-0000-0000000000a1', 'Application', '00000000-0000-0000-0000-0000000000b1',
            '00000000-0000-0000-0000-0000000000f1');
`,
	4: `
INSERT INTO engine_instances (id, engine_cluster_id, namespace_name, namespace_uid)
    VALUES ('00000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-0000000000e1', 'argocd-2', 'ns-uid-argocd-2');
INSERT INTO applications (id, tenant_id, name, engine_instance_id, moving_from_engine_instance_id, spec)
    VALUES ('00000000-0000-0000-0000-0000000000b2', '00000000-0000-0000-0000-0000000000f1', 'gitopsdepl-uid2',
            '00000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-0000000000a1', '{"project": "p"}');
INSERT INTO application_states (application_id, engine_instance_id, health_status, sync_status)
    VALUES ('00000000-0000-0000-0000-0000000000b2', '00000000-0000-0000-0000-0000000000a2', 'Healthy', 'Synced');
`,
	// Only a trigger: writing the table it watches must still work.
	5: `
INSERT INTO engine_instances (id, engine_cluster_id, namespace_name, namespace_uid)
    VALUES ('00000000-0000-0000-0000-0000000000a3', '00000000-0000-0000-0000-0000000000e1', 'argocd-3', 'ns-uid-argocd-3');
UPDATE engine_instances SET capacity_weight = 50 WHERE id = '00000000-0000-0000-0000-0000000000a3';
`,
	6: `
INSERT INTO applications (id, tenant_id, name, engine_instance_id, spec, refresh)
    VALUES ('00000000-0000-0000-0000-0000000000b3', '00000000-0000-0000-0000-0000000000f1', 'gitopsdepl-uid3',
            '00000000-0000-0000-0000-0000000000a3', '{"project": "p"}', '2026-11-26T10:00:00Z');
`,
	7: `
INSERT INTO operation_signals (engine_instance_id, operation_id, cr_created)
    VALUES ('00000000-0000-0000-0000-0000000000a3', '00000000-0000-0000-0000-000000000071', true);
`,
	8: `
INSERT INTO leftover_resources (engine_instance_id, application_name, destination_server, destination_namespace, resources, remove_after)
    VALUES ('00000000-0000-0000-0000-0000000000a3', 'gitopsdepl-uid9', 'https://kubernetes.default.svc', 'team',
            '[{"version": "v1", "kind": "ConfigMap", "namespace": "team", "name": "settings"}]', '2026-11-27T10:00:00Z');
`,
	9: `
INSERT INTO sync_operations (id, tenant_id, application_id, deployment_name, revision, result_phase, result_message)
    VALUES ('00000000-0000-0000-0000-000000000052', '00000000-0000-0000-0000-0000000000f1',
            '00000000-0000-0000-0000-0000000000b1', 'web', 'main', 'Failed', 'one or more objects failed to apply');
`,
	// Only drops tables: the rows of the others must come through.
	10: `SELECT 1;`,
}

// droppedTables are the tables a migration drops, whose rows do not survive it.
var droppedTables = map[uint][]string{
	10: {"cluster_access", "kubernetes_resource_mappings"},
}

// tableColumns lists the columns of every application table.
func tableColumns(t *testing.T, bdb *bun.DB) map[string][]string {
	t.Helper()
	var rows []struct {
		Table  string `bun:"table_name"`
		Column string `bun:"column_name"`
	}
	err := bdb.NewRaw(`SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name <> 'schema_migrations' ORDER BY table_name, ordinal_position`).
		Scan(context.Background(), &rows)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string][]string{}
	for _, r := range rows {
		cols[r.Table] = append(cols[r.Table], r.Column)
	}
	return cols
}

// fingerprint digests the given columns of every given table: row count and an md5 of the
// sorted rows' text.
func fingerprint(t *testing.T, bdb *bun.DB, cols map[string][]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for table, columns := range cols {
		var digest string
		q := fmt.Sprintf(`SELECT count(*)::text || ':' || coalesce(md5(string_agg(r::text, '|' ORDER BY r::text)), '')
			FROM (SELECT %s FROM %s) AS r`, strings.Join(columns, ", "), table)
		if err := bdb.NewRaw(q).Scan(context.Background(), &digest); err != nil {
			t.Fatal(err)
		}
		out[table] = digest
	}
	return out
}

// TestDataSurvivesMigrations: rows inserted at version N are unchanged after migrating to
// N+1 and on to the latest version.
func TestDataSurvivesMigrations(t *testing.T) {
	t.Parallel()
	g := g(t)
	ctx := context.Background()
	cfg := dbtest.NewEmptyConfig(t)
	bdb := dbtest.Open(t, cfg)
	latest, err := db.LatestSchemaVersion()
	g.Expect(err).NotTo(HaveOccurred())

	for v := uint(1); v <= latest; v++ {
		before := tableColumns(t, bdb)
		for _, table := range droppedTables[v] {
			delete(before, table)
		}
		want := fingerprint(t, bdb, before)
		g.Expect(db.MigrateTo(ctx, cfg, v)).To(Succeed())
		g.Expect(fingerprint(t, bdb, before)).To(Equal(want), "data of version %d after migrating to %d", v-1, v)

		fixture, ok := migrationFixtures[v]
		if !ok {
			t.Fatalf("no fixture for migration %d: add rows for its tables to migrationFixtures", v)
		}
		_, err := bdb.ExecContext(ctx, fixture)
		g.Expect(err).NotTo(HaveOccurred(), "fixture %d", v)
	}
	for table, digest := range fingerprint(t, bdb, tableColumns(t, bdb)) {
		g.Expect(digest).NotTo(HavePrefix("0:"), "table %s has fixture rows", table)
	}
}
