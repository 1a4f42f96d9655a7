package app_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// The backend learns that a credential's Secret changed from a watch of the Secrets'
// metadata and reads the Secret when it checks the credential: the Secrets of a tenant
// namespace, however large, are not held in its memory. (Not parallel: it measures the
// process's heap.)
func TestSecretsAreWatchedButNotHeldInMemory(t *testing.T) {
	h := startBackend(t)
	cred := &v1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "watched", Namespace: h.tenant},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: "https://git.example.com/repo.git", Secret: "watched-secret"},
	}
	h.g.Expect(cp.Client.Create(h.ctx, cred)).To(Succeed())
	reason := func() string {
		c := h.repoCondition(cred, v1.RepositoryCredentialConditionValidRepositoryCredential)()
		if c == nil {
			return ""
		}
		return c.Reason
	}
	h.g.Eventually(reason, eventually, poll).Should(Equal(v1.RepositoryCredentialReasonSecretNotFound))
	before := liveHeap()

	const secrets, size = 64, 1 << 20
	blob := bytes.Repeat([]byte{'x'}, size)
	for i := range secrets {
		h.g.Expect(cp.Client.Create(h.ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bulk-%d", i), Namespace: h.tenant},
			Data:       map[string][]byte{"blob": blob},
		})).To(Succeed())
	}
	// Created after the others: once the backend has seen it, it has seen them all.
	h.g.Expect(cp.Client.Create(h.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "watched-secret", Namespace: h.tenant},
		Type:       corev1.SecretTypeOpaque, Data: basicAuth("user", "password"),
	})).To(Succeed())
	h.g.Eventually(reason, eventually, poll).Should(Equal(v1.RepositoryCredentialReasonSecretInvalidType),
		"the Secret's creation reached the credential")

	grown := int64(liveHeap()) - int64(before)
	t.Logf("heap grew by %.1f MiB after %d MiB of Secrets", float64(grown)/(1<<20), secrets*size>>20)
	h.g.Expect(grown).To(BeNumerically("<", secrets*size/2), "the heap grew by about the Secrets' size: they are cached")
}

// liveHeap is the bytes of the heap still in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
