// Package remoteengine_test runs the service with its only engine instance on a second
// cluster: a real Argo CD and cluster-agent there, the backend, the tenants' namespaces
// and a Git server on the service's cluster. The backend reaches the engine cluster with
// the credentials stored by `backend engine-instances set-cluster-credentials`; Argo CD
// reaches the service's cluster through the Secret the agent keeps from
// --service-cluster-kubeconfig.
package remoteengine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

const (
	engineCluster   = "east"
	engineNamespace = "argocd-east"
)

// startService starts the service's cluster (backend only, no engine instance of its own)
// and the engine cluster with Argo CD and a cluster-agent, and returns both.
func startService(t *testing.T) (*stack.Stack, *testenv.ControlPlane) {
	t.Helper()
	g, ctx := NewWithT(t), t.Context()
	s := stack.StartForTest(t, stack.Options{
		Binaries:  []string{"backend"},
		GitServer: &gitserver.Options{Addr: "127.0.0.1:0", TLS: true},
		// The engine cluster's agent registers the only instance.
		Args:     map[string][]string{"backend": {"--engine-namespace="}},
		Progress: func(what string) { t.Logf("service's cluster: %s", what) },
	}, engineCluster)
	g.Expect(stack.Build(ctx, s.BinDir, "cluster-agent")).To(Succeed())

	t.Log("engine cluster: starting kube-apiserver, etcd, Argo CD and the cluster-agent")
	east, err := testenv.StartControlPlane(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = east.Stop() })
	g.Expect(east.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: engineNamespace}})).To(Succeed())
	g.Expect(stack.InstallArgoCD(ctx, east.Client, engineNamespace)).To(Succeed())
	argo, err := stack.StartArgoCD(ctx, stack.ArgoCDOptions{
		Kubeconfig: east.KubeconfigPath, Namespace: engineNamespace, Dir: filepath.Join(s.LogDir, engineCluster),
		TrustedCAs: map[string][]byte{"127.0.0.1": s.Git.CAPEM},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = argo.Stop() })

	// What an operator does: store how the backend reaches the engine cluster, then start
	// the cluster-agent there with a kubeconfig of the service's cluster.
	run(t, filepath.Join(s.BinDir, "backend"), "engine-instances", "set-cluster-credentials",
		"--cluster="+engineCluster, "--kubeconfig="+east.KubeconfigPath, "--credentials-keys-file="+s.KeysFile,
		"--database-url="+s.DatabaseURL, "--database-allow-insecure")
	agent := "cluster-agent-" + engineCluster
	g.Expect(s.StartInstance(ctx, agent, "cluster-agent", east.KubeconfigPath,
		"--engine-namespace="+engineNamespace, "--engine-cluster="+engineCluster,
		"--service-cluster-kubeconfig="+s.Kubeconfig)).To(Succeed())
	// Cleanups run last first: the agent stops before its API server and Argo CD.
	t.Cleanup(func() { _ = s.Processes[agent].Stop(10 * time.Second) })
	return s, east
}

