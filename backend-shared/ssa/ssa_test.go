package ssa

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

func TestUnstructuredDropsStatusAndCreationTimestamp(t *testing.T) {
	g := NewWithT(t)
	app := argocd.Application("ns", "gitopsdepl-1", "1", "t", argocd.ApplicationSpec(argocd.ApplicationInput{
		RepoURL: "https://example.com/repo.git", Path: "p", Destination: argocd.Destination{Namespace: "target"},
	}))
	app.Status.Health.Status = "Healthy"
	u, err := Unstructured(app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Object).NotTo(HaveKey("status"))
	g.Expect(u.Object).NotTo(HaveKey("operation"))
	g.Expect(u.Object["metadata"]).NotTo(HaveKey("creationTimestamp"))
	g.Expect(u.GetFinalizers()).To(ConsistOf(argov1alpha1.BackgroundPropagationPolicyFinalizer))
	g.Expect(u.GetLabels()).To(HaveKeyWithValue(argocd.LabelApplicationID, "1"))
}

func TestUnstructuredEncodesSecretData(t *testing.T) {
	g := NewWithT(t)
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
		Data:       map[string][]byte{"k": []byte("v")},
	}
	u, err := Unstructured(secret)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Object["data"]).To(HaveKeyWithValue("k", "dg=="))
}

func TestUnstructuredNeedsTypeMeta(t *testing.T) {
	_, err := Unstructured(&corev1.Secret{})
	NewWithT(t).Expect(err).To(HaveOccurred())
}
