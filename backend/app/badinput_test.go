package app_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// badInputTables are the tables a bad object must never add rows to, in any tenant.
var badInputTables = []string{
	"tenants", "api_cr_mappings", "applications", "application_states", "appproject_destinations",
	"appproject_repositories", "cluster_credentials", "deployment_application_mappings",
	"managed_environments", "operations", "repository_credentials", "sync_operations",
}

// rowCounts counts the rows of every table a CR can add rows to.
func (h *harness) rowCounts() map[string]int {
	h.t.Helper()
	counts := map[string]int{}
	for _, table := range badInputTables {
		n, err := h.db.NewSelect().Table(table).Count(h.ctx)
		h.g.Expect(err).NotTo(HaveOccurred(), table)
		counts[table] = int(n)
	}
	return counts
}

// rejected creates obj and expects the API server to refuse it as invalid, with a message
// naming every one of want (the offending field).
func (h *harness) rejected(obj client.Object, want ...string) {
	h.t.Helper()
	err := cp.Client.Create(h.ctx, obj)
	h.g.Expect(err).To(HaveOccurred(), "the API server accepted %s", obj.GetName())
	h.g.Expect(apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err)).
		To(BeTrue(), "not a validation error: %v", err)
	for _, w := range want {
		h.g.Expect(err.Error()).To(ContainSubstring(w))
	}
}

// updateRejected applies change to the latest obj and expects the update to be refused
// (retrying conflicts with the controller's status writes).
func (h *harness) updateRejected(obj client.Object, change func(), want ...string) {
	h.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		change()
		return cp.Client.Update(h.ctx, obj)
	})
	h.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not a validation error: %v", err)
	for _, w := range want {
		h.g.Expect(err.Error()).To(ContainSubstring(w))
	}
}

// badDeployment is a GitOpsDeployment of the tenant, not yet created.
func (h *harness) badDeployment(name string, mutate func(*v1.GitOpsDeployment)) *v1.GitOpsDeployment {
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.tenant},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "environments/dev"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	mutate(depl)
	return depl
}

// deploymentFails waits for the ErrorOccurred condition of depl with every one of want in its
// message, and checks that nothing was deployed for it.
func (h *harness) deploymentFails(depl *v1.GitOpsDeployment, want ...string) {
	h.t.Helper()
	matchers := []OmegaMatcher{
		HaveField("Status", v1.GitOpsConditionStatusTrue), HaveField("Reason", v1.GitOpsDeploymentReasonErrorOccurred)}
	for _, w := range want {
		matchers = append(matchers, HaveField("Message", ContainSubstring(w)))
	}
	h.g.Eventually(func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred)
	}, eventually, poll).Should(And(matchers...))
	_, err := h.store.GetApplication(h.ctx, h.db, h.tenantRowOrEmpty(), string(depl.UID))
	h.g.Expect(err).To(MatchError(db.ErrNotFound))
	h.g.Expect(h.operations(db.OperationResourceApplication, string(depl.UID))).To(BeEmpty())
}

// envFails waits for the ConnectionInitializationSucceeded condition of env to be False
// with reason and want in its message; none of secrets appears in it or in an Event, and
// nothing is stored for env.
func (h *harness) envFails(env *v1.GitOpsDeploymentManagedEnvironment, reason v1.ManagedEnvironmentConditionReason, want string, secrets ...string) {
	h.t.Helper()
	h.g.Eventually(h.connection(env), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", string(reason)), HaveField("Message", ContainSubstring(want))))
	h.noSecrets(env, h.connection(env)().Message, secrets...)
	_, err := h.store.GetAPICRMapping(h.ctx, h.db, h.tenantRowOrEmpty(), db.APIResourceManagedEnvironment, string(env.UID))
	h.g.Expect(err).To(MatchError(db.ErrNotFound))
}

// credFails is envFails for a repository credential: condition typ is False with reason.
func (h *harness) credFails(cred *v1.GitOpsDeploymentRepositoryCredential, typ, reason, want string, secrets ...string) {
	h.t.Helper()
	h.g.Eventually(h.repoCondition(cred, typ), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason), HaveField("Message", ContainSubstring(want))))
	h.g.Expect(h.repoCondition(cred, v1.RepositoryCredentialConditionErrorOccurred)()).To(HaveField("Status", metav1.ConditionTrue))
	got := &v1.GitOpsDeploymentRepositoryCredential{}
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(cred), got)).To(Succeed())
	for _, c := range got.Status.Conditions {
		h.noSecrets(cred, c.Message, secrets...)
	}
	_, err := h.store.GetAPICRMapping(h.ctx, h.db, h.tenantRowOrEmpty(), db.APIResourceRepositoryCredential, string(cred.UID))
	h.g.Expect(err).To(MatchError(db.ErrNotFound))
}

