package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// Every name in a tenant's CRs resolves in the CR's own namespace only: another tenant's
// environment, Secret or GitOpsDeployment of the same name is never used.
func TestReferencesResolveOnlyInTheirOwnNamespace(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	other := h.asOther()

	// The other tenant has a working environment "prod" (with Secret "prod-secret") and a
	// manual deployment "manual-app".
	good := kubeconfig(cp.Config.Host, h.serviceAccountToken("admin", true))
	otherEnv := other.newEnvironment("prod", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": good})
	h.g.Eventually(other.connection(otherEnv), eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
	otherDepl := other.newDeployment("manual-app", v1.GitOpsDeploymentSpecTypeManual)
	other.application(otherDepl.UID)

	// An environment naming the other tenant's Secret: it does not exist here.
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "borrowed", Namespace: h.tenant},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: cp.Config.Host, ClusterCredentialsSecret: "prod-secret"},
	}
	h.g.Expect(cp.Client.Create(h.ctx, env)).To(Succeed())
	h.g.Eventually(h.connection(env), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Message", ContainSubstring(`Secret "prod-secret" (spec.credentialsSecret) does not exist`))))

	// A deployment naming the other tenant's environment: not found, nothing deployed.
	depl := h.newDeployment("to-prod", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.Destination = v1.ApplicationDestination{Environment: "prod", Namespace: "default"}
	})
	h.g.Eventually(func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred)
	}, eventually, poll).Should(And(
		HaveField("Status", v1.GitOpsConditionStatusTrue),
		HaveField("Message", ContainSubstring(`GitOpsDeploymentManagedEnvironment "prod"`))))
	h.g.Expect(h.operations(db.OperationResourceApplication, string(depl.UID))).To(BeEmpty())

	// A SyncRun naming the other tenant's deployment: it does not exist here, and the other
	// tenant's application gets no sync operation.
	run := h.newSyncRun("sync-theirs", "manual-app", "main")
	h.g.Eventually(h.syncRunCondition(run), eventually, poll).Should(HaveField("Message", ContainSubstring(`GitOpsDeployment "manual-app" does not exist`)))
	h.g.Consistently(func() (int, error) {
		var n int
		err := h.db.NewSelect().Table("sync_operations").ColumnExpr("count(*)").
			Where("application_id = ?", string(otherDepl.UID)).Scan(h.ctx, &n)
		return n, err
	}, 2*time.Second, poll).Should(BeZero())

	// The other tenant's objects are untouched.
	h.g.Expect(other.connection(otherEnv)()).To(HaveField("Status", metav1.ConditionTrue))
	secret := &corev1.Secret{}
	h.g.Expect(cp.Client.Get(h.ctx, keyOf(other.tenant, "prod-secret"), secret)).To(Succeed())
	h.g.Expect(secret.Data["kubeconfig"]).To(Equal(good))
}
