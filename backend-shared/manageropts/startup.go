package manageropts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// startupProbes answer the probes on the manager's probe address while a binary prepares
// (migrates the database, or waits for its schema) before its manager exists: alive, so
// that the liveness probe never kills a migration half-way, and not ready, with the reason.
type startupProbes struct {
	reason atomic.Pointer[string]
	server *http.Server
}

// serveStartupProbes listens on addr ("" or "0": no server) and answers until stop.
func serveStartupProbes(addr string, log logr.Logger) (*startupProbes, error) {
	p := &startupProbes{}
	p.Waiting("starting")
	if addr == "" || addr == "0" {
		return p, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the health probes on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok: starting") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintln(w, "not ready:", *p.reason.Load())
	})
	p.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	// The manager that serves the probes later does not exist yet: nothing else can.
	go func() {
		if err := p.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "Serving the start-up probes")
		}
	}()
	return p, nil
}

// Waiting sets the reason /readyz gives.
func (p *startupProbes) Waiting(reason string) { p.reason.Store(&reason) }

// stop closes the listener, so that the manager can bind the address, within a few
// seconds of ctx's end at the latest.
func (p *startupProbes) stop(ctx context.Context) {
	if p.server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := p.server.Shutdown(ctx); err != nil {
		_ = p.server.Close()
	}
}
