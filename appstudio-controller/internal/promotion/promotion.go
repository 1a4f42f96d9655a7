// Package promotion reconciles PromotionRuns. A manual promotion points the Application's
// SnapshotEnvironmentBinding for the target Environment at the Snapshot (creating
// "<application>-<environment>-generated-binding" when there is none), then completes with
// Success once every component is Synced and Healthy, or with Failure after a timeout. Only
// one PromotionRun per Application runs at a time: the oldest unfinished one. An automated
// promotion (automated.go) does the same, depth by depth, along the Environment graph.
package promotion

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/errcond"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/indexes"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend-shared/statuspatch"
)

// reasonInProgress: another PromotionRun of the Application runs; this one waits.
const reasonInProgress = "PromotionInProgress"

// Reconciler reconciles PromotionRuns.
type Reconciler struct {
	Client                  client.Client
	Recorder                record.EventRecorder
	Timeout                 time.Duration
	MaxConcurrentReconciles int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments;snapshots,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller: runs are requeued when a binding or another run
// of their Application changes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.PromotionRun{}).
		Watches(&appstudio.SnapshotEnvironmentBinding{}, handler.EnqueueRequestsFromMapFunc(r.runsOf)).
		Watches(&appstudio.PromotionRun{}, handler.EnqueueRequestsFromMapFunc(r.runsOf)).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("promotionrun").
		Complete(r)
}

func (r *Reconciler) runsOf(ctx context.Context, o client.Object) []reconcile.Request {
	var app string
	switch v := o.(type) {
	case *appstudio.SnapshotEnvironmentBinding:
		app = v.Spec.Application
	case *appstudio.PromotionRun:
		app = v.Spec.Application
	}
	runs := &appstudio.PromotionRunList{}
	if err := r.Client.List(ctx, runs, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexes.Application: app}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, run := range runs.Items {
		if run.Status.State != appstudio.PromotionRunStateComplete && run.Name != o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: run.Namespace, Name: run.Name}})
		}
	}
	return reqs
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile advances one PromotionRun. A completed run is not advanced any more; its
// status is only brought up to date (a run completed by an earlier version gets Ready).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &appstudio.PromotionRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !run.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	start := run.DeepCopy()
	var result ctrl.Result
	var err error
	if run.Status.State != appstudio.PromotionRunStateComplete {
		result, err = r.advance(ctx, run)
		if apierrors.IsConflict(err) {
			// A write met a newer object (the cache lags behind a write): not an error to
			// show, just a reconcile to run again on fresh data.
			ctrl.LoggerFrom(ctx).V(1).Info("Stale object; retrying", "error", err.Error())
			return ctrl.Result{RequeueAfter: statuspatch.StaleRetry}, nil
		}
		r.setError(run, err)
	}
	progress := Progress(run)
	progress.RequeueAfter = result.RequeueAfter
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}.End(ctx, run, start, outcome.Status{
		Conditions:         RunConditions{List: &run.Status.Conditions},
		ObservedGeneration: &run.Status.ObservedGeneration,
		Written:            func() { r.recordTransitions(run, &start.Status, err) },
	}, progress, byDeadline(err, result.RequeueAfter))
}

// Progress is where a PromotionRun is: Ready once it completed with Success, Stalled once it
// completed with Failure, in progress while it waits to start or runs.
func Progress(run *appstudio.PromotionRun) outcome.Progress {
	st := &run.Status
	switch {
	case st.State == appstudio.PromotionRunStateComplete && st.CompletionResult == appstudio.PromotionRunCompleteResultSuccess:
		return outcome.Done(appstudio.PromotionRunReasonSucceeded, successMessage(run))
	case st.State == appstudio.PromotionRunStateComplete:
		return outcome.Failed(appstudio.PromotionRunReasonFailed, failureMessage(st))
	case st.State == appstudio.PromotionRunStateActive:
		return outcome.Working(appstudio.PromotionRunReasonPromoting, fmt.Sprintf("Promoting Snapshot %s to %s: waiting for all components to be synced and healthy",
			run.Spec.Snapshot, strings.Join(inProgress(st), ", ")), false)
	default:
		return outcome.Working(appstudio.PromotionRunReasonWaitingToStart, "The promotion has not started yet", true)
	}
}

// inProgress lists the Environments of the steps in progress.
func inProgress(st *appstudio.PromotionRunStatus) []string {
	var envs []string
	for _, s := range st.EnvironmentStatus {
		if s.Status == appstudio.PromotionRunEnvironmentStatusInProgress {
			envs = append(envs, s.EnvironmentName)
		}
	}
	return envs
}

