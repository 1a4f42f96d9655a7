package gitwebhook

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Server serves a Receiver over TLS on its own port, with the certificate in CertDir
// (tls.crt, tls.key) reloaded when it changes. Every replica serves: it needs no leader.
type Server struct {
	Addr     string
	CertDir  string
	Receiver http.Handler
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	watcher, err := certwatcher.New(filepath.Join(s.CertDir, "tls.crt"), filepath.Join(s.CertDir, "tls.key"))
	if err != nil {
		return err
	}
	go func() { _ = watcher.Start(ctx) }()
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(PathPrefix, s.Receiver)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: watcher.GetCertificate},
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	ctrl.LoggerFrom(ctx).Info("Serving the Git webhook receiver", "address", l.Addr().String())
	go func() {
		<-ctx.Done()
		// ctx is done: shutting down needs a context of its own.
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
