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
)

// The receiver answers requests it can judge without the namespace's Secret (wrong method,
// wrong address, too many, too large) before it reads anything from the API server: a
// Receiver without a Client serves them.
func TestServeRefusesBeforeReadingTheSecret(t *testing.T) {
	unreadable := func() io.Reader { return iotest.ErrReader(errors.New("connection reset")) }
	tests := []struct {
		name, method, path string
		body               io.Reader
		wantCode           int
		wantMessage        string
	}{
		{"GET", http.MethodGet, "/hooks/team-a", nil, http.StatusMethodNotAllowed, "webhooks are POST requests"},
		{"PUT", http.MethodPut, "/hooks/team-a", nil, http.StatusMethodNotAllowed, "webhooks are POST requests"},
		{"no namespace", http.MethodPost, "/hooks/", nil, http.StatusNotFound, "the webhook address is /hooks/<namespace>"},
		{"not a namespace name", http.MethodPost, "/hooks/Team_A", nil, http.StatusNotFound, "the webhook address is /hooks/<namespace>"},
		// A path below the namespace could smuggle another name past the check.
		{"a deeper path", http.MethodPost, "/hooks/team-a/extra", nil, http.StatusNotFound, "the webhook address is /hooks/<namespace>"},
		{"another prefix", http.MethodPost, "/webhooks/team-a", nil, http.StatusNotFound, "the webhook address is /hooks/<namespace>"},
		{"a body that cannot be read", http.MethodPost, "/hooks/team-a", unreadable(), http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the payload is larger than %d bytes or could not be read", maxPayload)},
		{"a body beyond the limit", http.MethodPost, "/hooks/team-a", io.LimitReader(zeros{}, maxPayload+1), http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the payload is larger than %d bytes or could not be read", maxPayload)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Receiver{}
			provider := "unknown"
			code, result := r.serve(httptest.NewRequest(tt.method, tt.path, tt.body), &provider)
			g.Expect(code).To(Equal(tt.wantCode))
			g.Expect(result.Message).To(Equal(tt.wantMessage))
			g.Expect(result.Refreshed).To(BeEmpty())
			g.Expect(provider).To(Equal("unknown"), "no host is recognised before the payload is verified")
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Each namespace has a limiter of its own: a flood aimed at one tenant is refused with 429,
// and another tenant's hooks still pass.
func TestServeLimitsEachNamespace(t *testing.T) {
	g := NewWithT(t)
	// A rate so low that no token comes back during the test.
	r := &Receiver{Rate: rate.Limit(0.0001), Burst: 2}
	post := func(namespace string) int {
		provider := ""
		// An unreadable body ends an admitted request before the Secret would be read.
		code, _ := r.serve(httptest.NewRequest(http.MethodPost, PathPrefix+namespace, iotest.ErrReader(errors.New("x"))), &provider)
		return code
	}
	g.Expect(post("flooded")).To(Equal(http.StatusRequestEntityTooLarge))
	g.Expect(post("flooded")).To(Equal(http.StatusRequestEntityTooLarge))
	g.Expect(post("flooded")).To(Equal(http.StatusTooManyRequests))
	g.Expect(post("quiet")).To(Equal(http.StatusRequestEntityTooLarge), "another namespace has its own budget")

	provider := ""
	_, result := r.serve(httptest.NewRequest(http.MethodPost, PathPrefix+"flooded", nil), &provider)
	g.Expect(result.Message).To(Equal("too many webhook requests for namespace flooded; retry later"))
}

func TestLimiterDefaultsAndBound(t *testing.T) {
	g := NewWithT(t)
	r := &Receiver{}
	l := r.limiter("a")
	g.Expect(l.Limit()).To(Equal(rate.Limit(DefaultRate)))
	g.Expect(l.Burst()).To(Equal(DefaultBurst))
	g.Expect(r.limiter("a")).To(BeIdenticalTo(l), "a namespace keeps its limiter")

	custom := &Receiver{Rate: 2, Burst: 3}
	g.Expect(custom.limiter("a").Limit()).To(Equal(rate.Limit(2)))
	g.Expect(custom.limiter("a").Burst()).To(Equal(3))

	// Requests naming ever new namespaces do not grow the map without bound: at the bound,
	// it starts afresh.
	for i := 0; len(r.limiters) < maxLimiters; i++ {
		r.limiter(fmt.Sprintf("ns-%d", i))
	}
	g.Expect(r.limiters).To(HaveLen(maxLimiters))
	r.limiter("one-more")
	g.Expect(r.limiters).To(HaveLen(1))
	g.Expect(r.limiters).To(HaveKey("one-more"))
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