// successMessage says where a successful run deployed its Snapshot.
func successMessage(run *appstudio.PromotionRun) string {
	var envs []string
	for _, s := range run.Status.EnvironmentStatus {
		envs = append(envs, s.EnvironmentName)
	}
	return fmt.Sprintf("Snapshot %s is deployed to %s", run.Spec.Snapshot, strings.Join(envs, ", "))
}

// failureMessage says which steps of a failed run failed, and why.
func failureMessage(st *appstudio.PromotionRunStatus) string {
	var failures []string
	for _, s := range st.EnvironmentStatus {
		if s.Status == appstudio.PromotionRunEnvironmentStatusFailed {
			failures = append(failures, fmt.Sprintf("%s: %s", s.EnvironmentName, s.DisplayStatus))
		}
	}
	msg := "The promotion failed"
	if len(failures) > 0 {
		msg += ": " + strings.Join(failures, "; ")
	}
	return msg
}

// byDeadline makes an outcome error that holds an active run come back by the step's
// deadline at the latest, so that the run still times out.
func byDeadline(err error, deadline time.Duration) error {
	if e := outcome.As(err); e != nil && deadline > 0 && (e.RetryAfter == 0 || deadline < e.RetryAfter) {
		e.RetryAfter = deadline
	}
	return err
}

// Reasons of the PromotionRun's Events; a raised ErrorOccurred condition uses the reason of
// the error (SnapshotNotFound, PromotionInProgress, ...).
const (
	EventPromotionStarted   = "PromotionStarted"
	EventStepSucceeded      = "StepSucceeded"
	EventPromotionSucceeded = "PromotionSucceeded"
	EventPromotionFailed    = "PromotionFailed"
)

// recordTransitions records one Event per user-visible change from before: the run
// starting, completing (Normal on Success, Warning on Failure), and its ErrorOccurred
// condition raised, changed or resolved. (A step of an automated run is recorded where it
// succeeds.) A reconcile that changes none of these records nothing.
func (r *Reconciler) recordTransitions(run *appstudio.PromotionRun, before *appstudio.PromotionRunStatus, err error) {
	if r.Recorder == nil {
		return
	}
	st := &run.Status
	stateEvent := false
	if st.State != before.State && (st.State == appstudio.PromotionRunStateActive ||
		st.State == appstudio.PromotionRunStateComplete && before.State != appstudio.PromotionRunStateActive) {
		stateEvent = true
		if m := run.Spec.ManualPromotion; m != nil {
			r.Recorder.Eventf(run, corev1.EventTypeNormal, EventPromotionStarted, "Promoting Snapshot %s of application %s to Environment %s",
				run.Spec.Snapshot, run.Spec.Application, m.TargetEnvironment)
		} else if a := run.Spec.AutomatedPromotion; a != nil {
			r.Recorder.Eventf(run, corev1.EventTypeNormal, EventPromotionStarted, "Promoting Snapshot %s of application %s, starting with Environment %s",
				run.Spec.Snapshot, run.Spec.Application, a.InitialEnvironment)
		}
	}
	r.recordSteps(run, before)
	if st.State == appstudio.PromotionRunStateComplete && before.State != appstudio.PromotionRunStateComplete {
		stateEvent = true
		if st.CompletionResult == appstudio.PromotionRunCompleteResultSuccess {
			r.Recorder.Event(run, corev1.EventTypeNormal, EventPromotionSucceeded, successMessage(run))
		} else {
			r.Recorder.Event(run, corev1.EventTypeWarning, EventPromotionFailed, failureMessage(st))
		}
	}
	was, now := errorCondition(before), errorCondition(st)
	switch {
	case now == nil || (was != nil && was.Status == now.Status && was.Message == now.Message):
	case now.Status == appstudio.PromotionRunConditionStatusTrue:
		reason, _ := errcond.Shown(err)
		typ := corev1.EventTypeWarning
		if reason == reasonInProgress {
			typ = corev1.EventTypeNormal // waiting its turn is no failure
		}
		r.Recorder.Event(run, typ, reason, now.Message)
	case !stateEvent && was != nil && was.Status == appstudio.PromotionRunConditionStatusTrue:
		r.Recorder.Event(run, corev1.EventTypeNormal, string(appstudio.PromotionRunReasonErrorOccurredResolved), "The PromotionRun's earlier error is resolved")
	}
}

