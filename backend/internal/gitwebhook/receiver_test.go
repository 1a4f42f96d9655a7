package gitwebhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-service/gitops-service/backend-shared/scheme"
)

// withSecret is a receiver whose namespace "team-a" has a webhook Secret with key, read
// through a fake client (no other namespace has one).
func withSecret(key string) *Receiver {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: SecretName}, Data: map[string][]byte{SecretKey: []byte(key)}}
	return &Receiver{Client: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(sec).Build()}
}

// post is a request from source (host:port) to namespace's address with body and headers.
func post(namespace, source string, body io.Reader, header ...string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, PathPrefix+namespace, body)
	req.RemoteAddr = source
	for i := 0; i < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// The receiver answers what it can judge from the request line (wrong method, wrong
// address) before anything else, a namespace without a Secret before reading the payload,
// and gives one answer to every request that no webhook accepts, so that nobody learns
// which namespaces have webhooks.
func TestServeAnswers(t *testing.T) {
	unreadable := func() io.Reader { return iotest.ErrReader(errors.New("connection reset")) }
	push := []byte(`{"ref":"refs/heads/main","after":"abc","repository":{"clone_url":"https://git.example.com/a/b.git"}}`)
	signed := func(key string) []string {
		return []string{"X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256=" + sign(push, []byte(key))}
	}
	tests := []struct {
		name, method, path string
		body               io.Reader
		header             []string
		wantCode           int
		wantMessage        string
	}{
		{"GET", http.MethodGet, "/hooks/team-a", nil, nil, http.StatusMethodNotAllowed, "webhooks are POST requests"},
		{"PUT", http.MethodPut, "/hooks/team-a", nil, nil, http.StatusMethodNotAllowed, "webhooks are POST requests"},
		{"no namespace", http.MethodPost, "/hooks/", nil, nil, http.StatusNotFound, "the webhook address is /hooks/<namespace>"},
		{"not a namespace name", http.MethodPost, "/hooks/Team_A", nil, nil, http.StatusNotFound, "the webhook address is /hooks/<namespace>"},
		// A path below the namespace could smuggle another name past the check.
		{"a deeper path", http.MethodPost, "/hooks/team-a/extra", nil, nil, http.StatusNotFound, "the webhook address is /hooks/<namespace>"},
		{"another prefix", http.MethodPost, "/webhooks/team-a", nil, nil, http.StatusNotFound, "the webhook address is /hooks/<namespace>"},
		// Unread: the body would fail to read.
		{"a namespace without a Secret", http.MethodPost, "/hooks/team-b", unreadable(), signed("s3cret"), http.StatusUnauthorized, notAccepted},
		{"unsigned", http.MethodPost, "/hooks/team-a", bytes.NewReader(push), []string{"X-GitHub-Event", "push"}, http.StatusUnauthorized, notAccepted},
		{"signed with another secret", http.MethodPost, "/hooks/team-a", bytes.NewReader(push), signed("other"), http.StatusUnauthorized, notAccepted},
		{"not a Git host's event", http.MethodPost, "/hooks/team-a", bytes.NewReader(push), nil, http.StatusUnauthorized, notAccepted},
		{"a body that cannot be read", http.MethodPost, "/hooks/team-a", unreadable(), signed("s3cret"), http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the payload is larger than %d bytes or could not be read", maxPayload)},
		{"a body beyond the limit", http.MethodPost, "/hooks/team-a", io.LimitReader(zeros{}, maxPayload+1), signed("s3cret"), http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the payload is larger than %d bytes or could not be read", maxPayload)},
		{"a signed push", http.MethodPost, "/hooks/team-a", bytes.NewReader(push), signed("s3cret"), http.StatusAccepted, "0 GitOpsDeployments refreshed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := withSecret("s3cret")
			req := httptest.NewRequest(tt.method, tt.path, tt.body)
			for i := 0; i < len(tt.header); i += 2 {
				req.Header.Set(tt.header[i], tt.header[i+1])
			}
			provider := "unknown"
			code, result := r.serve(req, &provider)
			g.Expect(code).To(Equal(tt.wantCode))
			g.Expect(result.Message).To(Equal(tt.wantMessage))
			g.Expect(result.Refreshed).To(BeEmpty())
			if code != http.StatusAccepted {
				g.Expect(provider).To(Equal("unknown"), "no host is recognised before the payload is verified")
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Only verified pushes count against a namespace: unsigned requests aimed at a tenant never
// take its pushes' budget, and a tenant's verified flood leaves another's alone.
func TestServeLimitsEachNamespaceOnVerifiedPushes(t *testing.T) {
	g := NewWithT(t)
	r := withSecret("s3cret")
	// A rate so low that no token comes back during the test.
	r.Rate, r.Burst = rate.Limit(0.0001), 2
	ping := []byte(`{}`)
	verified := func() int {
		code, _ := r.serve(post("team-a", "192.0.2.1:1", bytes.NewReader(ping), "X-GitHub-Event", "ping", "X-Hub-Signature-256", "sha256="+sign(ping, []byte("s3cret"))), new(string))
		return code
	}
	for range 10 {
		code, _ := r.serve(post("team-a", "192.0.2.2:1", bytes.NewReader(ping), "X-GitHub-Event", "ping"), new(string))
		g.Expect(code).To(Equal(http.StatusUnauthorized))
	}
	g.Expect(verified()).To(Equal(http.StatusOK), "unsigned requests took nothing of the namespace's budget")
	g.Expect(verified()).To(Equal(http.StatusOK))
	g.Expect(verified()).To(Equal(http.StatusTooManyRequests))
	_, result := r.serve(post("team-a", "192.0.2.1:1", bytes.NewReader(ping), "X-GitHub-Event", "ping", "X-Hub-Signature-256", "sha256="+sign(ping, []byte("s3cret"))), new(string))
	g.Expect(result.Message).To(Equal("too many webhook requests for namespace team-a; retry later"))
}

// Each source address has a budget of its own, verified or not.
func TestServeLimitsEachSource(t *testing.T) {
	g := NewWithT(t)
	r := withSecret("s3cret")
	r.SourceRate, r.SourceBurst = rate.Limit(0.0001), 3
	code := func(source string) int {
		c, _ := r.serve(post("made-up", source, nil), new(string))
		return c
	}
	for range 3 {
		g.Expect(code("198.51.100.7:4000")).To(Equal(http.StatusUnauthorized))
	}
	g.Expect(code("198.51.100.7:4001")).To(Equal(http.StatusTooManyRequests), "the port does not make another source")
	g.Expect(code("198.51.100.8:4000")).To(Equal(http.StatusUnauthorized), "another source has its own budget")

	r.NoSourceLimits = true
	g.Expect(code("198.51.100.7:4000")).To(Equal(http.StatusUnauthorized), "without limits per source")
	for range 8 {
		_, ok := r.admit("198.51.100.7")
		g.Expect(ok).To(BeTrue(), "one source may take every place")
	}
}

// Beyond MaxInFlight requests at once, or an eighth of them from one source, one more is
// answered 503 at once, unread.
func TestServeHTTPBoundsRequestsInFlight(t *testing.T) {
	g := NewWithT(t)
	r := &Receiver{MaxInFlight: 16}
	var releases []func()
	for i := range 16 {
		source := fmt.Sprintf("192.0.2.%d", i/2)
		release, ok := r.admit(source)
		g.Expect(ok).To(BeTrue(), "place %d", i)
		releases = append(releases, release)
	}
	_, ok := r.admit("192.0.2.100")
	g.Expect(ok).To(BeFalse(), "every place is taken")
	w := httptest.NewRecorder()
	r.ServeHTTP(w, post("team-a", "192.0.2.100:1", iotest.ErrReader(errors.New("must not be read"))))
	g.Expect(w.Code).To(Equal(http.StatusServiceUnavailable))
	g.Expect(w.Header().Get("Retry-After")).To(Equal("1"))

	releases[15]() // one of 192.0.2.7's
	_, ok = r.admit("192.0.2.0")
	g.Expect(ok).To(BeFalse(), "one source holds at most 16/8 places")
	w = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/hooks/team-a", nil)
	req.RemoteAddr = "192.0.2.200:1"
	r.ServeHTTP(w, req)
	g.Expect(w.Code).To(Equal(http.StatusMethodNotAllowed), "another source gets the place")
}

func TestLimiterDefaultsAndBound(t *testing.T) {
	g := NewWithT(t)
	var l limiters
	a := l.get("a", 0, 0, DefaultRate, DefaultBurst)
	g.Expect(a.Limit()).To(Equal(rate.Limit(DefaultRate)))
	g.Expect(a.Burst()).To(Equal(DefaultBurst))
	g.Expect(l.get("a", 0, 0, DefaultRate, DefaultBurst)).To(BeIdenticalTo(a), "a key keeps its limiter")

	var custom limiters
	g.Expect(custom.get("a", 2, 3, DefaultRate, DefaultBurst).Limit()).To(Equal(rate.Limit(2)))
	g.Expect(custom.get("a", 2, 3, DefaultRate, DefaultBurst).Burst()).To(Equal(3))

	// Requests naming ever new keys do not grow the map without bound: at the bound, it
	// starts afresh.
	for i := 0; len(l.m) < maxLimiters; i++ {
		l.get(fmt.Sprintf("ns-%d", i), 0, 0, DefaultRate, DefaultBurst)
	}
	g.Expect(l.m).To(HaveLen(maxLimiters))
	l.get("one-more", 0, 0, DefaultRate, DefaultBurst)
	g.Expect(l.m).To(HaveLen(1))
	g.Expect(l.m).To(HaveKey("one-more"))
}

// ServeHTTP answers with JSON, and counts the request by host and code.
func TestServeHTTPAnswersJSONAndCounts(t *testing.T) {
	g := NewWithT(t)
	counter := requests.WithLabelValues("unknown", "405")
	before := testutil.ToFloat64(counter)
	w := httptest.NewRecorder()
	(&Receiver{}).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hooks/team-a", nil))
	g.Expect(w.Code).To(Equal(http.StatusMethodNotAllowed))
	g.Expect(w.Header().Get("Content-Type")).To(Equal("application/json"))
	var got map[string]any
	g.Expect(json.Unmarshal(w.Body.Bytes(), &got)).To(Succeed())
	g.Expect(got).To(Equal(map[string]any{"message": "webhooks are POST requests"}), "refreshed is omitted when empty")
	g.Expect(testutil.ToFloat64(counter)).To(Equal(before + 1))
}

func TestResultJSON(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	g.Expect(json.NewEncoder(&buf).Encode(Result{Message: "2 GitOpsDeployments refreshed", Refreshed: []string{"a", "b"}})).To(Succeed())
	g.Expect(strings.TrimSpace(buf.String())).To(Equal(`{"message":"2 GitOpsDeployments refreshed","refreshed":["a","b"]}`))
}
