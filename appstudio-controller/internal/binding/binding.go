// Package binding reconciles SnapshotEnvironmentBindings into one automated GitOpsDeployment
// per component listed in the binding's status.components (written by the Application
// Service), and reports the deployments' sync and health status back on the binding.
package binding

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/environment"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/errcond"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/indexes"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// CopiedLabelPrefix is the prefix of the binding's label keys that are copied onto its
// GitOpsDeployments.
const CopiedLabelPrefix = "appstudio.openshift.io"

// ComponentStatusRetry is how soon a binding without components is looked at again, in case
// the Application Service's status write is missed (it requeues the binding first).
const ComponentStatusRetry = time.Minute

// Reconciler reconciles SnapshotEnvironmentBindings.
type Reconciler struct {
	Client                  client.Client
	Recorder                record.EventRecorder
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings/finalizers,verbs=update
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments;deploymenttargetclaims;deploymenttargets,verbs=get;list;watch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller: bindings are requeued when their
// GitOpsDeployments change (drift, deletion, status), when their Environment changes, and
// when another binding of the same application and environment changes (see duplicate).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.SnapshotEnvironmentBinding{}).
		Owns(&v1.GitOpsDeployment{}).
		Watches(&appstudio.Environment{}, handler.EnqueueRequestsFromMapFunc(r.forEnvironment)).
		Watches(&appstudio.SnapshotEnvironmentBinding{}, handler.EnqueueRequestsFromMapFunc(r.forSiblings)).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("snapshotenvironmentbinding").
		Complete(r)
}

func (r *Reconciler) forEnvironment(ctx context.Context, o client.Object) []reconcile.Request {
	list := &appstudio.SnapshotEnvironmentBindingList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexes.BindingEnvironment: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing bindings of environment")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, b := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
	}
	return reqs
}

// forSiblings requeues the other bindings of a binding's application and environment: when
// the oldest of them is deleted, the next one takes over.
func (r *Reconciler) forSiblings(ctx context.Context, o client.Object) []reconcile.Request {
	b := o.(*appstudio.SnapshotEnvironmentBinding)
	list := &appstudio.SnapshotEnvironmentBindingList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingFields{indexes.BindingEnvironment: b.Spec.Environment}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing bindings of environment")
		return nil
	}
	var reqs []reconcile.Request
	for _, other := range list.Items {
		if other.Name != b.Name && other.Spec.Application == b.Spec.Application {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: other.Namespace, Name: other.Name}})
		}
	}
	return reqs
}

// duplicate returns the name of the binding that b duplicates: the oldest (creation time,
// then name) binding, not being deleted, of b's application and environment in b's namespace,
// when that is not b; "" when b is that binding. At most one binding per (application,
// environment) is enforced by the validating webhook, but bindings created while the webhook
// was unavailable can exist.
func (r *Reconciler) duplicate(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding) (string, error) {
	list := &appstudio.SnapshotEnvironmentBindingList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingFields{indexes.BindingEnvironment: b.Spec.Environment}); err != nil {
		return "", err
	}
	winner := b
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == b.Name || o.Spec.Application != b.Spec.Application || !o.DeletionTimestamp.IsZero() {
			continue
		}
		if o.CreationTimestamp.Before(&winner.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&winner.CreationTimestamp) && o.Name < winner.Name) {
			winner = o
		}
	}
	if winner == b {
		return "", nil
	}
	return winner.Name, nil
}

// Reconcile makes the binding's GitOpsDeployments match its components, and reports status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &appstudio.SnapshotEnvironmentBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	start := b.DeepCopy()
	err := r.reconcile(ctx, b)
	changed := errcond.Apply(&b.Status.BindingConditions, b.Generation, err)
	progress, sErr := r.summarize(ctx, b)
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}.End(ctx, b, start, outcome.Status{
		Conditions:         outcome.MetaConditions{List: &b.Status.Conditions, Generation: b.Generation},
		ObservedGeneration: &b.Status.ObservedGeneration,
		Written: func() {
			if changed {
				r.recordError(b, err)
			}
			r.recordDeployed(b, start)
		},
	}, progress, internalFirst(errors.Join(err, sErr)))
}

