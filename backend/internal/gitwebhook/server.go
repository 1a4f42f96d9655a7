package gitwebhook

import (
	"crypto/tls"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// shutdownTimeout bounds how long requests in flight may finish when the manager stops.
const shutdownTimeout = 10 * time.Second

// Serve adds to mgr what serves receiver over TLS on its own port: a watcher that reloads
// the certificate in certDir (tls.crt, tls.key) when it changes, and the manager's HTTP
// server runnable, which every replica runs (no leader needed) and shuts down with it.
func Serve(mgr manager.Manager, addr, certDir string, receiver http.Handler) error {
	watcher, err := certwatcher.New(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return err
	}
	if err := mgr.Add(watcher); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(PathPrefix, receiver)
	timeout := shutdownTimeout
	return mgr.Add(&manager.Server{
		Name: "git-webhook",
		Server: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      30 * time.Second,
		},
		Listener:        tls.NewListener(l, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: watcher.GetCertificate}),
		ShutdownTimeout: &timeout,
	})
}
