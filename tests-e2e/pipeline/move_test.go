package pipeline

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	backend "github.com/gitops-service/gitops-service/backend/app"
)

// observed is a finalizer the test puts on the old instance's Applications, so that their
// deletion can be inspected before they go.
const observed = "test.gitops-service/observed"

// Draining an engine instance moves its tenant to another instance with its own
// cluster-agent: the new instance gets the Applications, AppProjects and cluster Secrets;
// the old one keeps its Applications until the new one has adopted them, then lets them
// go without Argo CD's finalizer (so its Argo CD prunes nothing), and removes the
// tenant's AppProjects and Secrets. The deployments' status never goes blank.
func TestDrainingAnInstanceMovesItsTenantWithoutPruning(t *testing.T) {
	t.Parallel()
	s := startService(t, func(o *backend.Options) { o.RebalanceInterval = time.Hour }) // a drain runs it at once
	kubeconfig, _ := s.deployerKubeconfig()
	s.g.Expect(cp.Client.Create(s.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-creds", Namespace: s.tenant},
		Type:       v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": kubeconfig},
	})).To(Succeed())
	s.g.Expect(cp.Client.Create(s.ctx, &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: s.tenant},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: cp.Config.Host, ClusterCredentialsSecret: "prod-creds",
			Namespaces: []string{"default"}},
	})).To(Succeed())
	local := s.deploy("web", v1.GitOpsDeploymentSpecTypeAutomated)
	remote := s.deploy("remote", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.Destination = v1.ApplicationDestination{Environment: "prod", Namespace: "default"}
	})
	deployments := []*v1.GitOpsDeployment{local, remote}

	// Both run on the first instance, which reports them Synced; the test watches their
	// deletion there.
	oldApps := map[string]*argov1alpha1.Application{}
	for _, depl := range deployments {
		oldApps[depl.Name] = s.application(depl)
		s.argoCompares(s.engine, depl, "rev-old")
		s.g.Eventually(func() string {
			return s.get(depl).(*v1.GitOpsDeployment).Status.Sync.Revision
		}, eventually, poll).Should(Equal("rev-old"))
		s.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			app := &argov1alpha1.Application{}
			if err := cp.Client.Get(s.ctx, client.ObjectKeyFromObject(oldApps[depl.Name]), app); err != nil {
				return err
			}
			app.Finalizers = append(app.Finalizers, observed)
			return cp.Client.Update(s.ctx, app)
		})).To(Succeed())
	}
	clusterSecret := oldApps["remote"].Spec.Destination.Name
	s.g.Expect(clusterSecret).To(HavePrefix("managed-env-"))
	projects := []string{oldApps["web"].Spec.Project, oldApps["remote"].Spec.Project}

	// A second instance with its own agent, then the first is drained.
	second := cp.NewNamespace(t, "argocd-")
	s.startAgent(second)
	database := dbtest.Open(t, s.database)
	store := db.NewStore(nil)
	first := s.instanceIn(s.engine)
	first.State = db.EngineInstanceDraining
	s.g.Expect(store.UpdateEngineInstance(s.ctx, database, first)).To(Succeed())

	// The second instance gets everything; the first keeps its Applications meanwhile.
	for _, depl := range deployments {
		s.g.Eventually(func() error {
			return cp.Client.Get(s.ctx, client.ObjectKey{Namespace: second, Name: argocd.ApplicationName(depl.UID)}, &argov1alpha1.Application{})
		}, eventually, poll).Should(Succeed())
		moved := &argov1alpha1.Application{}
		s.g.Expect(cp.Client.Get(s.ctx, client.ObjectKey{Namespace: second, Name: argocd.ApplicationName(depl.UID)}, moved)).To(Succeed())
		s.g.Expect(moved.Spec).To(Equal(oldApps[depl.Name].Spec), "the same Application, so its Argo CD adopts the deployed resources")
	}
	for _, name := range projects {
		s.g.Eventually(func() error {
			return cp.Client.Get(s.ctx, client.ObjectKey{Namespace: second, Name: name}, &argov1alpha1.AppProject{})
		}, eventually, poll).Should(Succeed())
	}
	s.g.Eventually(func() error {
		return cp.Client.Get(s.ctx, client.ObjectKey{Namespace: second, Name: clusterSecret}, &corev1.Secret{})
	}, eventually, poll).Should(Succeed())
	s.g.Consistently(func() bool {
		for _, old := range oldApps {
			app := &argov1alpha1.Application{}
			if err := cp.Client.Get(s.ctx, client.ObjectKeyFromObject(old), app); err != nil || app.DeletionTimestamp != nil {
				return false
			}
		}
		return true
	}, 3*time.Second, poll).Should(BeTrue(), "not adopted yet: the first instance keeps its Applications")

	// The second instance's Argo CD adopts them; the first lets them go without pruning.
	for _, depl := range deployments {
		s.argoCompares(second, depl, "rev-new")
	}
	for _, old := range oldApps {
		app := &argov1alpha1.Application{}
		s.g.Eventually(func() *metav1.Time {
			s.g.Expect(cp.Client.Get(s.ctx, client.ObjectKeyFromObject(old), app)).To(Succeed())
			return app.DeletionTimestamp
		}, eventually, poll).ShouldNot(BeNil())
		s.g.Expect(app.Finalizers).To(Equal([]string{observed}), "Argo CD's finalizer was removed before the deletion: nothing is pruned")
		s.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := cp.Client.Get(s.ctx, client.ObjectKeyFromObject(old), app); err != nil {
				return err
			}
			app.Finalizers = slices.DeleteFunc(app.Finalizers, func(f string) bool { return f == observed })
			return cp.Client.Update(s.ctx, app)
		})).To(Succeed())
	}
	for _, name := range projects {
		s.g.Eventually(func() bool {
			return apierrors.IsNotFound(cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: name}, &argov1alpha1.AppProject{}))
		}, eventually, poll).Should(BeTrue(), "AppProject %s leaves the first instance", name)
	}
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: clusterSecret}, &corev1.Secret{}))
	}, eventually, poll).Should(BeTrue(), "the cluster Secret leaves the first instance")

	// The deployments report the new instance, and stay on it.
	for _, depl := range deployments {
		s.g.Eventually(func() string {
			return s.get(depl).(*v1.GitOpsDeployment).Status.Sync.Revision
		}, eventually, poll).Should(Equal("rev-new"))
		app, err := store.LocateApplicationOnceTenantFree(s.ctx, database, string(depl.UID))
		s.g.Expect(err).NotTo(HaveOccurred())
		s.g.Expect(app.EngineInstanceID).To(Equal(s.instanceIn(second).ID))
		s.g.Expect(app.MovingFromEngineInstanceID).To(BeEmpty())
	}
	s.g.Expect(cp.Client.Get(s.ctx, client.ObjectKey{Namespace: second, Name: clusterSecret}, &corev1.Secret{})).To(Succeed())
}

