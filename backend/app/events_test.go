package app_test

import (
	"encoding/pem"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend/app"
)

// eventCounts returns, per "<type> <reason> <message>" of obj's Events, how many times it
// was recorded. The API server's Event correlator folds a repeated Event into one object
// with a higher count, so "no second Event" means these counts stay the same.
func (h *harness) eventCounts(obj client.Object) map[string]int32 {
	h.t.Helper()
	list := &corev1.EventList{}
	h.g.Expect(cp.Client.List(h.ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	out := map[string]int32{}
	for _, e := range list.Items {
		if e.InvolvedObject.UID == obj.GetUID() {
			n := e.Count
			if n == 0 {
				n = 1
			}
			out[e.Type+" "+e.Reason+" "+e.Message] += n
		}
	}
	return out
}

// quiet checks that obj records no further Event for a while.
func (h *harness) quiet(obj client.Object) {
	h.t.Helper()
	recorded := h.eventCounts(obj)
	h.g.Consistently(func() map[string]int32 { return h.eventCounts(obj) }, "2s", poll).Should(Equal(recorded))
}

func TestEventsSyncRunLifecycle(t *testing.T) {
	t.Parallel()
	h := startBackend(t)

	// Created before its deployment: one Warning while it waits.
	run := h.newSyncRun("early", "later", "")
	waiting := `Warning ErrorOccurred GitOpsDeployment "later" does not exist in namespace "` + h.tenant + `"; the sync starts once it does`
	h.g.Eventually(func() []string { return h.events(run) }, eventually, poll).Should(ContainElement(waiting))
	// A change that does not change the outcome records nothing.
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(run), run)).To(Succeed())
	run.Labels = map[string]string{"touched": "yes"}
	h.g.Expect(cp.Client.Update(h.ctx, run)).To(Succeed())
	h.quiet(run)

	// The deployment appears: the sync is requested and the error resolved.
	depl := h.newDeployment("later", v1.GitOpsDeploymentSpecTypeManual, func(d *v1.GitOpsDeployment) { d.Spec.Source.TargetRevision = "v1.2.0" })
	h.g.Eventually(func() []string { return h.events(run) }, eventually, poll).Should(ContainElement(
		`Normal SyncRequested Sync of GitOpsDeployment later to "v1.2.0" requested`))
	h.g.Eventually(h.syncRunCondition(run), eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusFalse),
		HaveField("Reason", v1.GitOpsDeploymentSyncRunReasonErrorOccurredResolved),
		HaveField("Message", "")))

	// The sync succeeds: one Normal Event, also when the state is written again.
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "v1.2.0",
		OperationState: succeededSyncState(run, "v1.2.0")})
	h.g.Eventually(func() []string { return h.events(run) }, eventually, poll).Should(ContainElement(
		"Normal SyncSucceeded Successfully completed synchronize operation."))
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "v1.2.0",
		OperationState: succeededSyncState(run, "v1.2.0")})
	h.quiet(run)
	h.g.Expect(h.eventCounts(run)).To(Equal(map[string]int32{
		waiting: 1,
		`Normal SyncRequested Sync of GitOpsDeployment later to "v1.2.0" requested`:          1,
		"Normal ErrorOccurredResolved The earlier error is resolved; the sync is requested.": 1,
		"Normal SyncSucceeded Successfully completed synchronize operation.":                 1,
	}))
}

func TestEventsSyncRunFailure(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("manual", v1.GitOpsDeploymentSpecTypeManual)
	h.application(depl.UID)
	run := h.newSyncRun("sync", "manual", "abc")
	h.g.Eventually(h.syncOperation(run), eventually, poll).Should(Not(BeNil()))
	time.Sleep(time.Second) // the operation starts after the SyncRun (times have seconds)

	failed := finishedSyncState(run, "abc", "Failed", "one or more objects failed to apply")
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthDegraded, SyncStatus: db.SyncStatusOutOfSync, Revision: "abc", OperationState: failed})
	h.g.Eventually(func() []string { return h.events(run) }, eventually, poll).Should(ContainElement(
		"Warning SyncFailed Sync operation Failed: one or more objects failed to apply"))
	h.g.Expect(h.syncRunCondition(run)()).To(And(
		HaveField("Status", v1.GitOpsConditionStatusTrue), HaveField("Message", "one or more objects failed to apply")))
	h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthDegraded, SyncStatus: db.SyncStatusOutOfSync, Revision: "abc", OperationState: failed})
	h.quiet(run)
	h.g.Expect(h.eventCounts(run)).To(Equal(map[string]int32{
		`Normal SyncRequested Sync of GitOpsDeployment manual to "abc" requested`:       1,
		"Warning SyncFailed Sync operation Failed: one or more objects failed to apply": 1,
	}))
}

