// Package pipeline tests the core pipeline with both binaries' controllers running in this
// process against a real API server and PostgreSQL: GitOpsDeployment → rows → Operation →
// cluster-agent → Argo CD Application → (status written as Argo CD writes it) → database →
// NOTIFY → GitOpsDeployment status. No Argo CD runs here; tests-e2e covers the real one.
package pipeline

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	backend "github.com/gitops-service/gitops-service/backend/app"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	var err error
	if cp, err = testenv.StartControlPlane(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := dbtest.Main(m)
	_ = cp.Stop()
	os.Exit(code)
}

const (
	eventually = 30 * time.Second
	poll       = 50 * time.Millisecond
)

// service is a backend and a cluster-agent sharing a database, one tenant namespace and
// one engine namespace.
type service struct {
	t        *testing.T
	g        Gomega
	ctx      context.Context
	tenant   string
	engine   string
	database db.Config
	keys     string
}

// startService starts a backend and the cluster-agent of its default engine instance;
// mutate adjusts the backend's options.
func startService(t *testing.T, mutate ...func(*backend.Options)) *service {
	t.Helper()
	s := &service{t: t, g: NewWithT(t), ctx: context.Background(),
		tenant: cp.NewNamespace(t, "tenant-"), engine: cp.NewNamespace(t, "argocd-"),
		database: dbtest.NewConfig(t), keys: writeKeyring(t)}
	backendOpts := &backend.Options{Database: s.database, EngineNamespace: s.engine, EngineCluster: "default",
		MaxConcurrentReconciles: 2, OperationRetention: time.Minute, KeysFile: s.keys}
	for _, m := range mutate {
		m(backendOpts)
	}
	cp.RunManager(t, []string{s.tenant, s.engine}, backendOpts.Setup, backend.ManagerOptions)
	s.startAgent(s.engine)
	return s
}

// startAgent starts a cluster-agent for the engine instance in namespace engine (it
// registers the instance).
func (s *service) startAgent(engine string) {
	s.t.Helper()
	cp.RunManager(s.t, []string{engine}, s.agentOptions(engine, "default").Setup)
}

// agentOptions are the options of a cluster-agent of the service for the engine instance
// in namespace engine on the engine cluster named cluster.
func (s *service) agentOptions(engine, cluster string) *agent.Options {
	opts := &agent.Options{DB: s.database, ApplicationDeletionTimeout: 2 * time.Second, MaxConcurrentReconciles: 2,
		SkipNameValidation: true, CredentialsKeysFile: s.keys, StatusHold: agent.DefaultStatusHold}
	opts.Engine.Namespace, opts.Engine.ClusterName = engine, cluster
	return opts
}

func (s *service) deploy(name string, typ v1.GitOpsDeploymentSpecType, mutate ...func(*v1.GitOpsDeployment)) *v1.GitOpsDeployment {
	s.t.Helper()
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.tenant},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "environments/dev"},
			Type:   typ,
		},
	}
	for _, m := range mutate {
		m(depl)
	}
	s.g.Expect(cp.Client.Create(s.ctx, depl)).To(Succeed())
	return depl
}

// application waits for the Argo CD Application of depl and returns it.
func (s *service) application(depl *v1.GitOpsDeployment) *argov1alpha1.Application {
	s.t.Helper()
	app := &argov1alpha1.Application{}
	s.g.Eventually(func() error {
		return cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: argocd.ApplicationName(depl.UID)}, app)
	}, eventually, poll).Should(Succeed())
	return app
}

// argoReports writes an Application's status as Argo CD's application-controller does.
func (s *service) argoReports(depl *v1.GitOpsDeployment, mutate func(*argov1alpha1.ApplicationStatus)) {
	s.t.Helper()
	s.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := s.application(depl)
		mutate(&app.Status)
		return cp.Client.Update(s.ctx, app)
	})).To(Succeed())
}