// run runs a command to completion and fails the test, with its output, when it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func TestADeploymentThroughAnEngineInstanceOnAnotherCluster(t *testing.T) {
	s, east := startService(t)
	g, ctx := NewWithT(t), t.Context()
	g.SetDefaultEventuallyTimeout(Timeout)
	g.SetDefaultEventuallyPollingInterval(Poll)
	service := s.ControlPlane.Client

	tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	g.Expect(service.Create(ctx, tenant)).To(Succeed())
	// A private repository: its credential reaches Argo CD on the engine cluster too.
	creds := &gitserver.Credentials{Username: "deployer", Password: "s3cret-token"}
	g.Expect(s.Git.Create(tenant.Name, creds)).To(Succeed())
	first, err := s.Git.Commit(tenant.Name, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "hello")}, "first")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(service.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: tenant.Name},
		Type:       v1.RepositoryCredentialSecretType,
		StringData: map[string]string{
			v1.RepositoryCredentialSecretUsernameKey: creds.Username,
			v1.RepositoryCredentialSecretPasswordKey: creds.Password,
		},
	})).To(Succeed())
	g.Expect(service.Create(ctx, &v1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: tenant.Name},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: s.Git.URL(tenant.Name), Secret: "git-creds"},
	})).To(Succeed())

	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: tenant.Name},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: s.Git.URL(tenant.Name), Path: "app"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	g.Expect(service.Create(ctx, depl)).To(Succeed())

	t.Log("Argo CD on the engine cluster deploys to the tenant's namespace on the service's cluster, and the status comes back")
	g.Eventually(Object(ctx, service, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(first)))
	g.Expect(ConfigMapData(ctx, service, tenant.Name, "hello")()).To(HaveKeyWithValue("greeting", "hello"))

	t.Log("the Application is on the engine cluster, aimed at the service's cluster through the tenant's own cluster Secret")
	app := &argov1alpha1.Application{}
	g.Expect(east.Client.Get(ctx, client.ObjectKey{Namespace: engineNamespace, Name: argocd.ApplicationName(depl.UID)}, app)).To(Succeed())
	serviceSecret := &corev1.Secret{}
	g.Expect(east.Client.Get(ctx, client.ObjectKey{Namespace: engineNamespace, Name: argocd.ServiceClusterSecretName}, serviceSecret)).To(Succeed())
	tenantID := app.Labels[argocd.LabelTenantID]
	g.Expect(app.Spec.Destination.Server).To(Equal(argocd.TenantServer(string(serviceSecret.Data["server"]), tenantID)))
	g.Expect(app.Spec.Destination.Namespace).To(Equal(tenant.Name))
	tenantSecret := &corev1.Secret{}
	g.Expect(east.Client.Get(ctx, client.ObjectKey{Namespace: engineNamespace, Name: argocd.TenantClusterSecretName(tenantID)}, tenantSecret)).To(Succeed())
	g.Expect(string(tenantSecret.Data["server"])).To(Equal(app.Spec.Destination.Server))
	g.Expect(string(tenantSecret.Data["namespaces"])).To(Equal(tenant.Name))
	var repositories corev1.SecretList
	g.Expect(east.Client.List(ctx, &repositories, client.InNamespace(engineNamespace),
		client.MatchingLabels{argocd.LabelSecretType: argocd.SecretTypeRepository, argocd.LabelTenantID: app.Labels[argocd.LabelTenantID]})).To(Succeed())
	g.Expect(repositories.Items).NotTo(BeEmpty())

	t.Log("the Operation CRs and the Application exist on the engine cluster only")
	var operations v1.OperationList
	g.Expect(east.Client.List(ctx, &operations, client.InNamespace(engineNamespace))).To(Succeed())
	g.Expect(operations.Items).NotTo(BeEmpty())
	g.Expect(service.List(ctx, &operations)).To(Succeed())
	g.Expect(operations.Items).To(BeEmpty())
	var applications argov1alpha1.ApplicationList
	g.Expect(service.List(ctx, &applications)).To(Succeed())
	g.Expect(applications.Items).To(BeEmpty())

	t.Log("a new commit is deployed")
	second, err := s.Git.Commit(tenant.Name, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "hello again")}, "second")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(Object(ctx, service, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(second)))
	g.Eventually(ConfigMapData(ctx, service, tenant.Name, "hello")).Should(HaveKeyWithValue("greeting", "hello again"))

	t.Log("deleting the deployment prunes what it deployed and its Application")
	g.Expect(service.Delete(ctx, depl)).To(Succeed())
	g.Eventually(ConfigMapData(ctx, service, tenant.Name, "hello")).Should(BeAbsent())
	g.Eventually(Gone(ctx, east.Client, app)).Should(BeTrue())
}