func TestEventsRepositoryCredentialValidity(t *testing.T) {
	t.Parallel()
	srv := gitServer(t)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	h := startBackend(t, func(o *app.Options) { o.RepositoryCABundle = caBundle })
	repoURL := srv.URL + "/repo.git"

	setPassword := func(cred *v1.GitOpsDeploymentRepositoryCredential, password string) {
		secret := &corev1.Secret{}
		h.g.Expect(cp.Client.Get(h.ctx, keyOf(h.tenant, cred.Spec.Secret), secret)).To(Succeed())
		secret.Data = basicAuth(gitUser, password)
		h.g.Expect(cp.Client.Update(h.ctx, secret)).To(Succeed())
	}
	valid := "Normal ValidCredentials The credentials give access to the repository."

	// Invalid: one Warning, with the failing condition's reason.
	cred := h.newRepositoryCredential("flaky", repoURL, v1.RepositoryCredentialSecretType, basicAuth(gitUser, "wrong-pw"))
	h.g.Eventually(h.repoCondition(cred, v1.RepositoryCredentialConditionValidRepositoryCredential), eventually, poll).Should(
		HaveField("Reason", v1.RepositoryCredentialReasonInvalidCredentials))
	h.g.Eventually(func() []string { return h.events(cred) }, eventually, poll).Should(ContainElement(
		HavePrefix("Warning InvalidCredentials ")))
	var invalid string
	for _, e := range h.events(cred) {
		invalid = e
	}

	// A new generation with the same outcome records nothing.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "flaky-other", Namespace: h.tenant},
		Type: v1.RepositoryCredentialSecretType, Data: basicAuth(gitUser, "wrong-pw")}
	h.g.Expect(cp.Client.Create(h.ctx, other)).To(Succeed())
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(cred), cred)).To(Succeed())
	cred.Spec.Secret = other.Name
	h.g.Expect(cp.Client.Update(h.ctx, cred)).To(Succeed())
	h.g.Eventually(func() int64 {
		got := &v1.GitOpsDeploymentRepositoryCredential{}
		h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(cred), got)).To(Succeed())
		return got.Status.ObservedGeneration
	}, eventually, poll).Should(Equal(cred.Generation))
	h.quiet(cred)
	h.g.Expect(h.eventCounts(cred)).To(HaveLen(1))

	// Invalid → valid → invalid: one Event each way.
	setPassword(cred, gitPassword)
	h.g.Eventually(func() []string { return h.events(cred) }, eventually, poll).Should(ContainElement(valid))
	h.quiet(cred)
	setPassword(cred, "wrong-pw")
	h.g.Eventually(func() map[string]int32 { return h.eventCounts(cred) }, eventually, poll).Should(HaveKeyWithValue(invalid, int32(2)))
	h.quiet(cred)
	h.g.Expect(h.eventCounts(cred)).To(Equal(map[string]int32{invalid: 2, valid: 1}))
}

func TestEventsManagedEnvironmentConnection(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	config := kubeconfig(cp.Config.Host, h.serviceAccountToken("deployer", true))
	env := h.newEnvironment("prod", v1.ManagedEnvironmentSecretType, map[string][]byte{"config": config})
	h.g.Eventually(h.connection(env), eventually, poll).Should(HaveField("Reason", string(v1.ManagedEnvironmentReasonMissingKubeConfigField)))
	h.g.Eventually(func() []string { return h.events(env) }, eventually, poll).Should(ContainElement(
		HavePrefix("Warning MissingKubeConfigField ")))

	// A new generation that fails the same way records nothing.
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(env), env)).To(Succeed())
	env.Spec.ClusterResources = true
	h.g.Expect(cp.Client.Update(h.ctx, env)).To(Succeed())
	h.g.Eventually(func() int64 {
		got := &v1.GitOpsDeploymentManagedEnvironment{}
		h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(env), got)).To(Succeed())
		return got.Status.ObservedGeneration
	}, eventually, poll).Should(Equal(env.Generation))
	h.quiet(env)
	h.g.Expect(h.eventCounts(env)).To(HaveLen(1))

	// Fixed: connected, one Normal Event.
	secret := &corev1.Secret{}
	h.g.Expect(cp.Client.Get(h.ctx, keyOf(h.tenant, env.Spec.ClusterCredentialsSecret), secret)).To(Succeed())
	secret.Data = map[string][]byte{"kubeconfig": config}
	h.g.Expect(cp.Client.Update(h.ctx, secret)).To(Succeed())
	h.g.Eventually(func() []string { return h.events(env) }, eventually, poll).Should(ContainElement(
		"Normal Succeeded Connected to the cluster; Argo CD can deploy to it."))
	h.quiet(env)
	h.g.Expect(h.eventCounts(env)).To(HaveLen(2))
}