// noSecrets checks that message and the Events of obj carry none of secrets.
func (h *harness) noSecrets(obj client.Object, message string, secrets ...string) {
	h.t.Helper()
	events := h.events(obj)
	for _, s := range secrets {
		h.g.Expect(message).NotTo(ContainSubstring(s), "secret in the condition")
		h.g.Expect(message).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(s))), "encoded secret in the condition")
		for _, e := range events {
			h.g.Expect(e).NotTo(ContainSubstring(s), "secret in an Event")
		}
	}
}

// syncRunFails waits for the ErrorOccurred condition of run and checks no sync was requested.
func (h *harness) syncRunFails(run *v1.GitOpsDeploymentSyncRun, want string) {
	h.t.Helper()
	h.g.Eventually(h.syncRunCondition(run), eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusTrue), HaveField("Message", ContainSubstring(want))))
	_, err := h.store.GetSyncOperation(h.ctx, h.db, h.tenantRowOrEmpty(), string(run.UID))
	h.g.Expect(err).To(MatchError(db.ErrNotFound))
	h.g.Expect(h.operations(db.OperationResourceSyncOperation, string(run.UID))).To(BeEmpty())
}

// kubeconfigWith is a kubeconfig for the test cluster whose only user is user.
func kubeconfigWith(user *clientcmdapi.AuthInfo) []byte {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["remote"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData}
	cfg.AuthInfos["deployer"] = user
	cfg.Contexts["remote"] = &clientcmdapi.Context{Cluster: "remote", AuthInfo: "deployer"}
	cfg.CurrentContext = "remote"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		panic(err)
	}
	return data
}

// manyContexts is a kubeconfig with n clusters, users and contexts, none for the test
// cluster, each user with a token containing secret.
func manyContexts(n int, secret string) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "- name: c%d\n  cluster:\n    server: https://cluster-%d.example.com:6443\n", i, i)
	}
	b.WriteString("users:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "- name: u%d\n  user:\n    token: %s-%d\n", i, secret, i)
	}
	b.WriteString("contexts:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "- name: x%d\n  context:\n    cluster: c%d\n    user: u%d\n", i, i, i)
	}
	b.WriteString("current-context: x0\n")
	return []byte(b.String())
}

// canary is the second tenant's working deployment and environment, which no bad input of
// the first tenant may touch.
type canary struct {
	depl       *v1.GitOpsDeployment
	env        *v1.GitOpsDeploymentManagedEnvironment
	deplRV     string
	envRV      string
	app        *db.Application
	ops        int
	secretData []byte
}

