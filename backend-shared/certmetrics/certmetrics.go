// Package certmetrics exports when the serving certificates of a binary expire, so that an
// alert can fire while there is still time to renew a certificate that nothing rotates (a
// Secret created by hand rather than by cert-manager).
package certmetrics

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

var expiryDesc = prometheus.NewDesc("gitops_serving_certificate_expiry_timestamp_seconds",
	"When a serving certificate expires (its NotAfter, in Unix seconds), by server; read from its tls.crt at each scrape, so a renewed certificate shows at once.",
	[]string{"server"}, nil)

// collector reads the watched certificate files on each scrape.
type collector struct {
	mu    sync.Mutex
	files map[string]string // server → certificate file
	log   logr.Logger
}

var certificates = &collector{files: map[string]string{}, log: logr.Discard()}

func init() {
	ctrlmetrics.Registry.MustRegister(certificates)
}

// Watch exports the expiry of the certificate in file (PEM, the leaf first) under the label
// server. Watching the same server again replaces its file.
func Watch(server, file string, log logr.Logger) {
	certificates.mu.Lock()
	defer certificates.mu.Unlock()
	certificates.files[server] = file
	certificates.log = log
}

// WebhookCertFile is the certificate file the manager's webhook server serves.
func WebhookCertFile(s webhook.Server) string {
	opts := webhook.Options{}
	if d, ok := s.(*webhook.DefaultServer); ok {
		opts = d.Options
	}
	// The webhook server's own defaults, which it applies only when it starts.
	if opts.CertDir == "" {
		opts.CertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if opts.CertName == "" {
		opts.CertName = "tls.crt"
	}
	return filepath.Join(opts.CertDir, opts.CertName)
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

// Collect implements prometheus.Collector. A file that cannot be read yet (cert-manager has
// not written the Secret) gives no sample.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for server, file := range c.files {
		notAfter, err := NotAfter(file)
		if err != nil {
			c.log.V(1).Info("not exporting the certificate's expiry", "server", server, "error", err.Error())
			continue
		}
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, float64(notAfter.Unix()), server)
	}
}

// NotAfter reads the expiry of the first certificate in a PEM file.
func NotAfter(file string) (time.Time, error) {
	data, err := os.ReadFile(filepath.Clean(file)) // a path the binary configures, not user input
	if err != nil {
		return time.Time{}, err
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return time.Time{}, errors.New("no certificate in " + file)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return time.Time{}, fmt.Errorf("parsing the certificate in %s: %w", file, err)
		}
		return cert.NotAfter, nil
	}
}
