// Package app wires the appstudio-controller (public so that integration tests can run it
// in-process): its flags and controllers. The controllers translate the AppStudio API into
// the core GitOps Service API; they need no database. With --enable-webhooks it also serves
// the AppStudio API's validating admission webhooks.
package app

import (
	"context"
	"flag"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	toolchain "github.com/gitops-service/gitops-service/api/toolchain/v1alpha1"

	"github.com/gitops-service/gitops-service/appstudio-controller/internal/binding"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/bindinggc"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/dtbinder"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/environment"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/indexes"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/promotion"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/provisioner"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/sandbox"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/webhook"
	"github.com/gitops-service/gitops-service/backend-shared/certmetrics"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

// Options are the appstudio-controller's own flags.
type Options struct {
	// MaxConcurrentReconciles bounds parallel reconciles per controller.
	MaxConcurrentReconciles int
	// ProvisionerAPIServerURL is the API server URL written into the kubeconfigs of the
	// built-in namespace provisioner; empty disables that provisioner.
	ProvisionerAPIServerURL string
	// ProvisionerMaxNamespaces bounds the namespaces the built-in provisioner makes for the
	// claims of one namespace (tenant); 0 means no bound.
	ProvisionerMaxNamespaces int
	// PromotionTimeout is how long a PromotionRun waits for every component to be Synced
	// and Healthy before it completes with Failure.
	PromotionTimeout time.Duration
	// SandboxProvisioner runs the appstudio.redhat.com/devsandbox provisioner (package
	// sandbox), which provisions DeploymentTargets through the Developer Sandbox's
	// SpaceRequests. It is skipped, with a log line, when the API server does not serve
	// SpaceRequests (toolchain.dev.openshift.com/v1alpha1) at start-up.
	SandboxProvisioner bool
	// BindingApplicationGrace is how long a SnapshotEnvironmentBinding's Application
	// (spec.application) may be missing before the binding is deleted (package bindinggc).
	// Zero (the zero value of Options; the flag defaults to 3m) disables that controller. It
	// is also skipped, with a log line, when the API server does not serve
	// applications.appstudio.redhat.com at start-up.
	BindingApplicationGrace time.Duration
	// DeploymentTargetStuckTermination is how long a deleted DeploymentTarget may keep its
	// provisioner's finalizer before its phase is Failed; zero means 2m.
	DeploymentTargetStuckTermination time.Duration
	// EnableWebhooks serves the validating admission webhooks (package webhook) on the
	// manager's webhook server.
	EnableWebhooks bool
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "Parallel reconciles per controller.")
	fs.StringVar(&o.ProvisionerAPIServerURL, "namespace-provisioner-api-url", "",
		"API server URL (as reachable by Argo CD) written into the kubeconfigs of the built-in "+provisioner.Name+
			" DeploymentTarget provisioner; empty disables the provisioner.")
	fs.IntVar(&o.ProvisionerMaxNamespaces, "namespace-provisioner-max-namespaces", 20,
		"Most namespaces the built-in "+provisioner.Name+" provisioner makes for the claims of one namespace (tenant); 0 means no bound. "+
			"A claim past it waits, with the condition Provisioned=False (ProvisioningLimitReached).")
	fs.BoolVar(&o.SandboxProvisioner, "devsandbox-provisioner", true,
		"Run the "+sandbox.Name+" DeploymentTarget provisioner, which creates Developer Sandbox SpaceRequests; "+
			"it is skipped when the API server does not serve toolchain.dev.openshift.com/v1alpha1 SpaceRequests.")
	fs.DurationVar(&o.PromotionTimeout, "promotion-timeout", 10*time.Minute, "How long a PromotionRun waits for all components to be Synced and Healthy before it fails "+
		"(per step of an automated PromotionRun: step k fails k timeouts after the run started).")
	fs.DurationVar(&o.BindingApplicationGrace, "binding-application-grace", bindinggc.DefaultGrace,
		"Delete a SnapshotEnvironmentBinding whose Application (spec.application) has not existed for this long; 0 disables it. "+
			"It is skipped when the API server does not serve appstudio.redhat.com/v1alpha1 Applications.")
	fs.DurationVar(&o.DeploymentTargetStuckTermination, "deploymenttarget-stuck-termination", dtbinder.DefaultStuckTermination,
		"Set a deleted DeploymentTarget's phase to Failed when its provisioner's finalizer is still there after this long.")
	fs.BoolVar(&o.EnableWebhooks, "enable-webhooks", false, "Serve the validating admission webhooks (port 9443, serving certificate tls.crt/tls.key in /tmp/k8s-webhook-server/serving-certs).")
}