func (h *harness) canaryState(c *canary) canary {
	h.t.Helper()
	other := h.asOther()
	got := canary{depl: c.depl, env: c.env}
	got.deplRV = other.get(c.depl).ResourceVersion
	env := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(c.env), env)).To(Succeed())
	got.envRV = env.ResourceVersion
	got.app = other.application(c.depl.UID)
	got.ops = len(h.operations(db.OperationResourceApplication, string(c.depl.UID)))
	secret := &corev1.Secret{}
	h.g.Expect(cp.Client.Get(h.ctx, keyOf(other.tenant, c.env.Spec.ClusterCredentialsSecret), secret)).To(Succeed())
	got.secretData = secret.Data["kubeconfig"]
	return got
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	other := h.asOther()
	good := kubeconfig(cp.Config.Host, h.serviceAccountToken("admin", true))

	// The canary of the second tenant, and a working deployment of the first (so that its
	// tenant row exists before the bad inputs).
	c := &canary{}
	c.depl = other.newDeployment("canary", v1.GitOpsDeploymentSpecTypeManual)
	other.application(c.depl.UID)
	c.env = other.newEnvironment("canary-env", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": good})
	h.g.Eventually(other.connection(c.env), eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
	baseline := h.newDeployment("baseline", v1.GitOpsDeploymentSpecTypeManual)
	h.application(baseline.UID)
	autoTarget := h.newDeployment("auto-target", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(autoTarget.UID)
	var before canary
	h.g.Eventually(func() bool {
		first := h.canaryState(c)
		time.Sleep(500 * time.Millisecond)
		before = h.canaryState(c)
		return first.deplRV == before.deplRV && first.envRV == before.envRV
	}, eventually, poll).Should(BeTrue(), "the canary settles")

	marker := filepath.Join(t.TempDir(), "executed")
	const secret = "tok-s3cr3t-9f2c"
	long := func(n int) string { return strings.Repeat("a", n) }
	env := func(h *harness, name string, data map[string][]byte, mutate ...func(*v1.GitOpsDeploymentManagedEnvironment)) *v1.GitOpsDeploymentManagedEnvironment {
		return h.newEnvironment(name, v1.ManagedEnvironmentSecretType, data, mutate...)
	}
	kc := func(data []byte) map[string][]byte { return map[string][]byte{"kubeconfig": data} }
	apiURL := func(u string) func(*v1.GitOpsDeploymentManagedEnvironment) {
		return func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = u }
	}
	newCred := func(h *harness, name, repository string, data map[string][]byte) *v1.GitOpsDeploymentRepositoryCredential {
		return h.newRepositoryCredential(name, repository, v1.RepositoryCredentialSecretType, data)
	}
	credObj := func(h *harness, name, repository, secretName string) *v1.GitOpsDeploymentRepositoryCredential {
		return &v1.GitOpsDeploymentRepositoryCredential{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.tenant},
			Spec: v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: repository, Secret: secretName}}
	}
	envObj := func(h *harness, name, url, secretName string) *v1.GitOpsDeploymentManagedEnvironment {
		return &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.tenant},
			Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: url, ClusterCredentialsSecret: secretName}}
	}
	syncRun := func(h *harness, name, deployment, revision string) *v1.GitOpsDeploymentSyncRun {
		return &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.tenant},
			Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: deployment, RevisionID: revision}}
	}

	cases := []struct {
		name string
		run  func(h *harness)
	}{
		// GitOpsDeployment: refused by the CRD schema or the API server.
		{"deployment/name-254-chars", func(h *harness) {
			h.rejected(h.badDeployment(long(254), func(*v1.GitOpsDeployment) {}), "metadata.name", "must be no more than 253 characters")
		}},
		{"deployment/name-rtl-override-emoji", func(h *harness) {
			h.rejected(h.badDeployment("app\u202egpj-\U0001F680", func(*v1.GitOpsDeployment) {}), "metadata.name", "RFC 1123")
		}},
		{"deployment/repoURL-2049-chars", func(h *harness) {
			h.rejected(h.badDeployment("long-repo", func(d *v1.GitOpsDeployment) { d.Spec.Source.RepoURL = "https://x.example.com/" + long(2049) }),
				"spec.source.repoURL", "2048")
		}},
		{"deployment/repoURL-empty", func(h *harness) {
			h.rejected(h.badDeployment("empty-repo", func(d *v1.GitOpsDeployment) { d.Spec.Source.RepoURL = "" }), "spec.source.repoURL")
		}},
		{"deployment/path-2049-chars", func(h *harness) {
			h.rejected(h.badDeployment("long-path", func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = strings.Repeat("a/", 1025) }),
				"spec.source.path", "2048")
		}},
		{"deployment/targetRevision-513-chars", func(h *harness) {
			h.rejected(h.badDeployment("long-rev", func(d *v1.GitOpsDeployment) { d.Spec.Source.TargetRevision = long(513) }),
				"spec.source.targetRevision", "512")
		}},
		{"deployment/destination-namespace-64-chars", func(h *harness) {
			h.rejected(h.badDeployment("long-ns", func(d *v1.GitOpsDeployment) { d.Spec.Destination.Namespace = long(64) }),
				"spec.destination.namespace", "63")
		}},
		{"deployment/destination-environment-254-chars", func(h *harness) {
			h.rejected(h.badDeployment("long-env", func(d *v1.GitOpsDeployment) { d.Spec.Destination.Environment = long(254) }),
				"spec.destination.environment", "253")
		}},
		{"deployment/type-wrong-case", func(h *harness) {
			h.rejected(h.badDeployment("type-case", func(d *v1.GitOpsDeployment) { d.Spec.Type = "Automated" }),
				"spec.type", `Unsupported value: "Automated"`)
		}},
		{"deployment/type-sql-injection", func(h *harness) {
			h.rejected(h.badDeployment("type-sql", func(d *v1.GitOpsDeployment) { d.Spec.Type = "manual'; DROP TABLE applications;--" }),
				"spec.type", "Unsupported value")
		}},
		{"deployment/syncOption-unsupported", func(h *harness) {
			h.rejected(h.badDeployment("sync-ssa", func(d *v1.GitOpsDeployment) {
				d.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{"ServerSideApply=true"}}
			}), "spec.syncPolicy.syncOptions[0]", "Unsupported value")
		}},
		{"deployment/syncOption-newline-injection", func(h *harness) {
			h.rejected(h.badDeployment("sync-nl", func(d *v1.GitOpsDeployment) {
				d.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue, "CreateNamespace=true\nPrune=false"}}
			}), "spec.syncPolicy.syncOptions[1]", "Unsupported value")
		}},
		// GitOpsDeployment: accepted, reported in ErrorOccurred, nothing deployed.
		{"deployment/repoURL-file-scheme", func(h *harness) {
			depl := h.badDeployment("repo-file", func(d *v1.GitOpsDeployment) { d.Spec.Source.RepoURL = "file:///etc/passwd" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "spec.source.repoURL must be an https://, http:// or ssh:// URL, not file://")
		}},
		{"deployment/repoURL-git-scheme", func(h *harness) {
			depl := h.badDeployment("repo-git", func(d *v1.GitOpsDeployment) { d.Spec.Source.RepoURL = "git://git.example.com/org/repo.git" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "not git://")
		}},
		{"deployment/repoURL-with-password", func(h *harness) {
			depl := h.badDeployment("repo-pw", func(d *v1.GitOpsDeployment) { d.Spec.Source.RepoURL = "https://alice:" + secret + "@github.com/x/y" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "must not contain a password")
			h.noSecrets(depl, findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred).Message, secret)
		}},
		{"deployment/repoURL-rtl-override", func(h *harness) {
			depl := h.badDeployment("repo-rtl", func(d *v1.GitOpsDeployment) { d.Spec.Source.RepoURL = "https://github.com/org/\u202erepo" })
			depl.Spec.Source.RepoURL = "https://github.com/org/\u202erepo"
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "spec.source.repoURL contains the control character U+202E")
		}},
		{"deployment/repoURL-nul", func(h *harness) {
			depl := h.badDeployment("repo-nul", func(d *v1.GitOpsDeployment) { d.Spec.Source.RepoURL = "https://github.com/org/re\x00po" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "spec.source.repoURL contains the control character U+0000")
		}},
		{"deployment/path-nul", func(h *harness) {
			depl := h.badDeployment("path-nul", func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "env\x00dev" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "spec.source.path contains the control character U+0000")
		}},
		{"deployment/path-parent-traversal", func(h *harness) {
			depl := h.badDeployment("path-up", func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "../../etc/passwd" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "must be a relative path inside the repository, without '..'")
		}},
		{"deployment/path-absolute", func(h *harness) {
			depl := h.badDeployment("path-abs", func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "/etc/passwd" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "must be a relative path inside the repository")
		}},
		{"syncrun/revision-nul", func(h *harness) {
			run := syncRun(h, "rev-nul", "baseline", "v1\x00")
			run.Spec.RevisionID = "v1\x00"
			h.g.Expect(cp.Client.Create(h.ctx, run)).To(Succeed())
			h.syncRunFails(run, "spec.revisionID contains the control character U+0000")
		}},
		{"environment/apiURL-with-password", func(h *harness) {
			e := env(h, "url-pw", kc(good), apiURL("https://admin:"+secret+"@"+strings.TrimPrefix(cp.Config.Host, "https://")))
			h.envFails(e, v1.ManagedEnvironmentReasonUnsupportedAPIURL, "must not contain user information", secret)
		}},
		{"deployment/destination-namespace-of-other-tenant", func(h *harness) {
			depl := h.badDeployment("escape-other", func(d *v1.GitOpsDeployment) { d.Spec.Destination.Namespace = h.other })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, fmt.Sprintf("spec.destination.namespace %q", h.other), "can only deploy to its own namespace")
		}},
		{"deployment/destination-namespace-kube-system", func(h *harness) {
			depl := h.badDeployment("escape-system", func(d *v1.GitOpsDeployment) { d.Spec.Destination.Namespace = "kube-system" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, `spec.destination.namespace "kube-system"`)
		}},
		{"deployment/destination-namespace-engine", func(h *harness) {
			depl := h.badDeployment("escape-engine", func(d *v1.GitOpsDeployment) { d.Spec.Destination.Namespace = h.engine })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "spec.destination.namespace", "can only deploy to its own namespace")
		}},
		{"deployment/syncOptions-contradict", func(h *harness) {
			depl := h.badDeployment("contradict", func(d *v1.GitOpsDeployment) {
				d.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceFalse, v1.SyncOptionCreateNamespaceTrue}}
			})
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "spec.syncPolicy.syncOptions", "contradict each other")
		}},
		{"deployment/path-dot", func(h *harness) {
			depl := h.badDeployment("path-dot", func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "." })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "spec.source.path must name a directory")
		}},
		{"deployment/path-whitespace-slash", func(h *harness) {
			depl := h.badDeployment("path-ws", func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = " \t/\n" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "spec.source.path must name a directory")
		}},
		{"deployment/environment-sql-injection", func(h *harness) {
			depl := h.badDeployment("env-sql", func(d *v1.GitOpsDeployment) {
				d.Spec.Destination.Environment = "x'; DROP TABLE applications;--"
			})
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, `GitOpsDeploymentManagedEnvironment "x'; DROP TABLE applications;--"`, "does not exist")
			_, err := h.store.ListApplications(h.ctx, h.db, h.tenantRowOrEmpty())
			h.g.Expect(err).NotTo(HaveOccurred(), "the applications table is still there")
		}},
		{"deployment/environment-nul-rtl-emoji", func(h *harness) {
			depl := h.badDeployment("env-ctrl", func(d *v1.GitOpsDeployment) { d.Spec.Destination.Environment = "e\x00v\u202e\U0001F4A3" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, "named in spec.destination.environment, does not exist")
		}},
		{"deployment/environment-of-other-tenant", func(h *harness) {
			depl := h.badDeployment("env-theirs", func(d *v1.GitOpsDeployment) { d.Spec.Destination.Environment = "canary-env" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, `GitOpsDeploymentManagedEnvironment "canary-env"`, "does not exist in namespace")
		}},
		{"deployment/environment-not-connected", func(h *harness) {
			e := envObj(h, "never-connects", cp.Config.Host, "no-such-secret")
			h.g.Expect(cp.Client.Create(h.ctx, e)).To(Succeed())
			depl := h.badDeployment("env-down", func(d *v1.GitOpsDeployment) { d.Spec.Destination.Environment = "never-connects" })
			h.g.Expect(cp.Client.Create(h.ctx, depl)).To(Succeed())
			h.deploymentFails(depl, `"never-connects" is not connected yet`)
		}},

		// GitOpsDeploymentSyncRun.
		{"syncrun/deployment-name-254-chars", func(h *harness) {
			h.rejected(syncRun(h, "long-depl", long(254), ""), "spec.gitopsDeploymentName", "253")
		}},
		{"syncrun/revision-513-chars", func(h *harness) {
			h.rejected(syncRun(h, "long-rev", "baseline", long(513)), "spec.revisionID", "512")
		}},
		{"syncrun/deployment-name-empty", func(h *harness) {
			h.rejected(syncRun(h, "no-depl", "", ""), "spec.gitopsDeploymentName")
		}},
		{"syncrun/revision-immutable", func(h *harness) {
			run := syncRun(h, "rev-edit", "missing-depl", "v1")
			h.g.Expect(cp.Client.Create(h.ctx, run)).To(Succeed())
			h.syncRunFails(run, `GitOpsDeployment "missing-depl" does not exist`)
			h.updateRejected(run, func() { run.Spec.RevisionID = "$(rm -rf /)" }, "spec.revisionID is immutable")
		}},
		{"syncrun/deployment-name-immutable", func(h *harness) {
			run := syncRun(h, "depl-edit", "missing-depl", "")
			h.g.Expect(cp.Client.Create(h.ctx, run)).To(Succeed())
			h.syncRunFails(run, `GitOpsDeployment "missing-depl" does not exist`)
			h.updateRejected(run, func() { run.Spec.GitopsDeploymentName = "baseline" }, "spec.gitopsDeploymentName is immutable")
		}},
		{"syncrun/deployment-name-sql-injection", func(h *harness) {
			run := syncRun(h, "sql", "x'; DROP TABLE sync_operations;--", "main")
			h.g.Expect(cp.Client.Create(h.ctx, run)).To(Succeed())
			h.syncRunFails(run, `GitOpsDeployment "x'; DROP TABLE sync_operations;--" does not exist`)
		}},
		{"syncrun/deployment-name-yaml-fragment", func(h *harness) {
			run := syncRun(h, "yaml", "a\n  type: automated\n---\nkind: Secret", "")
			h.g.Expect(cp.Client.Create(h.ctx, run)).To(Succeed())
			h.syncRunFails(run, "does not exist")
		}},
		{"syncrun/deployment-of-other-tenant", func(h *harness) {
			run := syncRun(h, "theirs", "canary", "main")
			h.g.Expect(cp.Client.Create(h.ctx, run)).To(Succeed())
			h.syncRunFails(run, `GitOpsDeployment "canary" does not exist`)
		}},
		{"syncrun/automated-deployment", func(h *harness) {
			run := syncRun(h, "on-auto", "auto-target", "main")
			h.g.Expect(cp.Client.Create(h.ctx, run)).To(Succeed())
			h.syncRunFails(run, "Automated sync policy is not allowed")
		}},

		// GitOpsDeploymentManagedEnvironment: refused by the CRD schema.
		{"managedenv/apiURL-http", func(h *harness) {
			h.rejected(envObj(h, "http", "http://"+strings.TrimPrefix(cp.Config.Host, "https://"), "s"), "spec.apiURL must be an https:// URL")
		}},
		{"managedenv/apiURL-file", func(h *harness) {
			h.rejected(envObj(h, "file", "file:///etc/kubernetes/admin.conf", "s"), "spec.apiURL must be an https:// URL")
		}},
		{"managedenv/apiURL-2049-chars", func(h *harness) {
			h.rejected(envObj(h, "long-url", "https://"+long(2049), "s"), "spec.apiURL", "2048")
		}},
		{"managedenv/secret-name-empty", func(h *harness) {
			h.rejected(envObj(h, "no-secret", cp.Config.Host, ""), "spec.credentialsSecret")
		}},
		{"managedenv/secret-2MiB", func(h *harness) {
			h.rejected(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "huge-secret", Namespace: h.tenant},
				Type: v1.ManagedEnvironmentSecretType, Data: kc(manyContexts(12000, secret))}, "Too long", "1048576")
		}},
		// GitOpsDeploymentManagedEnvironment: reported in ConnectionInitializationSucceeded.
		{"managedenv/exec-plugin", func(h *harness) {
			e := env(h, "exec", kc(kubeconfigWith(&clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
				APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker + "; echo " + secret},
				InteractiveMode: clientcmdapi.NeverExecInteractiveMode}})))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToCreateClient, "exec or auth-provider plugin", secret)
			_, err := os.Stat(marker)
			h.g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin ran")
		}},
		{"managedenv/exec-plugin-next-to-token", func(h *harness) {
			e := env(h, "exec-token", kc(kubeconfigWith(&clientcmdapi.AuthInfo{Token: secret, Exec: &clientcmdapi.ExecConfig{
				APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker},
				InteractiveMode: clientcmdapi.NeverExecInteractiveMode}})))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToCreateClient, "exec or auth-provider plugin", secret)
			_, err := os.Stat(marker)
			h.g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin ran")
		}},
		{"managedenv/auth-provider-plugin", func(h *harness) {
			e := env(h, "authprovider", kc(kubeconfigWith(&clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{
				Name: "oidc", Config: map[string]string{"client-id": "x", "client-secret": secret, "idp-issuer-url": "https://idp.example.com"}}})))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToCreateClient, "exec or auth-provider plugin", secret)
		}},
		{"managedenv/tokenFile-path-traversal", func(h *harness) {
			e := env(h, "tokenfile", kc(kubeconfigWith(&clientcmdapi.AuthInfo{TokenFile: "../../../../var/run/secrets/kubernetes.io/serviceaccount/token"})))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToCreateClient, "refers to local files (tokenFile)")
		}},
		{"managedenv/client-cert-files", func(h *harness) {
			e := env(h, "certfiles", kc(kubeconfigWith(&clientcmdapi.AuthInfo{ClientCertificate: "/etc/passwd", ClientKey: "/etc/shadow"})))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToCreateClient, "client-certificate, client-key")
		}},
		{"managedenv/kubeconfig-binary-nul", func(h *harness) {
			e := env(h, "nul", kc([]byte("\x00\x01\x02apiVersion: v1\x00\nusers:\n- user:\n    token: "+secret+"\x7f\n")))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, "is not a valid kubeconfig file", secret)
		}},
		{"managedenv/kubeconfig-json-fragment", func(h *harness) {
			e := env(h, "jsonfrag", kc([]byte(`{"apiVersion":"v1","kind":"Config","users":[{"name":"u","user":{"token":"`+secret+`"}}],`)))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, "is not a valid kubeconfig file", secret)
		}},
		{"managedenv/kubeconfig-many-contexts-none-matching", func(h *harness) {
			e := env(h, "many", kc(manyContexts(2000, secret)))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToLocateContext, "has no context whose cluster's server is", secret)
		}},
		{"managedenv/kubeconfig-1MiB", func(h *harness) {
			data := manyContexts(5500, secret)
			h.g.Expect(len(data)).To(And(BeNumerically(">", 800*1024), BeNumerically("<", 1024*1024-1024)))
			e := env(h, "huge", kc(data))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToLocateContext, "has no context whose cluster's server is", secret)
		}},
		{"managedenv/kubeconfig-no-credentials", func(h *harness) {
			e := env(h, "nocreds", kc(kubeconfigWith(&clientcmdapi.AuthInfo{Username: "admin"})))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToCreateClient, "has no credentials")
		}},
		{"managedenv/apiURL-fragment", func(h *harness) {
			e := env(h, "fragment", kc(good), apiURL(cp.Config.Host+"#managedEnvironment=x"))
			h.envFails(e, v1.ManagedEnvironmentReasonUnsupportedAPIURL, "must not contain a query or fragment")
		}},
		{"managedenv/apiURL-no-host", func(h *harness) {
			e := env(h, "nohost", kc(good), apiURL("https://"))
			h.envFails(e, v1.ManagedEnvironmentReasonUnsupportedAPIURL, "is not a URL with a host")
		}},
		{"managedenv/apiURL-ipv6-unmatched", func(h *harness) {
			e := env(h, "ipv6", kc(good), apiURL("https://[::1]:6443"))
			h.envFails(e, v1.ManagedEnvironmentReasonUnableToLocateContext, "https://[::1]:6443 (spec.apiURL)")
		}},
		{"managedenv/namespaces-path-traversal", func(h *harness) {
			e := env(h, "ns-dots", kc(good), func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.Namespaces = []string{"../../etc/passwd"} })
			h.envFails(e, v1.ManagedEnvironmentReasonInvalidNamespaceList, `spec.namespaces: "../../etc/passwd" is not a valid namespace name`)
		}},
		{"managedenv/namespaces-unicode", func(h *harness) {
			e := env(h, "ns-unicode", kc(good), func(e *v1.GitOpsDeploymentManagedEnvironment) {
				e.Spec.Namespaces = []string{"default", "te\u202eam-\U0001F600"}
			})
			h.envFails(e, v1.ManagedEnvironmentReasonInvalidNamespaceList, "is not a valid namespace name")
		}},
		{"managedenv/secret-basic-auth-type", func(h *harness) {
			e := h.newEnvironment("basicauth", corev1.SecretTypeBasicAuth, map[string][]byte{"username": []byte("admin"), "password": []byte(secret)})
			h.envFails(e, v1.ManagedEnvironmentReasonInvalidSecretType, `it must be of type "managed-gitops.redhat.com/managed-environment"`, secret)
		}},
		{"managedenv/secret-of-other-tenant", func(h *harness) {
			e := envObj(h, "their-secret", cp.Config.Host, "canary-env-secret")
			h.g.Expect(cp.Client.Create(h.ctx, e)).To(Succeed())
			h.g.Eventually(h.connection(e), eventually, poll).Should(And(HaveField("Status", metav1.ConditionFalse),
				HaveField("Message", ContainSubstring(`Secret "canary-env-secret" (spec.credentialsSecret) does not exist`))))
		}},

		// GitOpsDeploymentRepositoryCredential: refused by the CRD schema.
		{"repocred/repository-http", func(h *harness) {
			h.rejected(credObj(h, "http", "http://github.com/example/gitops", "s"), "spec.repository must begin with https:// or ssh://")
		}},
		{"repocred/repository-git-scheme", func(h *harness) {
			h.rejected(credObj(h, "git", "git://github.com/example/gitops", "s"), "spec.repository must begin with https:// or ssh://")
		}},
		{"repocred/repository-file-passwd", func(h *harness) {
			h.rejected(credObj(h, "file", "file:///../../etc/passwd", "s"), "spec.repository must begin with https:// or ssh://")
		}},
		{"repocred/repository-shell-injection", func(h *harness) {
			h.rejected(credObj(h, "shell", "$(rm -rf /)https://github.com/x", "s"), "spec.repository must begin with https:// or ssh://")
		}},
		{"repocred/repository-2049-chars", func(h *harness) {
			h.rejected(credObj(h, "long", "https://github.com/"+long(2049), "s"), "spec.repository", "2048")
		}},
		{"repocred/secret-name-254-chars", func(h *harness) {
			h.rejected(credObj(h, "long-secret", "https://github.com/x", long(254)), "spec.secret", "253")
		}},
		// GitOpsDeploymentRepositoryCredential: reported in its conditions.
		{"repocred/repository-with-password", func(h *harness) {
			cred := newCred(h, "userinfo", "https://alice:hunter2-pw@127.0.0.1:1/repo.git", basicAuth("alice", secret))
			h.credFails(cred, v1.RepositoryCredentialConditionValidRepositoryUrl, v1.RepositoryCredentialReasonInvalidRepositoryUrl,
				"must not contain a password", secret, "hunter2-pw")
		}},
		{"repocred/repository-no-host", func(h *harness) {
			cred := newCred(h, "cred-nohost", "https://", basicAuth("alice", secret))
			h.credFails(cred, v1.RepositoryCredentialConditionValidRepositoryUrl, v1.RepositoryCredentialReasonInvalidRepositoryUrl,
				"spec.repository must be an https:// or ssh:// URL with a host", secret)
		}},
		{"repocred/repository-unreachable", func(h *harness) {
			cred := newCred(h, "unreachable", "https://127.0.0.1:1/repo.git?q=1#frag", basicAuth("alice", secret))
			h.credFails(cred, v1.RepositoryCredentialConditionValidRepositoryUrl, v1.RepositoryCredentialReasonInvalidRepositoryUrl,
				"could not be reached", secret)
		}},
		{"repocred/ssh-without-key", func(h *harness) {
			cred := newCred(h, "ssh-nokey", "ssh://git@127.0.0.1:1/repo.git", basicAuth("alice", secret))
			h.credFails(cred, v1.RepositoryCredentialConditionValidRepositoryCredential, v1.RepositoryCredentialReasonSecretInvalidType,
				`has no "sshPrivateKey" key`, secret)
		}},
		{"repocred/ssh-garbage-key", func(h *harness) {
			key := "-----BEGIN OPENSSH PRIVATE KEY-----\n" + secret + "\n-----END OPENSSH PRIVATE KEY-----\n"
			cred := newCred(h, "ssh-garbage", "ssh://git@127.0.0.1:1/repo.git", map[string][]byte{v1.RepositoryCredentialSecretSSHPrivateKeyKey: []byte(key)})
			h.credFails(cred, v1.RepositoryCredentialConditionValidRepositoryCredential, v1.RepositoryCredentialReasonInvalidCredentials,
				"not a usable, unencrypted SSH private key", secret)
		}},
		{"repocred/password-missing", func(h *harness) {
			cred := newCred(h, "nopw", "https://127.0.0.1:1/repo.git", map[string][]byte{"username": []byte("alice"), "token": []byte(secret)})
			h.credFails(cred, v1.RepositoryCredentialConditionValidRepositoryCredential, v1.RepositoryCredentialReasonSecretInvalidType,
				`must have non-empty "username" and "password" keys`, secret)
		}},
		{"repocred/secret-dockerconfig-type", func(h *harness) {
			cred := h.newRepositoryCredential("docker", "https://127.0.0.1:1/repo.git", corev1.SecretTypeDockerConfigJson,
				map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"x":{"password":"` + secret + `"}}}`)})
			h.credFails(cred, v1.RepositoryCredentialConditionValidRepositoryCredential, v1.RepositoryCredentialReasonSecretInvalidType,
				`must be of type "managed-gitops.redhat.com/repository-credential"`, secret)
		}},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := *h
			sub.t, sub.g = t, NewWithT(t)
			rows := sub.rowCounts()
			tc.run(&sub)
			// No side effect: no row anywhere, and the other tenant's objects are untouched.
			sub.g.Consistently(sub.rowCounts, 300*time.Millisecond, poll).Should(Equal(rows))
			after := sub.canaryState(c)
			sub.g.Expect(after.deplRV).To(Equal(before.deplRV), "canary GitOpsDeployment changed")
			sub.g.Expect(after.envRV).To(Equal(before.envRV), "canary managed environment changed")
			sub.g.Expect(after.app.Spec).To(Equal(before.app.Spec), "canary application row changed")
			sub.g.Expect(after.ops).To(Equal(before.ops), "canary got operations")
			sub.g.Expect(after.secretData).To(Equal(before.secretData), "canary Secret changed")
		})
	}
}
