package opgc

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/scheme"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// untouchable fails the test on any use of the database.
type untouchable struct{ t *testing.T }

func (u untouchable) GarbageCollectOperations(context.Context, bun.IDB, time.Time, int) ([]db.Operation, error) {
	u.t.Fatal("an instance without Operation CRs read the database")
	return nil, nil
}

func TestAnInstanceWithoutOperationCRsCostsTheDatabaseNothing(t *testing.T) {
	other := &v1.Operation{}
	other.Namespace, other.Name = "another-instance", "operation-1"
	c := &Collector{
		Client:   fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(other).Build(),
		Store:    untouchable{t},
		Identity: engine.Identity{Namespace: "argocd"},
		Existing: func(context.Context, bun.IDB, []string) (map[string]bool, error) {
			t.Fatal("an instance without Operation CRs checked operation ids")
			return nil, nil
		},
	}
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
}