// internalFirst is what a reconcile that met several errors reports: the internal ones when
// there are any, so that they are retried with backoff (a user error among them shows again
// on the retry), else err. The ErrorOccurred condition shows the first user error still.
func internalFirst(err error) error {
	var internal []error
	for _, e := range leaves(err) {
		if outcome.As(e) == nil {
			internal = append(internal, e)
		}
	}
	if len(internal) > 0 {
		return errors.Join(internal...)
	}
	return err
}

// leaves flattens joined errors.
func leaves(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == nil {
			return nil
		}
		return []error{err}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}

// recordError records the change of the ErrorOccurred condition that api.md documents.
func (r *Reconciler) recordError(b *appstudio.SnapshotEnvironmentBinding, err error) {
	if r.Recorder == nil {
		return
	}
	if err == nil {
		r.Recorder.Event(b, corev1.EventTypeNormal, appstudio.ReasonErrorOccurredResolved, "The binding's earlier error is resolved")
		return
	}
	reason, msg := errcond.Shown(err)
	r.Recorder.Event(b, corev1.EventTypeWarning, reason, msg)
}

// recordDeployed records an Event when every component has become deployed since start.
func (r *Reconciler) recordDeployed(b, start *appstudio.SnapshotEnvironmentBinding) {
	c := meta.FindStatusCondition(b.Status.ComponentDeploymentConditions, appstudio.ComponentDeploymentConditionAllComponentsDeployed)
	if r.Recorder == nil || c == nil || c.Status != metav1.ConditionTrue ||
		meta.IsStatusConditionTrue(start.Status.ComponentDeploymentConditions, c.Type) {
		return
	}
	r.Recorder.Event(b, corev1.EventTypeNormal, c.Reason, c.Message)
}

// destination resolves where the binding's Environment deploys to.
func (r *Reconciler) destination(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding) (v1.ApplicationDestination, error) {
	env := &appstudio.Environment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Environment}, env); err != nil {
		if apierrors.IsNotFound(err) {
			return v1.ApplicationDestination{}, outcome.StalledError(appstudio.SnapshotEnvironmentBindingReasonEnvironmentNotFound, "Environment %q does not exist in namespace %q", b.Spec.Environment, b.Namespace)
		}
		return v1.ApplicationDestination{}, err
	}
	creds, claim := environment.Credentials(env), environment.ClaimName(env)
	switch {
	case creds != nil && claim != "":
		return v1.ApplicationDestination{}, outcome.StalledError(appstudio.SnapshotEnvironmentBindingReasonEnvironmentNotReady, "Environment %q is invalid: it sets both a DeploymentTargetClaim and cluster credentials", env.Name)
	case creds != nil && creds.TargetNamespace == "":
		// The CRD requires it; Environments stored before that rule may still lack it.
		return v1.ApplicationDestination{}, outcome.StalledError(appstudio.SnapshotEnvironmentBindingReasonMissingTargetNamespace,
			"Environment %q deploys to a remote cluster (spec.unstableConfigurationFields.kubernetesCredentials) but sets no targetNamespace; "+
				"set spec.unstableConfigurationFields.kubernetesCredentials.targetNamespace to the namespace to deploy to", env.Name)
	case creds != nil:
		return v1.ApplicationDestination{Environment: environment.ManagedEnvironmentName(env.Name), Namespace: creds.TargetNamespace}, nil
	case claim != "":
		dt, err := environment.BoundTarget(ctx, r.Client, env.Namespace, claim)
		if e := outcome.As(err); e != nil {
			// As the Environment sees it (a claim not bound yet is a wait, not a failure).
			return v1.ApplicationDestination{}, &outcome.Error{Kind: e.Kind, Reason: appstudio.SnapshotEnvironmentBindingReasonEnvironmentNotReady, RetryAfter: e.RetryAfter,
				Message: fmt.Sprintf("Environment %q cannot be deployed to yet: %s", env.Name, e.Message)}
		} else if err != nil {
			return v1.ApplicationDestination{}, err
		}
		return v1.ApplicationDestination{Environment: environment.ManagedEnvironmentName(env.Name), Namespace: dt.Spec.KubernetesClusterCredentials.DefaultNamespace}, nil
	default:
		return v1.ApplicationDestination{Namespace: b.Namespace}, nil
	}
}

