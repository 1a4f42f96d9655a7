package db_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestListOperations(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	other := f.newInstance(t)
	now := time.Now()
	// newOp creates an operation of instance in state, created age ago.
	newOp := func(instance *db.EngineInstance, state db.OperationState, age time.Duration) string {
		op := &db.Operation{EngineInstanceID: instance.ID, ResourceType: db.OperationResourceApplication,
			ResourceID: newUID(), State: state, HumanReadableState: string(state)}
		g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
		_, err := f.db.NewUpdate().Table("operations").Set("created_at = ?", now.Add(-age)).Where("id = ?", op.ID).Exec(f.ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return op.ID
	}
	a1 := newOp(f.instance, db.OperationWaiting, 3*time.Hour)
	a2 := newOp(f.instance, db.OperationCompleted, 2*time.Hour)
	a3 := newOp(f.instance, db.OperationFailed, time.Hour)
	b1 := newOp(other, db.OperationWaiting, 30*time.Minute)

	for _, tc := range []struct {
		name   string
		filter db.OperationFilter
		want   []string
	}{
		{"all, newest first", db.OperationFilter{}, []string{b1, a3, a2, a1}},
		{"by state", db.OperationFilter{State: db.OperationWaiting}, []string{b1, a1}},
		{"by engine instance", db.OperationFilter{EngineInstanceID: f.instance.ID}, []string{a3, a2, a1}},
		{"by both", db.OperationFilter{State: db.OperationWaiting, EngineInstanceID: f.instance.ID}, []string{a1}},
		{"the newest", db.OperationFilter{Limit: 2}, []string{b1, a3}},
		{"an instance without operations", db.OperationFilter{EngineInstanceID: newUID()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := f.store.ListOperations(f.ctx, f.db, tc.filter)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			ids := []string(nil)
			for _, op := range ops {
				ids = append(ids, op.ID)
			}
			NewWithT(t).Expect(ids).To(Equal(tc.want))
		})
	}

	ops, err := f.store.ListOperations(f.ctx, f.db, db.OperationFilter{Limit: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops).To(HaveLen(1))
	g.Expect(ops[0].EngineInstanceID).To(Equal(other.ID))
	g.Expect(ops[0].State).To(Equal(db.OperationWaiting))
	g.Expect(ops[0].HumanReadableState).To(Equal("Waiting"))
	g.Expect(ops[0].CreatedAt).To(BeTemporally("~", now.Add(-30*time.Minute), time.Second))
	_, err = f.store.ListOperations(f.ctx, f.db, db.OperationFilter{EngineInstanceID: "argocd"})
	g.Expect(err).To(MatchError(db.ErrInvalid))
}

func TestParseOperationChange(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		want    db.OperationChange
		ok      bool
	}{
		{name: "as PostgreSQL writes it", payload: `{"id" : "op-1", "state" : "Completed", "resourceType" : "Application", "resourceID" : "app-1"}`,
			want: db.OperationChange{ID: "op-1", State: db.OperationCompleted, ResourceType: db.OperationResourceApplication, ResourceID: "app-1"}, ok: true},
		{name: "a bare id", payload: "6f1c1f0e-8a43-4d0e-9c57-3a3c2f0b7d11"},
		{name: "no id", payload: `{"state" : "Completed"}`},
		{name: "not JSON", payload: `{"id" : `},
		{name: "empty", payload: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := db.ParseOperationChange(tc.payload)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