// recordSteps records StepSucceeded for each step of an automated run that succeeded since
// before and was followed by another (the last step's success is PromotionSucceeded).
func (r *Reconciler) recordSteps(run *appstudio.PromotionRun, before *appstudio.PromotionRunStatus) {
	if run.Spec.AutomatedPromotion == nil {
		return
	}
	was := map[string]appstudio.PromotionRunEnvironmentStatusField{}
	for _, s := range before.EnvironmentStatus {
		was[s.EnvironmentName] = s.Status
	}
	byStep := map[int][]string{}
	done := map[int]bool{}
	for _, s := range run.Status.EnvironmentStatus {
		byStep[s.Step] = append(byStep[s.Step], s.EnvironmentName)
		if s.Status == appstudio.PromotionRunEnvironmentStatusSuccess && was[s.EnvironmentName] != s.Status {
			done[s.Step] = true
		}
	}
	for step := 1; step <= len(byStep); step++ {
		if done[step] && len(byStep[step+1]) > 0 {
			r.Recorder.Eventf(run, corev1.EventTypeNormal, EventStepSucceeded, "Step %d (%s) is deployed; promoting to %s",
				step, strings.Join(byStep[step], ", "), strings.Join(byStep[step+1], ", "))
		}
	}
}

func errorCondition(st *appstudio.PromotionRunStatus) *appstudio.PromotionRunCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == appstudio.PromotionRunConditionErrorOccurred {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setError records err in the ErrorOccurred condition (GitOps-style PromotionRunCondition).
func (r *Reconciler) setError(run *appstudio.PromotionRun, err error) {
	var c *appstudio.PromotionRunCondition
	for i := range run.Status.Conditions {
		if run.Status.Conditions[i].Type == appstudio.PromotionRunConditionErrorOccurred {
			c = &run.Status.Conditions[i]
		}
	}
	now := metav1.NewTime(r.now())
	if err == nil {
		if c != nil && c.Status == appstudio.PromotionRunConditionStatusTrue {
			c.Status, c.Reason, c.Message, c.LastProbeTime, c.LastTransitionTime =
				appstudio.PromotionRunConditionStatusFalse, appstudio.PromotionRunReasonErrorOccurredResolved, "", &now, &now
		}
		return
	}
	_, msg := errcond.Shown(err)
	if c == nil {
		run.Status.Conditions = append(run.Status.Conditions, appstudio.PromotionRunCondition{Type: appstudio.PromotionRunConditionErrorOccurred})
		c = &run.Status.Conditions[len(run.Status.Conditions)-1]
	}
	if c.Status == appstudio.PromotionRunConditionStatusTrue && c.Message == msg {
		return
	}
	if c.Status != appstudio.PromotionRunConditionStatusTrue {
		c.LastTransitionTime = &now
	}
	c.Status, c.Reason, c.Message, c.LastProbeTime = appstudio.PromotionRunConditionStatusTrue, appstudio.PromotionRunReasonErrorOccurred, msg, &now
}

func (r *Reconciler) advance(ctx context.Context, run *appstudio.PromotionRun) (ctrl.Result, error) {
	if run.Spec.ManualPromotion == nil {
		if run.Spec.AutomatedPromotion == nil {
			return ctrl.Result{}, outcome.UserError("InvalidSpec", "exactly one of spec.manualPromotion and spec.automatedPromotion must be set")
		}
		return r.advanceAutomated(ctx, run)
	}
	target := run.Spec.ManualPromotion.TargetEnvironment
	if run.Status.State == "" {
		run.Status.State = appstudio.PromotionRunStateWaiting
	}
	if run.Status.State == appstudio.PromotionRunStateWaiting {
		if err := r.waitTurn(ctx, run); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.validate(ctx, run, target); err != nil {
			return ctrl.Result{}, err
		}
	}
	binding, err := r.pointBinding(ctx, run, target, run.Status.State == appstudio.PromotionRunStateWaiting)
	if err != nil {
		return ctrl.Result{}, err
	}
	if run.Status.State == appstudio.PromotionRunStateWaiting {
		start := metav1.NewTime(r.now())
		run.Status.State = appstudio.PromotionRunStateActive
		run.Status.PromotionStartTime = &start
		run.Status.ActiveBindings = []string{binding.Name}
		run.Status.EnvironmentStatus = []appstudio.PromotionRunEnvironmentStatus{{
			Step: 1, EnvironmentName: target, Status: appstudio.PromotionRunEnvironmentStatusInProgress,
			DisplayStatus: "Waiting for all components to be synced and healthy"}}
	}
	if Deployed(binding, run.Spec.Snapshot) {
		// Before completing, so that a failed create is retried rather than lost.
		if err := r.promoteChildren(ctx, run, target); err != nil {
			return ctrl.Result{}, err
		}
		r.complete(run, appstudio.PromotionRunCompleteResultSuccess, appstudio.PromotionRunEnvironmentStatusSuccess, "All components are synced and healthy")
		return ctrl.Result{}, nil
	}
	remaining := run.Status.PromotionStartTime.Add(r.Timeout).Sub(r.now())
	if remaining <= 0 {
		r.complete(run, appstudio.PromotionRunCompleteResultFailure, appstudio.PromotionRunEnvironmentStatusFailed,
			fmt.Sprintf("Not all components were synced and healthy within %s", r.Timeout))
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: remaining}, nil
}

// promoteChildren carries a successful manual promotion to target on to target's
// AppStudioAutomated children: one automated PromotionRun from each, owned by run.
func (r *Reconciler) promoteChildren(ctx context.Context, run *appstudio.PromotionRun, target string) error {
	envs := &appstudio.EnvironmentList{}
	if err := r.Client.List(ctx, envs, client.InNamespace(run.Namespace)); err != nil {
		return err
	}
	owner := metav1.OwnerReference{APIVersion: appstudio.GroupVersion.String(), Kind: "PromotionRun", Name: run.Name, UID: run.UID}
	for _, child := range Children(envs.Items, []string{target}, map[string]bool{target: true}) {
		if err := createAutomatedRun(ctx, r.Client, owner, run.Namespace, run.Spec.Application, run.Spec.Snapshot, child); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) complete(run *appstudio.PromotionRun, result appstudio.PromotionRunCompleteResult, step appstudio.PromotionRunEnvironmentStatusField, msg string) {
	run.Status.State = appstudio.PromotionRunStateComplete
	run.Status.CompletionResult = result
	for i := range run.Status.EnvironmentStatus {
		run.Status.EnvironmentStatus[i].Status = step
		run.Status.EnvironmentStatus[i].DisplayStatus = msg
	}
}

// Deployed reports whether the binding deploys snapshot and every component is Synced and
// Healthy. Because a binding's status may still describe the previous Snapshot, it also
// requires that the binding's status describes its current spec: our observedGeneration,
// the Application Service's GitOpsResourcesGenerated condition (when present) observed at
// the current generation, and each deployment at the commit the component's resources were
// generated in (when the Application Service reports it).
func Deployed(b *appstudio.SnapshotEnvironmentBinding, snapshot string) bool {
	if b.Spec.Snapshot != snapshot || b.Status.ObservedGeneration != b.Generation ||
		len(b.Status.Components) == 0 || len(b.Status.GitOpsDeployments) != len(b.Status.Components) {
		return false
	}
	if c := meta.FindStatusCondition(b.Status.GitOpsRepoConditions, appstudio.GitOpsRepoConditionGitOpsResourcesGenerated); c != nil &&
		(c.Status != metav1.ConditionTrue || c.ObservedGeneration != b.Generation) {
		return false
	}
	commits := map[string]string{}
	for _, c := range b.Status.Components {
		commits[c.Name] = c.GitOpsRepository.CommitID
	}
	for _, d := range b.Status.GitOpsDeployments {
		if d.SyncStatus != "Synced" || d.Health != "Healthy" {
			return false
		}
		if want := commits[d.ComponentName]; want != "" && d.CommitID != want {
			return false
		}
	}
	return true
}

// TurnRetry is how soon a run waiting for another one is looked at again, in case the other
// run's completion is missed (its watch requeues the waiting runs first).
const TurnRetry = time.Minute

// waitTurn returns a transient error while an earlier run of the Application is unfinished.
func (r *Reconciler) waitTurn(ctx context.Context, run *appstudio.PromotionRun) error {
	other, err := r.activeRun(ctx, run)
	if err != nil || other == "" {
		return err
	}
	return outcome.TransientError(reasonInProgress, TurnRetry,
		"PromotionRun %q of application %q is in progress; this one starts when it completes", other, run.Spec.Application)
}

// activeRun returns the name of the run of the same Application that run waits for (Blocking).
func (r *Reconciler) activeRun(ctx context.Context, run *appstudio.PromotionRun) (string, error) {
	runs := &appstudio.PromotionRunList{}
	if err := r.Client.List(ctx, runs, client.InNamespace(run.Namespace), client.MatchingFields{indexes.Application: run.Spec.Application}); err != nil {
		return "", err
	}
	return Blocking(runs.Items, run.Name), nil
}

// Blocking returns the run of runs (one Application's) that the run named name must wait
// for, or "": any other Active run (one run at a time, even when a run created in the same
// second sorts before it), else the oldest earlier unfinished one (creation time, then name).
// Runs being deleted are left out.
func Blocking(runs []appstudio.PromotionRun, name string) string {
	items := append([]appstudio.PromotionRun(nil), runs...)
	sort.Slice(items, func(i, j int) bool {
		if !items[i].CreationTimestamp.Equal(&items[j].CreationTimestamp) {
			return items[i].CreationTimestamp.Before(&items[j].CreationTimestamp)
		}
		return items[i].Name < items[j].Name
	})
	for _, o := range items {
		if o.Name != name && o.Status.State == appstudio.PromotionRunStateActive && o.DeletionTimestamp.IsZero() {
			return o.Name
		}
	}
	for _, o := range items {
		if o.Name == name {
			return ""
		}
		if o.Status.State != appstudio.PromotionRunStateComplete && o.DeletionTimestamp.IsZero() {
			return o.Name
		}
	}
	return ""
}

func (r *Reconciler) validate(ctx context.Context, run *appstudio.PromotionRun, target string) error {
	if err := r.validateSnapshot(ctx, run); err != nil {
		return err
	}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: target}, &appstudio.Environment{}); err != nil {
		if apierrors.IsNotFound(err) {
			return outcome.StalledError("EnvironmentNotFound", "Environment %q does not exist", target)
		}
		return err
	}
	return nil
}

