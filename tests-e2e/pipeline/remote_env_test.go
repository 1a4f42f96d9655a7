package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// startRemote starts a second API server, the tenant's remote cluster, for the test.
func startRemote(t *testing.T) *testenv.ControlPlane {
	t.Helper()
	remote, err := testenv.StartControlPlane(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remote.Stop() })
	return remote
}

// remoteKubeconfig is a bearer-token kubeconfig for remote's server.
func remoteKubeconfig(remote *testenv.ControlPlane, token string) []byte {
	return remote.TokenKubeconfig(remote.Config.Host, token)
}

// remoteToken creates a ServiceAccount with no rights on remote and returns a token of it.
func (s *service) remoteToken(remote *testenv.ControlPlane, name string) string {
	s.t.Helper()
	ns := remote.NewNamespace(s.t, "sa-")
	s.g.Expect(remote.Client.Create(s.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})).To(Succeed())
	cs, err := kubernetes.NewForConfig(remote.Config)
	s.g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(s.ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	s.g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// remoteAdmin is a kubeconfig of a new cluster-admin ServiceAccount of remote, and its token.
func (s *service) remoteAdmin(remote *testenv.ControlPlane, name string) ([]byte, string) {
	s.t.Helper()
	kubeconfig, token, err := remote.ServiceAccountKubeconfig(s.ctx, remote.NewNamespace(s.t, "sa-"), name)
	s.g.Expect(err).NotTo(HaveOccurred())
	return kubeconfig, token
}

// fingerprint identifies a credential in assertions without printing it.
func fingerprint[T ~string | ~[]byte](secret T) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}

func (s *service) newEnvironment(name, apiURL, secretName string, kubeconfig []byte) *v1.GitOpsDeploymentManagedEnvironment {
	s.t.Helper()
	s.g.Expect(cp.Client.Create(s.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: s.tenant},
		Type:       v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": kubeconfig},
	})).To(Succeed())
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.tenant},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: apiURL, ClusterCredentialsSecret: secretName},
	}
	s.g.Expect(cp.Client.Create(s.ctx, env)).To(Succeed())
	return env
}

func (s *service) setKubeconfig(secretName string, kubeconfig []byte) {
	s.t.Helper()
	s.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		secret := &corev1.Secret{}
		if err := cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.tenant, Name: secretName}, secret); err != nil {
			return err
		}
		secret.Data["kubeconfig"] = kubeconfig
		return cp.Client.Update(s.ctx, secret)
	})).To(Succeed())
}

// connection is env's ConnectionInitializationSucceeded condition (nil while there is none).
func (s *service) connection(env *v1.GitOpsDeploymentManagedEnvironment) func() *metav1.Condition {
	return func() *metav1.Condition {
		got := &v1.GitOpsDeploymentManagedEnvironment{}
		s.g.Expect(cp.Client.Get(s.ctx, client.ObjectKeyFromObject(env), got)).To(Succeed())
		return meta.FindStatusCondition(got.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
	}
}

// clusterSecrets lists the Argo CD cluster Secrets of the engine namespace.
func (s *service) clusterSecrets() []corev1.Secret {
	s.t.Helper()
	list := &corev1.SecretList{}
	s.g.Expect(cp.Client.List(s.ctx, list, client.InNamespace(s.engine),
		client.MatchingLabels{argocd.LabelSecretType: argocd.SecretTypeCluster})).To(Succeed())
	return list.Items
}

// clusterSecret is the cluster Secret called name with its decoded config; nil while it
// does not exist.
func (s *service) clusterSecret(name string) (*corev1.Secret, *argov1alpha1.ClusterConfig) {
	s.t.Helper()
	secret := &corev1.Secret{}
	if err := cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: name}, secret); err != nil {
		s.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading cluster Secret %s", name)
		return nil, nil
	}
	config := &argov1alpha1.ClusterConfig{}
	s.g.Expect(json.Unmarshal(secret.Data["config"], config)).To(Succeed())
	return secret, config
}

// clusterToken is the fingerprint of the bearer token of cluster Secret name ("" while it
// does not exist).
func (s *service) clusterToken(name string) func() string {
	return func() string {
		if _, config := s.clusterSecret(name); config != nil {
			return fingerprint(config.BearerToken)
		}
		return ""
	}
}

// storedKubeconfig is the fingerprint of the kubeconfig stored for managed environment
// envID, read with the service's keyring.
func (s *service) storedKubeconfig(tenantID, envID string) func() (string, error) {
	keyring, err := secretbox.LoadKeyringFile(s.keys)
	s.g.Expect(err).NotTo(HaveOccurred())
	store, database := db.NewStore(keyring), dbtest.Open(s.t, s.database)
	return func() (string, error) {
		creds, err := store.GetManagedEnvironmentCredentials(s.ctx, database, tenantID, envID)
		if err != nil {
			return "", err
		}
		return fingerprint(creds.Kubeconfig), nil
	}
}

