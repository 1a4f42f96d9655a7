package promotion

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

const (
	msgWaiting  = "Waiting for all components to be synced and healthy"
	msgDeployed = "All components are synced and healthy"
)

// Children returns, sorted, the Environments promoted to automatically after a promotion to
// the parents: those whose spec.parentEnvironment is one of parents and whose
// deploymentStrategy is AppStudioAutomated, leaving out those in visited (so that a cycle in
// the graph ends the walk instead of looping).
func Children(envs []appstudio.Environment, parents []string, visited map[string]bool) []string {
	isParent := map[string]bool{}
	for _, p := range parents {
		isParent[p] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range envs {
		if isParent[e.Spec.ParentEnvironment] && e.Spec.DeploymentStrategy == appstudio.DeploymentStrategyAppStudioAutomated &&
			!visited[e.Name] && !seen[e.Name] {
			seen[e.Name] = true
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Depths is the whole walk from initial: the Environments of each step (depth), initial
// alone at the first. The initial Environment is promoted to whatever its strategy (the user
// named it); below it only AppStudioAutomated Environments are, and a Manual Environment
// ends its branch. It returns nil when initial does not exist.
func Depths(envs []appstudio.Environment, initial string) [][]string {
	found := false
	for _, e := range envs {
		found = found || e.Name == initial
	}
	if !found {
		return nil
	}
	visited := map[string]bool{initial: true}
	out := [][]string{{initial}}
	for {
		next := Children(envs, out[len(out)-1], visited)
		if len(next) == 0 {
			return out
		}
		for _, n := range next {
			visited[n] = true
		}
		out = append(out, next)
	}
}

// advanceAutomated advances an automated promotion. Progress is derived on every reconcile:
// status.environmentStatus records which Environments each step covers (so a step's
// Environments are fixed once it starts), and whether the current step is done is read from
// its bindings. When every binding of the current step is deployed, the step succeeds and
// the next depth starts in the same reconcile; when the step's deadline passes, the run fails.
// Step k must be done within k promotion timeouts of the promotion's start.
func (r *Reconciler) advanceAutomated(ctx context.Context, run *appstudio.PromotionRun) (ctrl.Result, error) {
	initial := run.Spec.AutomatedPromotion.InitialEnvironment
	if run.Status.State == "" {
		run.Status.State = appstudio.PromotionRunStateWaiting
	}
	envList := &appstudio.EnvironmentList{}
	if run.Status.State == appstudio.PromotionRunStateWaiting {
		if err := r.waitTurn(ctx, run); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.validateSnapshot(ctx, run); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.Client.List(ctx, envList, client.InNamespace(run.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	envs := map[string]bool{}
	for _, e := range envList.Items {
		envs[e.Name] = true
	}

	if run.Status.State == appstudio.PromotionRunStateWaiting {
		start := metav1.NewTime(r.now())
		run.Status.State = appstudio.PromotionRunStateActive
		run.Status.PromotionStartTime = &start
		run.Status.ActiveBindings = nil
		run.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{{
			Step: 1, EnvironmentName: initial, Status: appstudio.PromotionRunEnvironmentStatusInProgress, DisplayStatus: msgWaiting}}
		return r.automatedStep(ctx, run, envList.Items, envs, true)
	}
	return r.automatedStep(ctx, run, envList.Items, envs, false)
}

// automatedStep checks the current (In Progress) step; started says the step was added in
// this reconcile, so its bindings are pointed at the snapshot.
func (r *Reconciler) automatedStep(ctx context.Context, run *appstudio.PromotionRun, all []appstudio.Environment, envs map[string]bool, started bool) (ctrl.Result, error) {
	for {
		step, names := currentStep(run)
		if step == 0 { // nothing in progress (not written by us): end as failed rather than guess.
			r.completeAutomated(run, appstudio.PromotionRunCompleteResultFailure, "The promotion has no step in progress")
			return ctrl.Result{}, nil
		}
		for _, n := range names {
			if !envs[n] {
				r.completeAutomated(run, appstudio.PromotionRunCompleteResultFailure, fmt.Sprintf("Environment %q does not exist", n))
				return ctrl.Result{}, nil
			}
		}
		// The step's deadline holds whatever stops it (not deployed yet, or a user error such
		// as several bindings for one Environment).
		waitOrFail := func(err error) (ctrl.Result, error) {
			if err != nil && outcome.As(err) == nil {
				return ctrl.Result{}, err // internal: retried with backoff
			}
			remaining := run.Status.PromotionStartTime.Add(r.Timeout * time.Duration(step)).Sub(r.now())
			if remaining <= 0 {
				msg := fmt.Sprintf("Not all components were synced and healthy within %s", r.Timeout)
				if err != nil {
					msg = fmt.Sprintf("%s: %s", msg, err.Error())
				}
				r.completeAutomated(run, appstudio.PromotionRunCompleteResultFailure, msg)
				return ctrl.Result{}, nil
			}
			return ctrl.Result{RequeueAfter: remaining}, err
		}
		var bindings []string
		deployed := true
		for _, n := range names {
			b, err := r.pointBinding(ctx, run, n, started)
			if err != nil {
				return waitOrFail(err)
			}
			bindings = append(bindings, b.Name)
			deployed = deployed && Deployed(b, run.Spec.Snapshot)
		}
		run.Status.ActiveBindings = bindings
		if !deployed {
			return waitOrFail(nil)
		}
		visited := map[string]bool{}
		for i := range run.Status.EnvironmentStatus {
			s := &run.Status.EnvironmentStatus[i]
			visited[s.EnvironmentName] = true
			if s.Step == step {
				s.Status, s.DisplayStatus = appstudio.PromotionRunEnvironmentStatusSuccess, msgDeployed
			}
		}
		next := Children(all, names, visited)
		if len(next) == 0 {
			r.completeAutomated(run, appstudio.PromotionRunCompleteResultSuccess, "")
			return ctrl.Result{}, nil
		}
		ctrl.LoggerFrom(ctx).Info("promotion step complete", "step", step, "next", next)
		for _, n := range next {
			run.Status.EnvironmentStatus = append(run.Status.EnvironmentStatus, appstudio.PromotionRunEnvironmentStatus{
				Step: step + 1, EnvironmentName: n, Status: appstudio.PromotionRunEnvironmentStatusInProgress, DisplayStatus: msgWaiting})
		}
		started = true
	}
}

// currentStep returns the step number and Environments of the step in progress.
func currentStep(run *appstudio.PromotionRun) (int, []string) {
	step := 0
	var names []string
	for _, s := range run.Status.EnvironmentStatus {
		if s.Status != appstudio.PromotionRunEnvironmentStatusInProgress {
			continue
		}
		if step == 0 {
			step = s.Step
		}
		if s.Step == step {
			names = append(names, s.EnvironmentName)
		}
	}
	return step, names
}

// completeAutomated ends the run; on failure the steps in progress are marked Failed with msg.
func (r *Reconciler) completeAutomated(run *appstudio.PromotionRun, result appstudio.PromotionRunCompleteResult, msg string) {
	run.Status.State = appstudio.PromotionRunStateComplete
	run.Status.CompletionResult = result
	if result != appstudio.PromotionRunCompleteResultFailure {
		return
	}
	for i := range run.Status.EnvironmentStatus {
		s := &run.Status.EnvironmentStatus[i]
		if s.Status == appstudio.PromotionRunEnvironmentStatusInProgress {
			s.Status, s.DisplayStatus = appstudio.PromotionRunEnvironmentStatusFailed, msg
		}
	}
}
