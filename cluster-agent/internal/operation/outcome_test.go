package operation

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	agentmetrics "github.com/gitops-service/gitops-service/cluster-agent/internal/metrics"
)

func TestOutcomeConstructorsSayWhetherTheOperationsAreDone(t *testing.T) {
	tests := []struct {
		name    string
		outcome Outcome
		state   db.OperationState
		message string
		after   time.Duration
		done    bool
	}{
		{name: "completed finishes the operations", outcome: Completed("applied"),
			state: db.OperationCompleted, message: "applied", done: true},
		{name: "failed finishes the operations with a user error", outcome: Failed("rejected"),
			state: db.OperationFailed, message: "rejected", done: true},
		// Waiting keeps them In_Progress: the controller must look again after the interval.
		{name: "waiting keeps them in progress and asks for a requeue", outcome: Waiting("pruning", 3*time.Second),
			state: db.OperationInProgress, message: "pruning", after: 3 * time.Second, done: false},
		// The zero Outcome is what a handler returns with an error: never "done".
		{name: "the zero outcome is not done", outcome: Outcome{}, done: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.outcome.State).To(Equal(tt.state))
			g.Expect(tt.outcome.Message).To(Equal(tt.message))
			g.Expect(tt.outcome.RequeueAfter).To(Equal(tt.after))
			g.Expect(tt.outcome.Done()).To(Equal(tt.done))
		})
	}
}

func TestHandlerFuncAdaptsAFunction(t *testing.T) {
	g := NewWithT(t)
	var got Target
	h := HandlerFunc(func(_ context.Context, tgt Target) (Outcome, error) {
		got = tgt
		return Completed("done"), nil
	})
	out, err := h.Handle(t.Context(), Target{ResourceID: "r", TenantID: "t"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(Completed("done")))
	g.Expect(got).To(Equal(Target{ResourceID: "r", TenantID: "t"}))
}

func TestHandlerOutcomeNamesTheMetricOutcome(t *testing.T) {
	tests := []struct {
		name    string
		outcome Outcome
		err     error
		want    string
	}{
		{name: "completed", outcome: Completed("ok"), want: agentmetrics.OutcomeCompleted},
		{name: "failed", outcome: Failed("no"), want: agentmetrics.OutcomeFailed},
		{name: "waiting", outcome: Waiting("later", time.Second), want: agentmetrics.OutcomeWaiting},
		// An error wins over whatever outcome came with it: the run is retried.
		{name: "an error with a completed outcome", outcome: Completed("ok"), err: errors.New("boom"), want: agentmetrics.OutcomeError},
		{name: "an error with the zero outcome", err: errors.New("boom"), want: agentmetrics.OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(handlerOutcome(tt.outcome, tt.err)).To(Equal(tt.want))
		})
	}
}

func TestTenantOfIsTheOwnerOfTheNewestOperationThatHasOne(t *testing.T) {
	tests := []struct {
		name string
		ops  []db.Operation
		want string
	}{
		{name: "no operations", want: ""},
		{name: "system operations only", ops: []db.Operation{{ID: "a"}, {ID: "b"}}, want: ""},
		// ops come newest first: the newest operation's tenant is the one to act for.
		{name: "newest first", ops: []db.Operation{{ID: "a", OwnerTenantID: "t-new"}, {ID: "b", OwnerTenantID: "t-old"}}, want: "t-new"},
		// A newer system operation (the sweep's deletion) does not hide the tenant of an older one.
		{name: "skips operations without a tenant", ops: []db.Operation{{ID: "a"}, {ID: "b", OwnerTenantID: "t-old"}}, want: "t-old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tenantOf(tt.ops)).To(Equal(tt.want))
		})
	}
}

func TestExpiredSplitsOperationsAtTheRetryLimit(t *testing.T) {
	now := time.Now()
	old := db.Operation{ID: "old", CreatedAt: now.Add(-2 * time.Hour)}
	recent := db.Operation{ID: "recent", CreatedAt: now.Add(-time.Minute)}
	justUnder := db.Operation{ID: "just-under", CreatedAt: now.Add(-59 * time.Minute)}
	ids := func(ops []db.Operation) []string {
		out := []string{}
		for _, op := range ops {
			out = append(out, op.ID)
		}
		return out
	}
	tests := []struct {
		name    string
		limit   time.Duration
		ops     []db.Operation
		expired []string
		retried []string
	}{
		// RetryLimit 0 retries forever, however old the operation.
		{name: "no limit retries everything", limit: 0, ops: []db.Operation{old, recent}, expired: []string{}, retried: []string{"old", "recent"}},
		{name: "a negative limit retries everything", limit: -time.Hour, ops: []db.Operation{old}, expired: []string{}, retried: []string{"old"}},
		{name: "older than the limit is given up on", limit: time.Hour, ops: []db.Operation{old, recent, justUnder},
			expired: []string{"old"}, retried: []string{"recent", "just-under"}},
		{name: "all expired", limit: time.Minute / 2, ops: []db.Operation{old, recent}, expired: []string{"old", "recent"}, retried: []string{}},
		{name: "nothing to split", limit: time.Hour, ops: nil, expired: []string{}, retried: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Reconciler{RetryLimit: tt.limit}
			expired, retried := r.expired(tt.ops)
			g.Expect(ids(expired)).To(Equal(tt.expired))
			g.Expect(ids(retried)).To(Equal(tt.retried))
		})
	}
}

func TestIsFinalOnlyForCompletedAndFailed(t *testing.T) {
	tests := []struct {
		state v1.OperationStatusState
		want  bool
	}{
		{v1.OperationStateCompleted, true},
		{v1.OperationStateFailed, true},
		{v1.OperationStateWaiting, false},
		{v1.OperationStateInProgress, false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			NewWithT(t).Expect(IsFinal(tt.state)).To(Equal(tt.want))
		})
	}
}

func TestStatusIsComparesStateAndMessage(t *testing.T) {
	cr := &v1.Operation{Status: v1.OperationStatus{State: v1.OperationStateFailed, Message: "rejected: x"}}
	tests := []struct {
		name    string
		state   v1.OperationStatusState
		message string
		want    bool
	}{
		{name: "same", state: v1.OperationStateFailed, message: "rejected: x", want: true},
		// A new reason must be written even if the state is already Failed.
		{name: "other message", state: v1.OperationStateFailed, message: "rejected: y", want: false},
		{name: "other state", state: v1.OperationStateCompleted, message: "rejected: x", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(statusIs(cr, tt.state, tt.message)).To(Equal(tt.want))
		})
	}
}
