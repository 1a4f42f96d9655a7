package tenantcluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

func TestCurrentSecretIsTheOneTheAgentWouldWrite(t *testing.T) {
	const apiURL, tenantID, ns = "https://10.96.0.1:443", "t1", "team-a"
	tc := &TenantClusters{Identity: engine.Identity{Namespace: "argocd", TenantAPIURL: apiURL}}
	written := func(mutate func(*corev1.Secret)) *corev1.Secret {
		sec, err := argocd.TenantClusterSecret("argocd", tenantID, apiURL, ns, argov1alpha1.TLSClientConfig{}, "token", time.Now())
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		sec.Annotations[annotationRole] = DefaultClusterRole
		if mutate != nil {
			mutate(sec)
		}
		return sec
	}
	tests := []struct {
		name   string
		secret *corev1.Secret
		want   bool
	}{
		{name: "as written", secret: written(nil), want: true},
		{name: "another namespace", secret: written(func(s *corev1.Secret) { s.Data["namespaces"] = []byte("team-b") }), want: false},
		{name: "edited by hand", secret: written(func(s *corev1.Secret) { s.Data["config"] = []byte(`{"bearerToken":"x"}`) }), want: false},
		{name: "another role", secret: written(func(s *corev1.Secret) { s.Annotations[annotationRole] = "edit" }), want: false},
		{name: "another API server", secret: written(func(s *corev1.Secret) {
			s.Data["server"] = []byte(argocd.TenantServer("https://old:6443", tenantID))
			s.Annotations[argocd.AnnotationDataHash] = argocd.DataHash(s.Data)
		}), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tc.current(tt.secret, tenantID, ns)).To(Equal(tt.want))
		})
	}
}

func TestRenewHalfway(t *testing.T) {
	issued := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		lifetime time.Duration
		want     time.Duration
	}{
		{name: "a day", lifetime: 24 * time.Hour, want: 12 * time.Hour},
		{name: "shortened by the API server to an hour", lifetime: time.Hour, want: 30 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(renewHalfway(issued, issued.Add(tt.lifetime))).To(Equal(issued.Add(tt.want)))
		})
	}
}

func TestServerTLSReadsTheCAFileOfAPod(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join(t.TempDir(), "ca.crt")
	g.Expect(os.WriteFile(file, []byte("PEM"), 0o600)).To(Succeed())
	tls, err := ServerTLS(&rest.Config{Host: "https://10.96.0.1:443", TLSClientConfig: rest.TLSClientConfig{CAFile: file, KeyData: []byte("key")}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tls).To(Equal(argov1alpha1.TLSClientConfig{CAData: []byte("PEM")}), "the CA, never the agent's own credentials")
	_, err = ServerTLS(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(t.TempDir(), "missing")}})
	g.Expect(err).To(HaveOccurred())
}
