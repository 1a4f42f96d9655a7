package app_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/app"
	"github.com/gitops-service/gitops-service/backend/internal/gitwebhook"
)

func TestRefreshAnnotationReachesTheApplicationRow(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("refresh", v1.GitOpsDeploymentSpecTypeAutomated)
	h.application(depl.UID)
	h.g.Eventually(func() []db.Operation { return h.operations(db.OperationResourceApplication, string(depl.UID)) }, eventually, poll).Should(HaveLen(1))

	h.update(depl, func(d *v1.GitOpsDeployment) {
		d.Annotations = map[string]string{v1.RefreshAnnotation: "2026-11-26T10:00:00Z"}
	})
	h.g.Eventually(func() string { return h.application(depl.UID).Refresh }, eventually, poll).Should(Equal("2026-11-26T10:00:00Z"))
	h.g.Eventually(func() string { return h.get(depl).Status.LastHandledRefresh }, eventually, poll).Should(Equal("2026-11-26T10:00:00Z"))
	// The request reaches the cluster-agent as an operation on the application.
	h.g.Expect(h.operations(db.OperationResourceApplication, string(depl.UID))).To(HaveLen(2))
}

func TestGitWebhookRefreshesOnlyTheTenantsMatchingDeployments(t *testing.T) {
	t.Parallel()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	caPEM, certPEM, keyPEM, err := testenv.ServerCertificate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	h := startBackend(t, func(o *app.Options) { o.GitWebhookAddr, o.GitWebhookCertDir = addr, certDir })
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	for ns, key := range map[string]string{h.tenant: "tenant-secret", h.other: "other-secret"} {
		h.g.Expect(cp.Client.Create(h.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: gitwebhook.SecretName, Namespace: ns},
			Data: map[string][]byte{gitwebhook.SecretKey: []byte(key)}})).To(Succeed())
	}
	mine := h.newDeployment("mine", v1.GitOpsDeploymentSpecTypeAutomated)
	pinned := h.newDeployment("pinned", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) { d.Spec.Source.TargetRevision = "v1.0.0" })
	theirs := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: h.other},
		Spec: v1.GitOpsDeploymentSpec{Source: mine.Spec.Source, Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	h.g.Expect(cp.Client.Create(h.ctx, theirs)).To(Succeed())
	h.application(mine.UID)

	payload := []byte(`{"ref":"refs/heads/main","repository":{"clone_url":"https://github.com/example/gitops.git","html_url":"https://github.com/example/gitops","default_branch":"main"}}`)
	post := func(ns string, sign func(*http.Request)) (int, string) {
		var code int
		var body bytes.Buffer
		h.g.Eventually(func() error {
			req, err := http.NewRequestWithContext(h.ctx, http.MethodPost, "https://"+addr+gitwebhook.PathPrefix+ns, bytes.NewReader(payload))
			if err != nil {
				return err
			}
			req.Header.Set("X-GitHub-Event", "push")
			sign(req)
			resp, err := httpc.Do(req)
			if err != nil {
				return err
			}
			defer func() { _ = resp.Body.Close() }()
			body.Reset()
			_, err = body.ReadFrom(resp.Body)
			code = resp.StatusCode
			return err
		}, eventually, poll).Should(Succeed())
		return code, body.String()
	}
	signedWith := func(key string) func(*http.Request) {
		return func(req *http.Request) {
			mac := hmac.New(sha256.New, []byte(key))
			mac.Write(payload)
			req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		}
	}
	refreshOf := func(d *v1.GitOpsDeployment) string { return h.get(d).Annotations[v1.RefreshAnnotation] }

	// Refused: unsigned, or signed with another tenant's secret; nothing is refreshed.
	code, body := post(h.tenant, func(*http.Request) {})
	h.g.Expect(code).To(Equal(http.StatusUnauthorized), body)
	code, body = post(h.tenant, signedWith("other-secret"))
	h.g.Expect(code).To(Equal(http.StatusUnauthorized), body)
	h.g.Expect(body).To(ContainSubstring("no webhook at this address accepts this request"))
	h.g.Expect(body).NotTo(ContainSubstring("tenant-secret"))
	h.g.Expect(refreshOf(mine)).To(BeEmpty())

	// Accepted: the tenant's deployment of the pushed branch is refreshed, through to its
	// application row; the pinned one and the other tenant's are not.
	code, body = post(h.tenant, signedWith("tenant-secret"))
	h.g.Expect(code).To(Equal(http.StatusAccepted), body)
	h.g.Expect(body).To(ContainSubstring(`"refreshed":["mine"]`))
	stamp := refreshOf(mine)
	h.g.Expect(stamp).NotTo(BeEmpty())
	h.g.Eventually(func() string { return h.application(mine.UID).Refresh }, eventually, poll).Should(Equal(stamp))
	h.g.Expect(refreshOf(pinned)).To(BeEmpty())
	h.g.Expect(refreshOf(theirs)).To(BeEmpty())

	// A namespace without the Secret has no receiver, and says so as a wrong signature
	// does: nobody learns which namespaces have one.
	code, body = post(h.engine, signedWith("tenant-secret"))
	h.g.Expect(code).To(Equal(http.StatusUnauthorized), body)
	h.g.Expect(body).To(ContainSubstring("no webhook at this address accepts this request"))

	// Unsigned requests at the other tenant are refused, and take nothing of any
	// namespace's budget: the tenant's own pushes still pass (the source's budget, which
	// all of these share here, is larger).
	for range gitwebhook.DefaultBurst + 10 {
		code, _ := post(h.other, func(*http.Request) {})
		h.g.Expect(code).To(Equal(http.StatusUnauthorized))
	}
	code, body = post(h.tenant, signedWith("tenant-secret"))
	h.g.Expect(code).To(Equal(http.StatusAccepted), body)
}