// argoCompares writes the status of depl's Application in engine as Argo CD does once it
// compared it (the adoption the move waits for).
func (s *service) argoCompares(engine string, depl *v1.GitOpsDeployment, revision string) {
	s.t.Helper()
	s.argoComparesOn(cp.Client, engine, depl, revision)
}

// argoComparesOn is argoCompares on the engine cluster of c.
func (s *service) argoComparesOn(c client.Client, engine string, depl *v1.GitOpsDeployment, revision string) {
	s.t.Helper()
	s.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := &argov1alpha1.Application{}
		if err := c.Get(s.ctx, client.ObjectKey{Namespace: engine, Name: argocd.ApplicationName(depl.UID)}, app); err != nil {
			return err
		}
		app.Status.Sync = argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: revision,
			ComparedTo: argov1alpha1.ComparedTo{Source: *app.Spec.Source, Destination: app.Spec.Destination}}
		app.Status.Health.Status = "Healthy"
		return c.Update(s.ctx, app)
	})).To(Succeed())
}

// instanceIn returns the engine instance row of namespace engine.
func (s *service) instanceIn(engine string) *db.EngineInstance {
	s.t.Helper()
	instances, err := db.NewStore(nil).ListEngineInstances(s.ctx, dbtest.Open(s.t, s.database))
	s.g.Expect(err).NotTo(HaveOccurred())
	for i := range instances {
		if instances[i].NamespaceName == engine {
			return &instances[i]
		}
	}
	s.t.Fatalf("no engine instance in namespace %s", engine)
	return nil
}