// Desired returns the GitOpsDeployments of the binding (without owner references), or an
// outcome user error when its component status cannot be used. Components whose
// GitOpsDeployment name would not be a valid object name are left out, and reported in a user
// error (appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName) returned with the deployments of the other components.
func Desired(b *appstudio.SnapshotEnvironmentBinding, dest v1.ApplicationDestination) ([]*v1.GitOpsDeployment, error) {
	copied, labelErr := copiedLabels(b.Labels)
	seen := map[string]bool{}
	componentOf := map[string]string{} // generated name -> component
	var out []*v1.GitOpsDeployment
	var invalid []string
	for _, c := range b.Status.Components {
		if seen[c.Name] {
			return nil, outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonDuplicateComponents, "status.components lists component %q more than once", c.Name)
		}
		seen[c.Name] = true
		// Shortening can give two components one name: "<b>-<app>-<env>-<c>" in full is also
		// the shortened name of component "<app>-<env>-<c>" (whose full name is past
		// MaxNameLength). They must not share a GitOpsDeployment.
		name := DeploymentName(b.Name, b.Spec.Application, b.Spec.Environment, c.Name)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf("component %q: GitOpsDeployment name %q is not a valid object name: %s",
				c.Name, name, strings.Join(errs, "; ")))
			continue
		}
		if other, ok := componentOf[name]; ok {
			return nil, outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonNameConflict, "components %q and %q would both be deployed by GitOpsDeployment %q; rename one of them", other, c.Name, name)
		}
		componentOf[name] = c.Name
		repo := c.GitOpsRepository
		if repo.URL == "" || repo.Path == "" {
			return nil, outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonInvalidComponentStatus, "component %q has no GitOps repository URL or path in status.components", c.Name)
		}
		out = append(out, &v1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: b.Namespace,
				Name:      name,
				Labels:    withCopied(labels(b.Spec.Application, c.Name, b.Spec.Environment), copied),
			},
			Spec: v1.GitOpsDeploymentSpec{
				Source:      v1.ApplicationSource{RepoURL: repo.URL, Path: repo.Path, TargetRevision: repo.Branch},
				Destination: dest,
				Type:        v1.GitOpsDeploymentSpecTypeAutomated,
			},
		})
	}
	if len(invalid) > 0 {
		if out == nil {
			out = []*v1.GitOpsDeployment{} // nothing valid: still delete what is no longer wanted
		}
		return out, errors.Join(outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonInvalidComponentName,
			"%d of %d components cannot be deployed (the others are deployed): %s. The name of each GitOpsDeployment is "+
				"<binding>-<application>-<environment>-<component> (shortened past %d characters) and must be a "+
				"lowercase RFC 1123 subdomain: rename the component (or the binding, application or environment)",
			len(invalid), len(b.Status.Components), strings.Join(invalid, "; "), MaxNameLength), labelErr)
	}
	if labelErr != nil {
		if out == nil {
			out = []*v1.GitOpsDeployment{}
		}
		return out, labelErr
	}
	return out, nil
}

// copiedLabels returns the labels of the binding whose keys start with CopiedLabelPrefix,
// except the application/component/environment labels that the binding sets itself, and a
// user error (appstudio.SnapshotEnvironmentBindingReasonInvalidLabel) naming each label left out because Kubernetes would refuse
// its key or value.
func copiedLabels(in map[string]string) (map[string]string, error) {
	out := map[string]string{}
	var invalid []string
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		if !strings.HasPrefix(k, CopiedLabelPrefix) ||
			k == appstudio.LabelApplication || k == appstudio.LabelComponent || k == appstudio.LabelEnvironment {
			continue
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf("label key %q: %s", k, strings.Join(errs, "; ")))
			continue
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf("label %q value %q: %s", k, v, strings.Join(errs, "; ")))
			continue
		}
		out[k] = v
	}
	if len(invalid) > 0 {
		return out, outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonInvalidLabel,
			"%d labels of the binding cannot be copied onto its GitOpsDeployments (the other labels are copied): %s",
			len(invalid), strings.Join(invalid, "; "))
	}
	return out, nil
}

