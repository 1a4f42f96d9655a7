package notifyroute

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
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
