package notifyroute

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

func TestChannels(t *testing.T) {
	g := NewWithT(t)
	r := NewRouter(nil, nil, nil, logr.Discard(), nil, nil)
	// Status and operations always; the engine instances only when a rebalancer listens.
	g.Expect(r.Channels()).To(Equal([]string{notify.ApplicationStateChanged, notify.OperationChanged}))
	r.EngineInstancesChanged = func() {}
	g.Expect(r.Channels()).To(Equal([]string{notify.ApplicationStateChanged, notify.OperationChanged, notify.EngineInstancesChanged}))
}

func TestHandleEngineInstancesChangedRunsTheRebalancer(t *testing.T) {
	g := NewWithT(t)
	runs := 0
	r := NewRouter(nil, nil, nil, logr.Discard(), nil, nil)
	r.EngineInstancesChanged = func() { runs++ }
	r.Handle(context.Background(), notify.EngineInstancesChanged, "")
	g.Expect(runs).To(Equal(1))
	// A channel the router does not know is ignored (no list, no database read).
	r.Handle(context.Background(), "some_other_channel", "x")
	g.Expect(runs).To(Equal(1))
}

func TestBeingDeleted(t *testing.T) {
	g := NewWithT(t)
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	g.Expect(beingDeleted(&v1.GitOpsDeployment{})).To(BeFalse())
	g.Expect(beingDeleted(&v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}})).To(BeTrue())
}

// enqueueItems puts the requests of the items that pass the filter into the controller's
// workqueue, once each however often they are added before being processed.
func TestEnqueueItems(t *testing.T) {
	g := NewWithT(t)
	wq := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer wq.ShutDown()
	var q Queue
	g.Expect(q.Source().Start(context.Background(), wq)).To(Succeed())

	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	list := &v1.GitOpsDeploymentList{Items: []v1.GitOpsDeployment{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "live"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "going", DeletionTimestamp: &now}},
	}}
	enqueueItems(list, &q, beingDeleted)
	enqueueItems(list, &q, beingDeleted)
	g.Expect(wq.Len()).To(Equal(1))
	item, _ := wq.Get()
	g.Expect(item).To(Equal(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "jane", Name: "going"}}))
	wq.Done(item)

	enqueueItems(list, &q, nil)
	g.Expect(wq.Len()).To(Equal(2))
}

// operationGetter serves one operation and counts its reads.
type operationGetter struct {
	op    *db.Operation
	reads int
}

func (o *operationGetter) GetOperation(_ context.Context, _ bun.IDB, id string) (*db.Operation, error) {
	o.reads++
	if o.op == nil || o.op.ID != id {
		return nil, db.ErrNotFound
	}
	return o.op, nil
}

// An operation_changed payload says what routing needs; only a bare id, the payload of
// earlier cluster-agents, costs a read of the row.
func TestOperationChange(t *testing.T) {
	const id = "6f1c1f0e-8a43-4d0e-9c57-3a3c2f0b7d11"
	finished := db.OperationChange{ID: id, State: db.OperationCompleted, ResourceType: db.OperationResourceApplication, ResourceID: "app-1"}
	for _, tc := range []struct {
		name    string
		payload string
		stored  *db.Operation
		want    db.OperationChange
		ok      bool
		reads   int
	}{
		{name: "the change itself", payload: `{"id":"` + id + `","state":"Completed","resourceType":"Application","resourceID":"app-1"}`,
			want: finished, ok: true},
		{name: "a bare id: the row is read", payload: id,
			stored: &db.Operation{ID: id, State: db.OperationCompleted, ResourceType: db.OperationResourceApplication, ResourceID: "app-1"},
			want:   finished, ok: true, reads: 1},
		{name: "a bare id whose row is gone", payload: id, reads: 1},
		{name: "not a change: read as an id", payload: `{"state":"Completed"}`, reads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ops := &operationGetter{op: tc.stored}
			r := NewRouter(nil, nil, ops, logr.Discard(), nil, nil)
			got, ok := r.operationChange(context.Background(), tc.payload)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(got).To(Equal(tc.want))
			g.Expect(ops.reads).To(Equal(tc.reads))
		})
	}
}
