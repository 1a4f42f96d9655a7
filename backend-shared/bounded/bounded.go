// Package bounded makes the connections to endpoints that a tenant names (a
// ManagedEnvironment's API server, a destination of leftover removal) bounded in time and
// in bytes, whatever the endpoint answers: a server that answers slowly, or with gigabytes,
// costs the service a timeout and a few megabytes, never its memory. Every client of such
// an endpoint is built from a config that went through RESTConfig.
package bounded

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// MaxResponseBytes bounds one response of a tenant-named API server. Lists are asked for in
// pages and discovery fits in a few megabytes, even on large clusters; a response past it
// fails with ErrResponseTooLarge. Not for watches, whose streams are endless.
const MaxResponseBytes = 16 << 20

// ErrResponseTooLarge: a response went past MaxResponseBytes.
var ErrResponseTooLarge = errors.New("the server's response is larger than the service reads")

// RESTConfig returns a copy of cfg whose every call gives up after timeout (the dial, the
// TLS handshake and each request) and reads at most MaxResponseBytes of each response.
func RESTConfig(cfg *rest.Config, timeout time.Duration) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Timeout = timeout
	out.Dial = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return limited{rt, MaxResponseBytes} })
	return out
}

// limited cuts each response body at max bytes.
type limited struct {
	next http.RoundTripper
	max  int64
}

func (l limited) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > l.max {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d read", ErrResponseTooLarge, resp.ContentLength, l.max)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: l.max, max: l.max}
	return resp, nil
}

// limitedBody fails once more than left bytes were read.
type limitedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body that ends exactly at the bound from a longer one.
		var one [1]byte
		if n, _ := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, b.max)
		}
		return b.ReadCloser.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