func (s *service) get(obj client.Object) client.Object {
	s.t.Helper()
	s.g.Expect(cp.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

func TestDeploymentBecomesAnArgoCDApplicationAndReportsItsStatus(t *testing.T) {
	t.Parallel()
	s := startService(t)
	depl := s.deploy("web", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue}}
	})

	app := s.application(depl)
	s.g.Expect(app.Spec.Source.RepoURL).To(Equal("https://github.com/example/gitops"))
	s.g.Expect(app.Spec.Destination).To(Equal(argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: s.tenant}))
	s.g.Expect(app.Spec.SyncPolicy.Automated).NotTo(BeNil())
	s.g.Expect([]string(app.Spec.SyncPolicy.SyncOptions)).To(ContainElement("CreateNamespace=true"))
	s.g.Expect(app.Finalizers).To(ContainElement(argov1alpha1.BackgroundPropagationPolicyFinalizer))
	project := &argov1alpha1.AppProject{}
	s.g.Expect(cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: app.Spec.Project}, project)).To(Succeed())
	s.g.Expect(project.Spec.SourceRepos).To(Equal([]string{"https://github.com/example/gitops"}))
	s.g.Expect(project.Spec.Destinations).To(ContainElement(argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: s.tenant}))

	s.argoReports(depl, func(st *argov1alpha1.ApplicationStatus) {
		st.Sync = argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "0123abcd",
			ComparedTo: argov1alpha1.ComparedTo{Source: *app.Spec.Source, Destination: app.Spec.Destination}}
		st.Health.Status = "Healthy"
		st.Resources = []argov1alpha1.ResourceStatus{{Version: "v1", Kind: "ConfigMap", Namespace: s.tenant, Name: "settings", Status: argov1alpha1.SyncStatusCodeSynced}}
	})
	s.g.Eventually(func() v1.GitOpsDeploymentStatus {
		return s.get(depl).(*v1.GitOpsDeployment).Status
	}, eventually, poll).Should(And(
		HaveField("Sync", v1.SyncStatus{Status: v1.SyncStatusCodeSynced, Revision: "0123abcd"}),
		HaveField("Health.Status", v1.HealthStatusCodeHealthy),
		HaveField("Resources", ConsistOf(HaveField("Name", "settings"))),
		HaveField("ReconciledState.Source.Path", "environments/dev"),
	))

	// A ComparisonError from Argo CD shows, and resolves when Argo CD clears it.
	s.argoReports(depl, func(st *argov1alpha1.ApplicationStatus) {
		st.Conditions = []argov1alpha1.ApplicationCondition{{Type: argov1alpha1.ApplicationConditionComparisonError, Message: "path does not exist"}}
	})
	comparisonError := func() *v1.GitOpsDeploymentCondition {
		for _, c := range s.get(depl).(*v1.GitOpsDeployment).Status.Conditions {
			if c.Type == v1.GitOpsDeploymentConditionComparisonError {
				return &c
			}
		}
		return nil
	}
	s.g.Eventually(comparisonError, eventually, poll).Should(And(HaveField("Status", v1.GitOpsConditionStatusTrue), HaveField("Message", "path does not exist")))
	s.argoReports(depl, func(st *argov1alpha1.ApplicationStatus) { st.Conditions = nil })
	s.g.Eventually(comparisonError, eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusFalse), HaveField("Reason", v1.GitOpsDeploymentReasonComparisonErrorResolved)))
}

func TestSpecChangesReachTheApplication(t *testing.T) {
	t.Parallel()
	s := startService(t)
	depl := s.deploy("web", v1.GitOpsDeploymentSpecTypeAutomated)
	s.application(depl)
	s.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := s.get(depl).(*v1.GitOpsDeployment)
		latest.Spec.Source.Path, latest.Spec.Source.TargetRevision = "environments/prod", "v2"
		return cp.Client.Update(s.ctx, latest)
	})).To(Succeed())
	s.g.Eventually(func() *argov1alpha1.ApplicationSource { return s.application(depl).Spec.Source }, eventually, poll).
		Should(And(HaveField("Path", "environments/prod"), HaveField("TargetRevision", "v2")))
}

func TestDeletionWithFinalizerWaitsForTheApplication(t *testing.T) {
	t.Parallel()
	s := startService(t)
	depl := s.deploy("web", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Finalizers = []string{v1.FinalizerResourcesFinalizer}
	})
	app := s.application(depl)
	s.g.Expect(cp.Client.Delete(s.ctx, depl)).To(Succeed())

	// No Argo CD prunes here: the agent's fallback removes Argo CD's finalizer after 2s,
	// then the deletion operation finishes and the backend releases the GitOpsDeployment.
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(s.ctx, client.ObjectKeyFromObject(app), &argov1alpha1.Application{}))
	}, eventually, poll).Should(BeTrue())
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(s.ctx, client.ObjectKeyFromObject(depl), &v1.GitOpsDeployment{}))
	}, eventually, poll).Should(BeTrue())
}

func TestSyncRunSyncsAManualDeployment(t *testing.T) {
	t.Parallel()
	s := startService(t)
	depl := s.deploy("manual", v1.GitOpsDeploymentSpecTypeManual)
	s.g.Expect(s.application(depl).Spec.SyncPolicy.Automated).To(BeNil())
	run := &v1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Name: "sync", Namespace: s.tenant},
		Spec:       v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "manual", RevisionID: "0123abcd"},
	}
	s.g.Expect(cp.Client.Create(s.ctx, run)).To(Succeed())

	var op *argov1alpha1.Operation
	s.g.Eventually(func() *argov1alpha1.Operation {
		op = s.application(depl).Operation
		return op
	}, eventually, poll).ShouldNot(BeNil())
	s.g.Expect(op.Sync.Revision).To(Equal("0123abcd"))
	s.g.Expect([]string(op.Sync.SyncOptions)).To(ContainElement("PrunePropagationPolicy=background"))

	// Argo CD runs the sync and records it.
	s.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := s.application(depl)
		now := metav1.Now()
		app.Status.OperationState = &argov1alpha1.OperationState{Operation: *app.Operation, Phase: "Succeeded",
			Message: "successfully synced", StartedAt: now, FinishedAt: &now}
		app.Operation = nil
		app.Status.Sync = argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "0123abcd"}
		app.Status.Health.Status = "Healthy"
		return cp.Client.Update(s.ctx, app)
	})).To(Succeed())
	s.g.Eventually(func() v1.GitOpsDeploymentSyncRunStatus {
		return s.get(run).(*v1.GitOpsDeploymentSyncRun).Status
	}, eventually, poll).Should(And(
		HaveField("SyncStatus", v1.SyncStatusCodeSynced),
		HaveField("Health", v1.HealthStatusCodeHealthy),
		HaveField("Conditions", ContainElement(HaveField("Message", "Successfully completed synchronize operation."))),
	))
}
