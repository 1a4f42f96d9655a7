package bounded

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestResponsesAreCut(t *testing.T) {
	const max = 1 << 10
	for _, tc := range []struct {
		name    string
		serve   func(w http.ResponseWriter)
		wantLen int
		wantErr bool
	}{
		{name: "smaller", serve: func(w http.ResponseWriter) { _, _ = w.Write([]byte("ok")) }, wantLen: 2},
		{name: "exactly the bound", serve: func(w http.ResponseWriter) { _, _ = w.Write(make([]byte, max)) }, wantLen: max},
		{name: "one byte more, unannounced", serve: func(w http.ResponseWriter) {
			w.(http.Flusher).Flush() // chunked: no Content-Length
			_, _ = w.Write(make([]byte, max+1))
		}, wantErr: true},
		{name: "announced larger", serve: func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(max+1))
			_, _ = w.Write(make([]byte, max+1))
		}, wantErr: true},
		{name: "endless", serve: func(w http.ResponseWriter) { _, _ = io.Copy(w, zeros{}) }, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { tc.serve(w) }))
			defer srv.Close()
			c := &http.Client{Transport: limited{http.DefaultTransport, max}}
			resp, err := c.Get(srv.URL)
			if err == nil {
				defer func() { _ = resp.Body.Close() }()
				var body []byte
				body, err = io.ReadAll(resp.Body)
				if err == nil {
					g.Expect(body).To(HaveLen(tc.wantLen))
				}
			}
			if tc.wantErr {
				g.Expect(errors.Is(err, ErrResponseTooLarge)).To(BeTrue(), "%v", err)
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
		})
	}
}

// The HTTP client that client-go builds from RESTConfig's config fails on an endless
// answer, and gives up on a server that never answers.
func TestRESTConfigBoundsAClient(t *testing.T) {
	g := NewWithT(t)
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, zeros{})
	}))
	defer endless.Close()
	hang := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer hung.Close()
	defer close(hang)

	get := func(cfg *rest.Config) error {
		c, err := rest.HTTPClientFor(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := c.Get(cfg.Host + "/api")
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	err := get(RESTConfig(&rest.Config{Host: endless.URL}, 10*time.Second))
	g.Expect(errors.Is(err, ErrResponseTooLarge)).To(BeTrue(), "%v", err)

	start := time.Now()
	err = get(RESTConfig(&rest.Config{Host: hung.URL}, 500*time.Millisecond))
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.ToLower(err.Error())).To(Or(ContainSubstring("timeout"), ContainSubstring("deadline")))
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
}
