// Package periodic runs background work on a jittered interval, for manager Runnables such
// as the sweeps: runs of several replicas or binaries spread out instead of lining up.
package periodic

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
)

// JitterFactor spreads the runs ±20% around the interval.
const JitterFactor = 0.2

// Run calls fn every interval (±20%) until ctx ends; the first call comes one interval in,
// and each wait starts when the previous call returns. Errors are logged under name.
// A zero or negative interval disables it.
func Run(ctx context.Context, name string, interval time.Duration, fn func(context.Context) error) {
	if interval <= 0 {
		return
	}
	log := ctrl.LoggerFrom(ctx).WithName(name)
	ctx = ctrl.LoggerInto(ctx, log)
	for wait := Jittered(interval); ; wait = Jittered(interval) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Run failed")
		}
	}
}

// RunNow is Run with a first call at once.
func RunNow(ctx context.Context, name string, interval time.Duration, fn func(context.Context) error) {
	log := ctrl.LoggerFrom(ctx).WithName(name)
	if err := fn(ctrl.LoggerInto(ctx, log)); err != nil && ctx.Err() == nil {
		log.Error(err, "Run failed")
	}
	Run(ctx, name, interval, fn)
}

// Jittered is interval ±20%, at random.
func Jittered(interval time.Duration) time.Duration {
	return wait.Jitter(time.Duration(float64(interval)*(1-JitterFactor)), 2*JitterFactor/(1-JitterFactor))
}

// Task is a manager Runnable that calls Run every Interval (as Run does), on the elected
// leader only: the sweeps and the operation garbage collector.
type Task struct {
	Name     string
	Interval time.Duration
	Run      func(context.Context) error
}

// Start implements manager.Runnable.
func (t *Task) Start(ctx context.Context) error {
	Run(ctx, t.Name, t.Interval, t.Run)
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader runs it.
func (t *Task) NeedLeaderElection() bool { return true }
