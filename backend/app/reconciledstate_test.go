package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// connectedEnvironment creates a GitOpsDeploymentManagedEnvironment, waits until it is
// connected and returns its managed environment id.
func (h *harness) connectedEnvironment(name string, config []byte) (*v1.GitOpsDeploymentManagedEnvironment, string) {
	h.t.Helper()
	env := h.newEnvironment(name, v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": config})
	h.g.Eventually(h.connection(env), eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
	mapping, err := h.store.GetAPICRMapping(h.ctx, h.db, h.tenantRow().ID, db.APIResourceManagedEnvironment, string(env.UID))
	h.g.Expect(err).NotTo(HaveOccurred())
	return env, mapping.TargetID()
}

// TestReconciledStateNamesTheEnvironmentArgoCDCompared: status.reconciledState names the
// GitOpsDeploymentManagedEnvironment of the cluster Argo CD compared against, not the one
// the spec names, until Argo CD has compared the new one.
func TestReconciledStateNamesTheEnvironmentArgoCDCompared(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	config := kubeconfig(cp.Config.Host, h.serviceAccountToken("deployer", true))
	envA, idA := h.connectedEnvironment("env-a", config)
	_, idB := h.connectedEnvironment("env-b", config)

	depl := h.newDeployment("moving", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.Destination = v1.ApplicationDestination{Environment: "env-a", Namespace: "default"}
	})
	h.g.Expect(h.application(depl.UID).ManagedEnvironmentID).To(Equal(idA))
	// report writes the application state the cluster-agent writes once Argo CD has
	// compared the spec against the cluster Secret of the managed environment id.
	report := func(id string) {
		h.writeState(depl.UID, &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc",
			ReconciledState: &argov1alpha1.ComparedTo{
				Source:      argov1alpha1.ApplicationSource{RepoURL: depl.Spec.Source.RepoURL, Path: depl.Spec.Source.Path, TargetRevision: "HEAD"},
				Destination: argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName(id), Namespace: "default"},
			}})
	}
	reconciled := func() v1.GitOpsDeploymentDestination { return h.get(depl).Status.ReconciledState.Destination }
	condition := func(typ v1.GitOpsDeploymentConditionType) func() *v1.GitOpsDeploymentCondition {
		return func() *v1.GitOpsDeploymentCondition { return findCondition(h.get(depl).Status.Conditions, typ) }
	}

	report(idA)
	h.g.Eventually(reconciled, eventually, poll).Should(Equal(v1.GitOpsDeploymentDestination{Name: "env-a", Namespace: "default"}))
	h.g.Eventually(condition(outcome.TypeReady), eventually, poll).Should(HaveField("Status", v1.GitOpsConditionStatusTrue))
	h.g.Expect(condition(outcome.TypeReconciling)()).To(BeNil())

	// The spec moves to B. Once the backend has reconciled it (the application row targets
	// B and the deployment is Reconciling again), while Argo CD still reports A's cluster,
	// the status still says A.
	h.update(depl, func(d *v1.GitOpsDeployment) { d.Spec.Destination.Environment = "env-b" })
	h.g.Eventually(func() string { return h.application(depl.UID).ManagedEnvironmentID }, eventually, poll).Should(Equal(idB))
	h.g.Eventually(condition(outcome.TypeReconciling), eventually, poll).ShouldNot(BeNil())
	h.g.Expect(h.get(depl).Spec.Destination.Environment).To(Equal("env-b"))
	h.g.Consistently(reconciled, 2*time.Second, poll).Should(Equal(v1.GitOpsDeploymentDestination{Name: "env-a", Namespace: "default"}))
	// A fresh report of the same comparison changes nothing.
	report(idA)
	h.g.Consistently(reconciled, time.Second, poll).Should(Equal(v1.GitOpsDeploymentDestination{Name: "env-a", Namespace: "default"}))

	// Argo CD compares against B's cluster: the status says B, and the deployment is Ready.
	report(idB)
	h.g.Eventually(reconciled, eventually, poll).Should(Equal(v1.GitOpsDeploymentDestination{Name: "env-b", Namespace: "default"}))
	h.g.Eventually(condition(outcome.TypeReady), eventually, poll).Should(HaveField("Status", v1.GitOpsConditionStatusTrue))

	// A comparison against an environment whose CR is gone names no environment.
	h.g.Expect(cp.Client.Delete(h.ctx, envA)).To(Succeed())
	h.g.Eventually(func() error {
		_, err := h.store.GetAPICRMappingByTarget(h.ctx, h.db, h.tenantRow().ID, db.APIResourceManagedEnvironment, idA)
		return err
	}, eventually, poll).Should(MatchError(db.ErrNotFound))
	report(idA)
	h.g.Eventually(reconciled, eventually, poll).Should(Equal(v1.GitOpsDeploymentDestination{Namespace: "default"}))
}
