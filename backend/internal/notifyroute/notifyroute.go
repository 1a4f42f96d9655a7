// Package notifyroute turns database notifications from the cluster-agents into reconcile
// requests: an application's state changed, or an operation finished. The requests go
// straight into the workqueue of the controller that owns the CR, so status follows Argo CD
// without any polling.
package notifyroute

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/uptrace/bun"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	"github.com/gitops-service/gitops-service/backend-shared/queue"
	"github.com/gitops-service/gitops-service/backend/internal/indexes"
	"github.com/gitops-service/gitops-service/backend/internal/watches"
)

// Queue is a controller's workqueue, handed over when the controller starts.
type Queue = queue.Handle[reconcile.Request]

// OperationGetter reads operations.
type OperationGetter interface {
	GetOperation(ctx context.Context, idb bun.IDB, id string) (*db.Operation, error)
}

// Router routes notifications to the controllers' queues.
type Router struct {
	// Cache reads GitOpsDeployments and SyncRuns through indexes.UID.
	Cache       client.Reader
	DB          bun.IDB
	Operations  OperationGetter
	Deployments Queue
	SyncRuns    Queue
	// EngineInstancesChanged runs the rebalancer (nil: not listened to).
	EngineInstancesChanged func()
	// SignalsMayBeLost revives the signals that are up after a reconnection (nil: none): a
	// loss of the database's commits, the cluster-agent's release of a signal among them,
	// ends every connection.
	SignalsMayBeLost func()
	Log              logr.Logger

	// newDeploymentList and newSyncRunList build the lists the cache fills.
	newDeploymentList func() client.ObjectList
	newSyncRunList    func() client.ObjectList
}

// NewRouter returns a router reading through cache.
func NewRouter(cache client.Reader, idb bun.IDB, ops OperationGetter, log logr.Logger,
	deploymentList, syncRunList func() client.ObjectList) *Router {
	return &Router{Cache: cache, DB: idb, Operations: ops, Log: log,
		newDeploymentList: deploymentList, newSyncRunList: syncRunList}
}

// Channels the router listens on.
func (r *Router) Channels() []string {
	channels := []string{notify.ApplicationStateChanged, notify.OperationChanged}
	if r.EngineInstancesChanged != nil {
		channels = append(channels, notify.EngineInstancesChanged)
	}
	return channels
}

// Handle is the listener's notification handler.
func (r *Router) Handle(ctx context.Context, channel, payload string) {
	switch channel {
	case notify.EngineInstancesChanged:
		r.EngineInstancesChanged()
	case notify.ApplicationStateChanged:
		r.enqueueByUID(ctx, r.newDeploymentList(), &r.Deployments, payload, nil)
	case notify.OperationChanged:
		change, ok := r.operationChange(ctx, payload)
		if !ok || !change.State.Finished() {
			return // progress of the cluster-agent changes nothing the backend shows
		}
		switch change.ResourceType {
		case db.OperationResourceApplication:
			// Only a deployment being deleted waits for its Application operation.
			r.enqueueByUID(ctx, r.newDeploymentList(), &r.Deployments, change.ResourceID, beingDeleted)
		case db.OperationResourceSyncOperation:
			r.enqueueByUID(ctx, r.newSyncRunList(), &r.SyncRuns, change.ResourceID, nil)
		}
	}
}

// operationChange is what an operation_changed payload says, read from the operation's
// row when the payload is a bare id (a cluster-agent of an earlier version). ok is false
// when the row cannot be read.
func (r *Router) operationChange(ctx context.Context, payload string) (db.OperationChange, bool) {
	if change, ok := db.ParseOperationChange(payload); ok {
		return change, true
	}
	op, err := r.Operations.GetOperation(ctx, r.DB, payload)
	if err != nil {
		// Garbage-collected already, or a transient error: the periodic resync covers it.
		r.Log.V(1).Info("operation notification not routed", "operation", payload, "error", err.Error())
		return db.OperationChange{}, false
	}
	return db.OperationChange{ID: op.ID, State: op.State, ResourceType: op.ResourceType, ResourceID: op.ResourceID}, true
}

// Resync enqueues every GitOpsDeployment and SyncRun, runs the rebalancer and revives the
// signals, after notifications (and maybe commits) may have been lost (the listener
// reconnected).
func (r *Router) Resync(ctx context.Context) {
	r.enqueueAll(ctx, r.newDeploymentList(), &r.Deployments)
	r.enqueueAll(ctx, r.newSyncRunList(), &r.SyncRuns)
	for _, wake := range []func(){r.EngineInstancesChanged, r.SignalsMayBeLost} {
		if wake != nil {
			wake()
		}
	}
}

// enqueueByUID enqueues the object with uid, if it passes filter (nil: any).
func (r *Router) enqueueByUID(ctx context.Context, list client.ObjectList, q *Queue, uid string, filter func(metav1.Object) bool) {
	if err := r.Cache.List(ctx, list, client.MatchingFields{indexes.UID: uid}); err != nil {
		r.Log.Error(err, "listing objects by UID", "uid", uid)
		return
	}
	enqueueItems(list, q, filter)
}

func beingDeleted(o metav1.Object) bool { return o.GetDeletionTimestamp() != nil }

func (r *Router) enqueueAll(ctx context.Context, list client.ObjectList, q *Queue) {
	if err := r.Cache.List(ctx, list); err != nil {
		r.Log.Error(err, "listing objects for resync")
		return
	}
	enqueueItems(list, q, nil)
}

func enqueueItems(list client.ObjectList, q *Queue, filter func(metav1.Object) bool) {
	for _, req := range watches.Requests(list, filter) {
		q.Add(req)
	}
}
