package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
)

// TestPoisonOperationFailsAfterTheRetryLimit: an operation the API server keeps refusing
// (here an admission policy forbids Applications in the engine namespace) is retried, then
// marked Failed with a clear state once it is older than the retry limit.
func TestPoisonOperationFailsAfterTheRetryLimit(t *testing.T) {
	t.Parallel()
	e := startAgent(t, true, func(o *agent.Options) { o.OperationRetryLimit = 3 * time.Second })
	g := e.g()
	tenant := e.tenant()
	forbidden := metav1.StatusReasonForbidden
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-" + e.ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"argoproj.io"}, APIVersions: []string{"*"}, Resources: []string{"applications"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Reason: &forbidden, Message: "Applications are frozen"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-" + e.ns},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: e.ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		g.Expect(e.c.Create(e.ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = e.c.Delete(e.ctx, o) })
	}
	// Policies take effect shortly after they are written.
	probe := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: e.ns},
		Spec: argov1alpha1.ApplicationSpec{Source: &argov1alpha1.ApplicationSource{RepoURL: repoURL}}}
	g.Eventually(func() error { return e.c.Create(e.ctx, probe.DeepCopy(), client.DryRunAll) }, timeout, interval).
		Should(MatchError(ContainSubstring("Applications are frozen")))

	row := e.application(tenant, uuid.NewString(), repoURL, "apps/one", "team-a", true)
	op := e.signal(db.OperationResourceApplication, row.ID, tenant.ID)
	g.Eventually(func() string { return e.operation(op.ID).HumanReadableState }, timeout, interval).
		Should(Equal(operation.MessageInternalError), "retried first")
	g.Expect(e.operation(op.ID).State).To(Equal(db.OperationInProgress))

	failed := e.finished(op.ID)
	g.Expect(failed.State).To(Equal(db.OperationFailed))
	g.Expect(failed.HumanReadableState).To(HavePrefix("failed: the cluster-agent could not carry this out for 3s"))
	g.Expect(failed.UpdatedAt.Sub(failed.CreatedAt)).To(BeNumerically(">=", 3*time.Second))
}
