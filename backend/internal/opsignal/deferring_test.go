package opsignal

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// raisingStore answers RaiseSignal as found (raised, covered) and counts the raises.
type raisingStore struct {
	OperationStore
	raised, covered bool
	raises          []string
	created         int
}

func (s *raisingStore) CreateOperation(_ context.Context, _ bun.IDB, op *db.Operation) error {
	s.created++
	op.ID = op.ResourceID
	return nil
}

func (s *raisingStore) RaiseSignal(_ context.Context, _ bun.IDB, op *db.Operation) (bool, error) {
	s.raises = append(s.raises, op.ID)
	op.Signalled, op.CoveredBySignal = s.raised, !s.raised && s.covered
	return s.raised, nil
}

// Operations written with Deferring's context raise their signal once per engine
// instance, at finish, and the others read as that raise found the signal.
func TestDeferringRaisesEachInstancesSignalOnce(t *testing.T) {
	for _, tc := range []struct {
		name            string
		raised, covered bool
		// of the second operation on the first instance
		wantSignalled, wantCovered bool
	}{
		{name: "this transaction raised it: its raiser creates the CR", raised: true, wantCovered: true},
		{name: "up with its CR", covered: true, wantCovered: true},
		{name: "up without its CR yet: each checks after the commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			store := &raisingStore{raised: tc.raised, covered: tc.covered}
			s := &Signaller{Store: store}
			join, finish := s.Deferring()
			ctx := join(context.Background())
			var ops []*db.Operation
			for _, w := range []struct{ engine, resource string }{{"a", "one"}, {"a", "two"}, {"b", "three"}} {
				op, err := s.Row(ctx, nil, &db.EngineInstance{ID: w.engine}, "tenant", db.OperationResourceApplication, w.resource)
				g.Expect(err).NotTo(HaveOccurred())
				ops = append(ops, op)
			}
			g.Expect(store.raises).To(BeEmpty(), "nothing raised before finish")
			g.Expect(finish(ctx, bun.Tx{})).To(Succeed())
			g.Expect(store.created).To(Equal(3))
			g.Expect(store.raises).To(Equal([]string{"one", "three"}), "one raise per instance, for its first operation")
			g.Expect(ops[0].Signalled).To(Equal(tc.raised))
			g.Expect(ops[1].Signalled).To(Equal(tc.wantSignalled))
			g.Expect(ops[1].CoveredBySignal).To(Equal(tc.wantCovered))
			g.Expect(ops[2].Signalled).To(Equal(tc.raised), "another instance's own raise")
		})
	}
	// Without Deferring's context, each operation raises its signal at once.
	g := NewWithT(t)
	store := &raisingStore{raised: true}
	s := &Signaller{Store: store}
	_, err := s.Row(context.Background(), nil, &db.EngineInstance{ID: "a"}, "tenant", db.OperationResourceApplication, "one")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(store.raises).To(Equal([]string{"one"}))
}