func (r *Reconciler) validateSnapshot(ctx context.Context, run *appstudio.PromotionRun) error {
	snap := &appstudio.Snapshot{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.Snapshot}, snap); err != nil {
		if apierrors.IsNotFound(err) {
			return outcome.StalledError("SnapshotNotFound", "Snapshot %q does not exist", run.Spec.Snapshot)
		}
		return err
	}
	if snap.Spec.Application != run.Spec.Application {
		return outcome.UserError("InvalidSnapshot", "Snapshot %q belongs to application %q, not %q", snap.Name, snap.Spec.Application, run.Spec.Application)
	}
	return nil
}

// GeneratedBindingName is the name of the binding a promotion creates when there is none.
func GeneratedBindingName(application, environment string) string {
	return application + "-" + environment + "-generated-binding"
}

// pointBinding returns the (application, environment) binding, creating it at the run's
// snapshot when there is none; repoint moves an existing binding to the snapshot (done once,
// when the step starts, so that a user's later change is not fought over).
func (r *Reconciler) pointBinding(ctx context.Context, run *appstudio.PromotionRun, env string, repoint bool) (*appstudio.SnapshotEnvironmentBinding, error) {
	list := &appstudio.SnapshotEnvironmentBindingList{}
	if err := r.Client.List(ctx, list, client.InNamespace(run.Namespace), client.MatchingFields{indexes.Application: run.Spec.Application}); err != nil {
		return nil, err
	}
	var found []appstudio.SnapshotEnvironmentBinding
	for _, b := range list.Items {
		if b.Spec.Environment == env {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 0:
		b := &appstudio.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: GeneratedBindingName(run.Spec.Application, env),
				Labels: map[string]string{appstudio.LabelBindingApplication: run.Spec.Application, appstudio.LabelBindingEnvironment: env}},
			Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: run.Spec.Application, Environment: env, Snapshot: run.Spec.Snapshot},
		}
		if err := r.Client.Create(ctx, b); err != nil {
			return nil, err
		}
		ctrl.LoggerFrom(ctx).Info("created binding for promotion", "binding", b.Name)
		return b, nil
	case 1:
		b := &found[0]
		if b.Spec.Snapshot != run.Spec.Snapshot && repoint {
			b.Spec.Snapshot = run.Spec.Snapshot
			if err := r.Client.Update(ctx, b); err != nil {
				return nil, err
			}
			ctrl.LoggerFrom(ctx).Info("pointed binding at snapshot", "binding", b.Name, "snapshot", run.Spec.Snapshot)
		}
		return b, nil
	default:
		return nil, outcome.StalledError("MultipleBindings", "%d SnapshotEnvironmentBindings exist for application %q and environment %q; there must be at most one", len(found), run.Spec.Application, env)
	}
}