func (s *service) errorOccurred(depl *v1.GitOpsDeployment) func() *v1.GitOpsDeploymentCondition {
	return func() *v1.GitOpsDeploymentCondition {
		for _, c := range s.get(depl).(*v1.GitOpsDeployment).Status.Conditions {
			if c.Type == v1.GitOpsDeploymentConditionErrorOccurred {
				return &c
			}
		}
		return nil
	}
}

// Rotating the credentials of a working environment on a remote cluster updates the row and
// the Argo CD cluster Secret in place, and its deployment keeps running; bad credentials
// change nothing that works; deleting the environment stops its deployment with a clear
// condition, and re-creating it resumes the deployment on the new cluster Secret.
func TestManagedEnvironmentRotationAndDeletionOnARemoteCluster(t *testing.T) {
	t.Parallel()
	remote := startRemote(t)
	s := startService(t)
	first, firstToken := s.remoteAdmin(remote, "deployer-a")
	env := s.newEnvironment("prod", remote.Config.Host, "prod-creds", first)
	depl := s.deploy("remote", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.Destination = v1.ApplicationDestination{Environment: "prod", Namespace: "default"}
	})
	var app *argov1alpha1.Application
	s.g.Eventually(func() string {
		app = s.application(depl)
		return app.Spec.Destination.Name
	}, eventually, poll).Should(HavePrefix("managed-env-"))
	name := app.Spec.Destination.Name
	s.g.Eventually(s.clusterToken(name), 2*eventually, poll).Should(Equal(fingerprint(firstToken)))
	secret, _ := s.clusterSecret(name)
	server := string(secret.Data["server"])
	s.g.Expect(server).To(HavePrefix(remote.Config.Host + "?managedEnvironment="))
	tenantID, envID := secret.Labels[argocd.LabelTenantID], secret.Labels[argocd.LabelManagedEnvironmentID]
	stored := s.storedKubeconfig(tenantID, envID)
	s.g.Expect(stored()).To(Equal(fingerprint(first)))
	s.argoCompares(s.engine, depl, "rev-1")
	healthy := func() v1.GitOpsDeploymentStatus { return s.get(depl).(*v1.GitOpsDeployment).Status }
	s.g.Eventually(healthy, eventually, poll).Should(HaveField("Health.Status", v1.HealthStatusCodeHealthy))

	// Another valid ServiceAccount's token: the same row and cluster Secret carry it.
	second, secondToken := s.remoteAdmin(remote, "deployer-b")
	s.setKubeconfig("prod-creds", second)
	s.g.Eventually(stored, eventually, poll).Should(Equal(fingerprint(second)))
	s.g.Eventually(s.clusterToken(name), eventually, poll).Should(Equal(fingerprint(secondToken)))
	secret, config := s.clusterSecret(name)
	s.g.Expect(string(secret.Data["server"])).To(Equal(server))
	s.g.Expect(string(secret.Data["name"])).To(Equal(name))
	cs, err := clusterClient(remote.Config.Host, *config)
	s.g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().Namespaces().List(s.ctx, metav1.ListOptions{Limit: 1})
	s.g.Expect(err).NotTo(HaveOccurred(), "Argo CD can use the rotated credentials")
	s.g.Expect(s.connection(env)()).To(HaveField("Reason", string(v1.ManagedEnvironmentReasonSucceeded)))
	s.g.Consistently(func() string { return s.application(depl).Spec.Destination.Name }, 2*time.Second, poll).Should(Equal(name))
	s.g.Expect(healthy()).To(HaveField("Health.Status", v1.HealthStatusCodeHealthy))
	s.g.Expect(s.errorOccurred(depl)()).To(Or(BeNil(), HaveField("Status", v1.GitOpsConditionStatusFalse)))

	// A bad token is reported and replaces nothing: the row, the cluster Secret and the
	// deployment keep the working credentials.
	s.setKubeconfig("prod-creds", remoteKubeconfig(remote, "not-a-valid-token"))
	s.g.Eventually(s.connection(env), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)),
		HaveField("Message", ContainSubstring("401 Unauthorized"))))
	s.g.Consistently(s.clusterToken(name), 2*time.Second, poll).Should(Equal(fingerprint(secondToken)))
	s.g.Expect(stored()).To(Equal(fingerprint(second)))
	s.g.Expect(s.application(depl).Spec.Destination.Name).To(Equal(name))
	s.g.Expect(s.errorOccurred(depl)()).To(Or(BeNil(), HaveField("Status", v1.GitOpsConditionStatusFalse)))
	s.setKubeconfig("prod-creds", second)
	s.g.Eventually(s.connection(env), eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))

	// Deleting the environment removes its cluster Secret; the deployment says why it
	// stopped, and its Application still names only the deleted cluster.
	s.g.Expect(cp.Client.Delete(s.ctx, env)).To(Succeed())
	s.g.Eventually(s.clusterToken(name), eventually, poll).Should(BeEmpty())
	s.g.Eventually(func() error { _, err := stored(); return err }, eventually, poll).Should(MatchError(db.ErrNotFound))
	s.g.Eventually(s.errorOccurred(depl), eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusTrue),
		HaveField("Message", ContainSubstring(`GitOpsDeploymentManagedEnvironment "prod"`)),
		HaveField("Message", ContainSubstring("does not exist"))))
	s.g.Expect(s.application(depl).Spec.Destination).To(Equal(argov1alpha1.ApplicationDestination{Name: name, Namespace: "default"}),
		"not retargeted anywhere else")
	s.g.Expect(s.clusterSecrets()).To(BeEmpty())

	// Re-created under the same name: the deployment resumes on the new cluster Secret.
	recreated := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: s.tenant},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: remote.Config.Host, ClusterCredentialsSecret: "prod-creds"},
	}
	s.g.Expect(cp.Client.Create(s.ctx, recreated)).To(Succeed())
	var newName string
	s.g.Eventually(func() string {
		newName = s.application(depl).Spec.Destination.Name
		return newName
	}, eventually, poll).ShouldNot(Equal(name))
	s.g.Expect(newName).To(HavePrefix("managed-env-"))
	s.g.Eventually(s.clusterToken(newName), eventually, poll).Should(Equal(fingerprint(secondToken)))
	secret, _ = s.clusterSecret(newName)
	s.g.Expect(string(secret.Data["server"])).To(HavePrefix(remote.Config.Host + "?managedEnvironment="))
	s.g.Eventually(s.errorOccurred(depl), eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusFalse), HaveField("Reason", v1.GitOpsDeploymentReasonErrorOccurredResolved)))
	project := &argov1alpha1.AppProject{}
	s.g.Eventually(func() []argov1alpha1.ApplicationDestination {
		_ = cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: s.application(depl).Spec.Project}, project)
		return project.Spec.Destinations
	}, eventually, poll).Should(And(
		ContainElement(argov1alpha1.ApplicationDestination{Name: newName, Namespace: "*"}),
		Not(ContainElement(HaveField("Name", name)))))
}