// ManagerOptions adjusts the appstudio-controller's manager: Secrets are watched by their
// metadata and read from the API server (manageropts.UncachedSecrets).
func ManagerOptions(o *ctrl.Options) { manageropts.UncachedSecrets(o) }

// Setup adds the controllers to mgr.
func (o *Options) Setup(ctx context.Context, mgr ctrl.Manager, log logr.Logger) error {
	workers := o.MaxConcurrentReconciles
	if workers <= 0 {
		workers = 1
	}
	timeout := o.PromotionTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	if err := indexes.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := (&environment.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("environment-controller"), MaxConcurrentReconciles: workers,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := (&binding.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("snapshotenvironmentbinding-controller"), MaxConcurrentReconciles: workers,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := (&dtbinder.ClaimReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("deploymenttargetclaim-binder"), MaxConcurrentReconciles: workers,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := (&dtbinder.TargetReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("deploymenttarget-binder"), MaxConcurrentReconciles: workers,
		StuckTermination: o.DeploymentTargetStuckTermination,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if o.EnableWebhooks {
		if err := webhook.Setup(ctx, mgr); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
		certmetrics.Watch("webhook", certmetrics.WebhookCertFile(mgr.GetWebhookServer()), ctrl.Log.WithName("metrics"))
	}
	if o.ProvisionerAPIServerURL != "" {
		if err := (&provisioner.ClaimReconciler{
			Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor("namespace-provisioner"),
			APIServerURL: o.ProvisionerAPIServerURL, MaxConcurrentReconciles: workers, MaxNamespaces: o.ProvisionerMaxNamespaces,
		}).SetupWithManager(ctx, mgr); err != nil {
			return err
		}
		if err := (&provisioner.TargetReconciler{
			Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor("namespace-provisioner"),
			MaxConcurrentReconciles: workers,
		}).SetupWithManager(ctx, mgr); err != nil {
			return err
		}
	} else {
		log.Info("namespace provisioner disabled", "flag", "namespace-provisioner-api-url")
	}
	if err := o.setupSandbox(ctx, mgr, log, workers); err != nil {
		return err
	}
	if err := o.setupBindingGC(ctx, mgr, log, workers); err != nil {
		return err
	}
	if err := (&promotion.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("promotionrun-controller"),
		Timeout: timeout, MaxConcurrentReconciles: workers,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	return (&promotion.SnapshotReconciler{Client: mgr.GetClient(), MaxConcurrentReconciles: workers}).SetupWithManager(ctx, mgr)
}

// setupSandbox adds the devsandbox provisioner when it is enabled and SpaceRequests are served.
func (o *Options) setupSandbox(ctx context.Context, mgr ctrl.Manager, log logr.Logger, workers int) error {
	if !o.SandboxProvisioner {
		log.Info("devsandbox provisioner disabled", "flag", "devsandbox-provisioner")
		return nil
	}
	gvk := toolchain.GroupVersion.WithKind("SpaceRequest")
	if ok, err := served(mgr, gvk); err != nil || !ok {
		if err == nil {
			log.Info("devsandbox provisioner disabled: the API server does not serve SpaceRequests", "group", gvk.Group)
		}
		return err
	}
	if s := mgr.GetScheme(); !s.IsVersionRegistered(toolchain.GroupVersion) {
		if err := toolchain.AddToScheme(s); err != nil {
			return err
		}
	}
	if err := (&sandbox.ClaimReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("devsandbox-provisioner"), MaxConcurrentReconciles: workers,
	}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	return (&sandbox.TargetReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("devsandbox-provisioner"), MaxConcurrentReconciles: workers,
	}).SetupWithManager(ctx, mgr)
}

// setupBindingGC adds the controller that deletes bindings whose Application is gone, when it
// is enabled and Applications are served. It lists bindings through the spec.application
// index that the promotion controller registers.
func (o *Options) setupBindingGC(ctx context.Context, mgr ctrl.Manager, log logr.Logger, workers int) error {
	if o.BindingApplicationGrace <= 0 {
		log.Info("binding application garbage collection disabled", "flag", "binding-application-grace")
		return nil
	}
	if ok, err := served(mgr, bindinggc.ApplicationGVK); err != nil || !ok {
		if err == nil {
			log.Info("binding application garbage collection disabled: the API server does not serve Applications",
				"group", bindinggc.ApplicationGVK.Group, "version", bindinggc.ApplicationGVK.Version)
		}
		return err
	}
	return (&bindinggc.Reconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor(bindinggc.Name),
		Grace: o.BindingApplicationGrace, MaxConcurrentReconciles: workers,
	}).SetupWithManager(ctx, mgr)
}

// served reports whether the API server serves gvk, according to the manager's RESTMapper.
func served(mgr ctrl.Manager, gvk schema.GroupVersionKind) (bool, error) {
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