// withCopied adds the copied labels to own; own's keys are kept.
func withCopied(own, copied map[string]string) map[string]string {
	for k, v := range copied {
		if _, ok := own[k]; !ok {
			own[k] = v
		}
	}
	return own
}

// labels returns the application/component/environment labels; a value that cannot be a
// label value (longer than 63 characters) is left out rather than failing the deployment.
func labels(application, component, env string) map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{
		appstudio.LabelApplication: application,
		appstudio.LabelComponent:   component,
		appstudio.LabelEnvironment: env,
	} {
		if len(validation.IsValidLabelValue(v)) == 0 {
			out[k] = v
		}
	}
	return out
}

func (r *Reconciler) reconcile(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding) error {
	winner, err := r.duplicate(ctx, b)
	if err != nil {
		return err
	}
	if winner != "" {
		// Own nothing: remove what this binding may have generated before the older one was
		// seen (never anything of the older binding: only deployments controlled by b).
		if err := r.deleteOwned(ctx, b, nil); err != nil {
			return err
		}
		return outcome.UserError(appstudio.SnapshotEnvironmentBindingReasonDuplicateBinding,
			"SnapshotEnvironmentBinding %q already binds application %q to environment %q (it is older); this binding duplicates it "+
				"and deploys nothing. Delete this binding, and point %q at the snapshot to deploy instead",
			winner, b.Spec.Application, b.Spec.Environment, winner)
	}
	// While the Application Service reports the GitOps repository as not generated,
	// status.components may be stale: change nothing (what is deployed may work) until it is.
	if c := meta.FindStatusCondition(b.Status.GitOpsRepoConditions, appstudio.GitOpsRepoConditionGitOpsResourcesGenerated); c != nil && c.Status == metav1.ConditionFalse {
		return outcome.StalledError(appstudio.SnapshotEnvironmentBindingReasonGitOpsRepositoryNotReady,
			"The Application Service reports that the GitOps repository resources are not generated (status.gitopsRepoConditions %s is False, reason %q: %s); "+
				"existing GitOpsDeployments are left as they are, and none are generated or changed until it is True again",
			c.Type, c.Reason, c.Message)
	}
	if len(b.Status.Components) == 0 {
		return outcome.TransientError(appstudio.SnapshotEnvironmentBindingReasonWaitingForComponentStatus, ComponentStatusRetry,
			"Waiting for the Application Service to write the components' GitOps repository locations (status.components) before generating GitOpsDeployments")
	}
	dest, err := r.destination(ctx, b)
	if err != nil {
		return err
	}
	want, err := Desired(b, dest)
	if err != nil && want == nil {
		return err
	}
	// err, if any, is about invalid components; the valid ones are deployed all the same.
	errs := []error{err}
	keep := map[string]bool{}
	for _, d := range want {
		keep[d.Name] = true
		if err := r.apply(ctx, b, d); err != nil {
			errs = append(errs, err)
		}
	}
	// Delete the deployments of components that are gone.
	if err := r.deleteOwned(ctx, b, keep); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteOwned deletes the GitOpsDeployments controlled by b whose names are not in keep.
func (r *Reconciler) deleteOwned(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding, keep map[string]bool) error {
	owned, err := r.owned(ctx, b)
	if err != nil {
		return err
	}
	var errs []error
	for i := range owned {
		d := &owned[i]
		if keep[d.Name] {
			continue
		}
		if err := r.Client.Delete(ctx, d, client.Preconditions{UID: &d.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		ctrl.LoggerFrom(ctx).Info("deleted GitOpsDeployment no longer generated", "gitopsDeployment", d.Name)
		if r.Recorder != nil {
			r.Recorder.Eventf(b, corev1.EventTypeNormal, "Deleted", "Deleted GitOpsDeployment %s, no longer generated by the binding", d.Name)
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) owned(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding) ([]v1.GitOpsDeployment, error) {
	list := &v1.GitOpsDeploymentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace)); err != nil {
		return nil, err
	}
	var out []v1.GitOpsDeployment
	for _, d := range list.Items {
		if metav1.IsControlledBy(&d, b) {
			out = append(out, d)
		}
	}
	return out, nil
}

// apply creates want, or reverts drift of the existing deployment of that name.
func (r *Reconciler) apply(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding, want *v1.GitOpsDeployment) error {
	d := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: want.Namespace, Name: want.Name}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		if d.ResourceVersion != "" && !metav1.IsControlledBy(d, b) {
			// Stalled: deleting a foreign object requeues nothing, so it is looked at again later.
			return outcome.StalledError(appstudio.SnapshotEnvironmentBindingReasonNameConflict, "GitOpsDeployment %q already exists and is not owned by this binding; delete or rename it", d.Name)
		}
		if d.Labels == nil {
			d.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			d.Labels[k] = v
		}
		d.Spec.Source = want.Spec.Source
		d.Spec.Destination = want.Spec.Destination
		d.Spec.Type = want.Spec.Type
		d.Spec.SyncPolicy = nil
		return controllerutil.SetControllerReference(b, d, r.Client.Scheme())
	})
	if err != nil {
		return err
	}
	if op != controllerutil.OperationResultNone {
		ctrl.LoggerFrom(ctx).Info("GitOpsDeployment written", "gitopsDeployment", d.Name, "operation", op)
		if r.Recorder != nil {
			r.Recorder.Eventf(b, corev1.EventTypeNormal, "GitOpsDeployment"+capitalize(string(op)), "GitOpsDeployment %s %s", d.Name, op)
		}
	}
	return nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// summarize writes status.gitopsDeployments and componentDeploymentConditions from the
// GitOpsDeployments of the components in status.components, and returns the binding's
// progress towards Ready.
func (r *Reconciler) summarize(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding) (outcome.Progress, error) {
	owned, err := r.owned(ctx, b)
	if err != nil {
		return outcome.Progress{}, err
	}
	byName := map[string]*v1.GitOpsDeployment{}
	for i := range owned {
		byName[owned[i].Name] = &owned[i]
	}
	var list []appstudio.BindingStatusGitOpsDeployment
	seen := map[string]bool{}
	deployed := 0
	for _, c := range b.Status.Components {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		name := DeploymentName(b.Name, b.Spec.Application, b.Spec.Environment, c.Name)
		entry := appstudio.BindingStatusGitOpsDeployment{ComponentName: c.Name}
		if d := byName[name]; d != nil {
			entry.GitOpsDeployment = d.Name
			entry.SyncStatus = appstudio.DeploymentSyncStatus(d.Status.Sync.Status)
			entry.Health = appstudio.DeploymentHealthStatus(d.Status.Health.Status)
			entry.CommitID = d.Status.Sync.Revision
			if d.Status.Sync.Status == v1.SyncStatusCodeSynced && d.Status.Health.Status == v1.HealthStatusCodeHealthy {
				deployed++
			}
		}
		list = append(list, entry)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ComponentName < list[j].ComponentName })
	b.Status.GitOpsDeployments = list
	if len(list) == 0 {
		// Nothing to deploy without an error: the reconcile reports why.
		return outcome.Working(appstudio.SnapshotEnvironmentBindingReasonWaitingForComponentStatus, "No components to deploy", true), nil
	}
	cond := metav1.Condition{
		Type:               appstudio.ComponentDeploymentConditionAllComponentsDeployed,
		Status:             metav1.ConditionFalse,
		Reason:             appstudio.ComponentDeploymentReasonCommitsUnsynced,
		Message:            fmt.Sprintf("%d of %d components deployed", deployed, len(list)),
		ObservedGeneration: b.Generation,
	}
	if deployed == len(list) {
		cond.Status, cond.Reason = metav1.ConditionTrue, appstudio.ComponentDeploymentReasonCommitsSynced
	}
	// Keep AllComponentsDeployed the first (and only) condition of the list.
	meta.SetStatusCondition(&b.Status.ComponentDeploymentConditions, cond)
	return deployment(cond), nil
}

// deployment is the progress of a binding whose GitOpsDeployments are generated, from its
// AllComponentsDeployed condition: Ready once every component is Synced and Healthy, in
// progress (its generation processed: the backend deploys) until then.
func deployment(c metav1.Condition) outcome.Progress {
	if c.Status == metav1.ConditionTrue {
		return outcome.Done(c.Reason, c.Message)
	}
	return outcome.Working(c.Reason, c.Message, false)
}
