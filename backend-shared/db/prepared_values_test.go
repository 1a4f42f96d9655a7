package db

import (
	"database/sql"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// values passes what bun would write as placeholders and leaves what bun writes as DEFAULT
// to bun, so that a column's database default still applies.
func TestValuesPassesColumnsAsPlaceholders(t *testing.T) {
	bdb := bun.NewDB(new(sql.DB), pgdialect.New())
	for _, tc := range []struct {
		name     string
		model    any
		columns  []string
		wantSQL  string
		wantArgs []any
	}{{
		name:     "every column set",
		model:    &AppProjectRepository{TenantID: "t", RepositoryURL: "https://git"},
		columns:  []string{"tenant_id", "repository_url"},
		wantSQL:  `INSERT INTO "appproject_repositories" ("tenant_id", "repository_url") VALUES ($1, $2)`,
		wantArgs: []any{"t", "https://git"},
	}, {
		name:     "a zero nullzero column is its default",
		model:    &Operation{EngineInstanceID: "e", ResourceType: OperationResourceApplication, ResourceID: "r"},
		columns:  []string{"engine_instance_id", "resource_type", "resource_id", "owner_tenant_id", "state"},
		wantSQL:  `INSERT INTO "operations" ("engine_instance_id", "resource_type", "resource_id", "owner_tenant_id", "state") VALUES ($1, $2, $3, DEFAULT, DEFAULT)`,
		wantArgs: []any{"e", OperationResourceApplication, "r"},
	}, {
		name:     "a nil pointer is its default, a JSON column its JSON",
		model:    &ApplicationState{ApplicationID: "a", Resources: []argov1alpha1.ResourceStatus{}},
		columns:  []string{"application_id", "resources", "operation_state"},
		wantSQL:  `INSERT INTO "application_states" ("application_id", "resources", "operation_state") VALUES ($1, $2, DEFAULT)`,
		wantArgs: []any{"a", json.RawMessage("[]")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var p prepared
			q := p.values(bdb.NewInsert().Model(tc.model), tc.columns...).Returning("NULL")
			text, err := q.AppendQuery(bdb.QueryGen(), nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(text)).To(Equal(tc.wantSQL))
			g.Expect(p.args).To(Equal(tc.wantArgs))
		})
	}
}
