package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts/clitest"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	backend "github.com/gitops-service/gitops-service/backend/app"
)

// writeTemp writes data to a new file of the test and returns its path.
func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A second engine cluster: the backend reaches it with the credentials the operator stored
// with `backend engine-instances set-cluster-credentials`, and its cluster-agent's Argo CD
// reaches the service's cluster through --service-cluster-kubeconfig. A tenant drained onto
// it moves there: its Application on the second cluster deploys to the tenant's namespace
// on the service's cluster through the service cluster Secret, reports its status back,
// follows spec changes and goes with its deployment.
func TestATenantMovesToAnEngineInstanceOnASecondCluster(t *testing.T) {
	t.Parallel()
	s := startService(t, func(o *backend.Options) { o.RebalanceInterval = time.Hour }) // a drain runs it at once
	depl := s.deploy("web", v1.GitOpsDeploymentSpecTypeAutomated)
	first := s.application(depl)
	s.argoCompares(s.engine, depl, "rev-first")
	s.g.Eventually(func() string { return s.get(depl).(*v1.GitOpsDeployment).Status.Sync.Revision }, eventually, poll).Should(Equal("rev-first"))

	east, err := testenv.StartControlPlane(testenv.Options{})
	s.g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = east.Stop() })
	eastEngine := east.NewNamespace(t, "argocd-")

	// An agent for the engine cluster refuses to start before the backend can reach it,
	// and registers nothing.
	serviceKubeconfig, _, err := cp.ServiceAccountKubeconfig(s.ctx, cp.NewNamespace(t, "sa-"), "argocd-east")
	s.g.Expect(err).NotTo(HaveOccurred())
	agentOpts := s.agentOptions(eastEngine, "east")
	agentOpts.ServiceClusterInterval = time.Second
	agentOpts.Engine.ServiceClusterKubeconfig = writeTemp(t, "service.kubeconfig", serviceKubeconfig)
	early, err := ctrl.NewManager(east.Config, ctrl.Options{Scheme: east.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(agentOpts.Setup(s.ctx, early, logr.Discard())).To(MatchError(ContainSubstring("set-cluster-credentials --cluster east")))
	clusters, err := db.NewStore(nil).ListEngineClusters(s.ctx, dbtest.Open(t, s.database))
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(clusters).NotTo(ContainElement(HaveField("Name", "east")))

	// The operator stores how the backend reaches the engine cluster ...
	backendKubeconfig, _, err := east.ServiceAccountKubeconfig(s.ctx, east.NewNamespace(t, "sa-"), "gitops-backend")
	s.g.Expect(err).NotTo(HaveOccurred())
	res := clitest.Run(t, backend.NewCommand(), "engine-instances", "set-cluster-credentials", "--cluster=east",
		"--kubeconfig="+writeTemp(t, "east.kubeconfig", backendKubeconfig), "--credentials-keys-file="+s.keys,
		"--database-url="+s.database.URL, "--database-allow-insecure")
	s.g.Expect(res.Err).NotTo(HaveOccurred(), res.Stderr)
	// ... and starts the cluster-agent there, with a kubeconfig of the service's cluster.
	east.RunManager(t, []string{eastEngine}, agentOpts.Setup)

	// Draining the first instance moves the tenant to the second cluster.
	database := dbtest.Open(t, s.database)
	old := s.instanceIn(s.engine)
	old.State = db.EngineInstanceDraining
	s.g.Expect(db.NewStore(nil).UpdateEngineInstance(s.ctx, database, old)).To(Succeed())

	serviceServer := argocd.NormalizeAPIURL(cp.Config.Host)
	appKey := client.ObjectKey{Namespace: eastEngine, Name: argocd.ApplicationName(depl.UID)}
	moved := &argov1alpha1.Application{}
	s.g.Eventually(func() error { return east.Client.Get(s.ctx, appKey, moved) }, eventually, poll).Should(Succeed())
	s.g.Expect(moved.Spec.Destination).To(Equal(argov1alpha1.ApplicationDestination{Server: serviceServer, Namespace: s.tenant}),
		"the tenant's namespace on the service's cluster, not the second cluster's own")
	s.g.Expect(moved.Spec.Source).To(Equal(first.Spec.Source))
	project := &argov1alpha1.AppProject{}
	s.g.Eventually(func() error {
		return east.Client.Get(s.ctx, client.ObjectKey{Namespace: eastEngine, Name: moved.Spec.Project}, project)
	}, eventually, poll).Should(Succeed())
	s.g.Expect(project.Spec.Destinations).To(Equal([]argov1alpha1.ApplicationDestination{{Server: serviceServer, Namespace: s.tenant}}))
	// The backend signals the second cluster's agent with an Operation CR there. The agent
	// may have carried the operations out before it appears: one that is taking its signal
	// (as it does when it starts) finds new Waiting operations without a CR.
	s.g.Eventually(func(g Gomega) {
		operations := &v1.OperationList{}
		g.Expect(east.Client.List(s.ctx, operations, client.InNamespace(eastEngine))).To(Succeed())
		g.Expect(operations.Items).NotTo(BeEmpty(), "the backend created the Operation CR on the second cluster")
	}, eventually, poll).Should(Succeed())

	// The service cluster Secret gives the second cluster's Argo CD working credentials.
	secret := &corev1.Secret{}
	s.g.Eventually(func() error {
		return east.Client.Get(s.ctx, client.ObjectKey{Namespace: eastEngine, Name: argocd.ServiceClusterSecretName}, secret)
	}, eventually, poll).Should(Succeed())
	s.g.Expect(secret.Labels).To(HaveKeyWithValue(argocd.LabelSecretType, argocd.SecretTypeCluster))
	s.g.Expect(string(secret.Data["server"])).To(Equal(serviceServer))
	var config argov1alpha1.ClusterConfig
	s.g.Expect(json.Unmarshal(secret.Data["config"], &config)).To(Succeed())
	cs, err := clusterClient(serviceServer, config)
	s.g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().ConfigMaps(s.tenant).List(s.ctx, metav1.ListOptions{})
	s.g.Expect(err).NotTo(HaveOccurred())
	// Deleted by hand, it comes back.
	s.g.Expect(east.Client.Delete(s.ctx, secret)).To(Succeed())
	s.g.Eventually(func() error {
		return east.Client.Get(s.ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})
	}, eventually, poll).Should(Succeed())

	// Once the second cluster's Argo CD has compared it, the first instance lets its
	// Application go and the status comes from the second cluster.
	s.argoComparesOn(east.Client, eastEngine, depl, "rev-east")
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(s.ctx, client.ObjectKeyFromObject(first), &argov1alpha1.Application{}))
	}, eventually, poll).Should(BeTrue())
	s.g.Eventually(func() string { return s.get(depl).(*v1.GitOpsDeployment).Status.Sync.Revision }, eventually, poll).Should(Equal("rev-east"))

	// A spec change reaches the second cluster; deleting the deployment deletes the Application there.
	s.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := s.get(depl).(*v1.GitOpsDeployment)
		latest.Spec.Source.Path = "environments/prod"
		return cp.Client.Update(s.ctx, latest)
	})).To(Succeed())
	s.g.Eventually(func() string {
		s.g.Expect(east.Client.Get(s.ctx, appKey, moved)).To(Succeed())
		return moved.Spec.Source.Path
	}, eventually, poll).Should(Equal("environments/prod"))
	s.g.Expect(moved.Spec.Destination.Server).To(Equal(serviceServer))
	s.g.Expect(cp.Client.Delete(s.ctx, depl)).To(Succeed())
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(east.Client.Get(s.ctx, appKey, &argov1alpha1.Application{}))
	}, eventually, poll).Should(BeTrue())
}
