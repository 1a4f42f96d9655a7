// Package hostile sends the service what an attacker would, on loopback, and checks that the
// victims (another tenant, every tenant) keep their service.
package hostile

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// zeros is an endless body of zero bytes, made as it is sent.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// repeated reads b over and over.
type repeated struct {
	b   []byte
	pos int
}

func (r *repeated) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.pos:])
		n += c
		r.pos = (r.pos + c) % len(r.b)
	}
	return n, nil
}

// pkt is s as a Git pkt-line.
func pkt(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// TestReceiverFlood: 200 unsigned 5 MiB requests at once to made-up namespaces and 100 at a
// victim, from four addresses; meanwhile the victim's signed push is answered 202 within
// 5 s and refreshes its deployment, and the backend neither restarts nor grows by 256 MiB.
func TestReceiverFlood(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := stack.StartForTest(t, stack.Options{Binaries: []string{"backend"}, GitWebhook: true})
	c := s.ControlPlane.Client
	const victim, secret = "victim", "victim-webhook-secret"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "gitops-service-git-webhook"},
		StringData: map[string]string{"secret": secret}})).To(Succeed())
	const repo = "https://git.example.com/victim/config.git"
	depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "app"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: repo, Path: "app"}, Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	g.Expect(c.Create(ctx, depl)).To(Succeed())
	// The receiver finds the Secret in the backend's cache.
	g.Eventually(func() (int, error) {
		code, _, err := s.GitWebhook.PushGitHub(ctx, victim, secret, repo, "other-branch", "0000000")
		return code, err
	}).WithTimeout(30 * time.Second).Should(Equal(http.StatusAccepted))

	pid := s.Processes["backend"].Pid()
	before, _ := stack.RSSMiB(pid)

	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(s.GitWebhook.CAPEM)).To(BeTrue())
	attacker := func(source string) *http.Client {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 10 * time.Second}
		return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			DialContext: dialer.DialContext, MaxConnsPerHost: 0, MaxIdleConnsPerHost: 100,
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	sources := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	clients := map[string]*http.Client{}
	for _, src := range sources {
		clients[src] = attacker(src)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		codes = map[string]int{}
	)
	start := make(chan struct{})
	for i := range 300 {
		namespace := fmt.Sprintf("made-up-%d", i)
		if i >= 200 {
			namespace = victim
		}
		cl := clients[sources[i%len(sources)]]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+s.GitWebhook.Addr+"/hooks/"+namespace,
				io.LimitReader(zeros{}, 5<<20))
			if err != nil {
				return
			}
			req.Header.Set("X-GitHub-Event", "push")
			answer := "error"
			if resp, err := cl.Do(req); err == nil {
				answer = fmt.Sprint(resp.StatusCode)
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			mu.Lock()
			codes[answer]++
			mu.Unlock()
		}()
	}
	close(start)
	time.Sleep(200 * time.Millisecond) // the flood is under way

	pushed := time.Now()
	code, body, err := s.GitWebhook.PushGitHub(ctx, victim, secret, repo, "main", "1111111")
	answered := time.Since(pushed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusAccepted), body)
	g.Expect(answered).To(BeNumerically("<", 5*time.Second), "the victim's push is answered within 5 s")
	g.Expect(body).To(ContainSubstring(`"refreshed":["app"]`))

	wg.Wait()
	t.Logf("victim's push answered in %s; the flood's answers: %v", answered.Round(time.Millisecond), codes)
	g.Expect(codes).NotTo(HaveKey("202"))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(depl), depl)).To(Succeed())
	g.Expect(depl.Annotations).To(HaveKey(v1.RefreshAnnotation), "the victim's deployment was refreshed")

	g.Expect(s.Processes["backend"].Running()).To(BeTrue(), "the backend was not killed")
	g.Expect(s.Processes["backend"].Pid()).To(Equal(pid), "the backend keeps its PID")
	_, peak := stack.RSSMiB(pid)
	t.Logf("backend RSS before the flood %.0f MiB, peak %.0f MiB", before, peak)
	g.Expect(peak-before).To(BeNumerically("<", 256), "the backend grows by less than 256 MiB")
}
