package argoapp

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
)

// release lets go of the Argo CD Application of an application that moved to another
// engine instance, without pruning what it deployed. While the application is moving away
// from this instance, it waits until the new instance has adopted it (its Argo CD compared
// the Application), so the resources are never without an Argo CD that manages them. Then
// it removes Argo CD's finalizers, so that Argo CD here deletes nothing, deletes the
// Application, and records that the move is done. An Application left here by an older
// move (the row is not moving from this instance) is let go at once.
func (a *Applications) release(ctx context.Context, row *db.Application) (operation.Outcome, error) {
	movingFromHere := row.MovingFromEngineInstanceID == a.Identity.InstanceID
	if movingFromHere {
		adopted, err := a.Store.ApplicationAdopted(ctx, a.DB, row.ID)
		if err != nil {
			return operation.Outcome{}, fmt.Errorf("checking whether engine instance %s adopted the application: %w", row.EngineInstanceID, err)
		}
		if !adopted {
			return operation.Waiting(fmt.Sprintf("waiting for engine instance %s to adopt Argo CD Application %s before letting it go here",
				row.EngineInstanceID, row.Name), a.poll()), nil
		}
	}
	var reader client.Reader = a.Client
	if a.APIReader != nil {
		reader = a.APIReader // the cache may not show a just-created Application
	}
	apps, err := a.find(ctx, reader, row.ID)
	if err != nil {
		return operation.Outcome{}, err
	}
	released := make([]string, 0, len(apps))
	for i := range apps {
		app := &apps[i]
		if hasArgoFinalizer(app) {
			if err := a.removeArgoFinalizers(ctx, app); err != nil {
				return operation.Outcome{}, err
			}
		}
		if app.DeletionTimestamp == nil {
			if err := a.Client.Delete(ctx, app); client.IgnoreNotFound(err) != nil {
				return operation.Outcome{}, fmt.Errorf("deleting Argo CD Application %s: %w", app.Name, err)
			}
		}
		released = append(released, app.Name)
	}
	if movingFromHere {
		if err := a.Store.FinishApplicationMove(ctx, a.DB, row.ID, a.Identity.InstanceID); err != nil {
			return operation.Outcome{}, fmt.Errorf("recording the end of the application's move: %w", err)
		}
	}
	if _, err := a.Projects.Ensure(ctx, row.TenantID, released...); err != nil {
		return operation.Outcome{}, err
	}
	if len(released) == 0 {
		return operation.Completed(fmt.Sprintf("application %s is served by engine instance %s; nothing to let go here",
			row.Name, row.EngineInstanceID)), nil
	}
	return operation.Completed(fmt.Sprintf("Argo CD Application %s let go: engine instance %s adopted it; its resources were left in place",
		strings.Join(released, ", "), row.EngineInstanceID)), nil
}