// Environments on the remote cluster that cannot connect say why, store nothing, and get
// no cluster Secret; a working one beside them shows that the cluster-agent is running.
func TestManagedEnvironmentFailuresOnARemoteClusterWriteNoClusterSecret(t *testing.T) {
	t.Parallel()
	remote := startRemote(t)
	s := startService(t)
	good, _ := s.remoteAdmin(remote, "admin")
	working := s.newEnvironment("working", remote.Config.Host, "working-creds", good)
	s.g.Eventually(s.connection(working), 2*eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
	s.g.Eventually(s.clusterSecrets, eventually, poll).Should(HaveLen(1))
	workingSecret := s.clusterSecrets()[0].Name

	unreachable := "https://127.0.0.1:1"
	cases := []struct {
		name, apiURL string
		kubeconfig   []byte
		reason       v1.ManagedEnvironmentConditionReason
		message      string
	}{
		{name: "bad-token", apiURL: remote.Config.Host, kubeconfig: remoteKubeconfig(remote, "not-a-valid-token"),
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, message: "401 Unauthorized"},
		{name: "no-rbac", apiURL: remote.Config.Host, kubeconfig: remoteKubeconfig(remote, s.remoteToken(remote, "nobody")),
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, message: "may not list namespaces (403 Forbidden)"},
		// spec.apiURL names the other API server, which the kubeconfig has no context for.
		{name: "wrong-apiurl", apiURL: cp.Config.Host, kubeconfig: good,
			reason: v1.ManagedEnvironmentReasonUnableToLocateContext, message: "no context whose cluster's server is"},
		{name: "unreachable-apiurl", apiURL: unreachable, kubeconfig: func() []byte {
			cfg, err := clientcmd.Load(good)
			s.g.Expect(err).NotTo(HaveOccurred())
			for _, c := range cfg.Clusters {
				c.Server = unreachable
			}
			data, err := clientcmd.Write(*cfg)
			s.g.Expect(err).NotTo(HaveOccurred())
			return data
		}(), reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, message: "could not be reached"},
	}
	for _, tc := range cases {
		env := s.newEnvironment(tc.name, tc.apiURL, tc.name+"-creds", tc.kubeconfig)
		s.g.Eventually(s.connection(env), eventually, poll).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", string(tc.reason)),
			HaveField("Message", ContainSubstring(tc.message))), tc.name)
	}
	s.g.Consistently(func() []string {
		var names []string
		for _, secret := range s.clusterSecrets() {
			names = append(names, secret.Name)
		}
		return names
	}, 2*time.Second, poll).Should(Equal([]string{workingSecret}), "no cluster Secret for an environment that does not connect")
	mappings, err := db.NewStore(nil).ListAPICRMappings(context.Background(), dbtest.Open(t, s.database),
		s.clusterSecrets()[0].Labels[argocd.LabelTenantID], db.APIResourceManagedEnvironment)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(mappings).To(ConsistOf(HaveField("APIResourceName", "working")), "nothing stored for them")
}
