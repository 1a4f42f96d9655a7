package certmetrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// certPEM is a self-signed certificate that expires at notAfter, PEM encoded.
func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestNotAfter(t *testing.T) {
	expiry := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	cert := certPEM(t, expiry)
	keyBlock := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("not read")})
	tests := []struct {
		name    string
		content []byte
		want    time.Time
		wantErr string
	}{
		{name: "a certificate", content: cert, want: expiry},
		{name: "the certificate after another block", content: append(keyBlock, cert...), want: expiry},
		{name: "the leaf of a chain", content: append(cert, certPEM(t, expiry.Add(time.Hour))...), want: expiry},
		{name: "no certificate", content: keyBlock, wantErr: "no certificate"},
		{name: "not PEM", content: []byte("garbage"), wantErr: "no certificate"},
		{name: "a broken certificate", content: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}}), wantErr: "parsing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "tls.crt")
			if err := os.WriteFile(file, tt.content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := NotAfter(file)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NotAfter = %v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("NotAfter = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// The gauge follows the file: a renewed certificate shows at the next scrape, and a server
// whose file is missing has no sample.
func TestCollectorReadsTheFileAtEachScrape(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tls.crt")
	first := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.WriteFile(file, certPEM(t, first), 0o600); err != nil {
		t.Fatal(err)
	}
	Watch("webhook", file, logr.Discard())
	Watch("git-webhook", filepath.Join(dir, "missing.crt"), logr.Discard())
	t.Cleanup(func() {
		certificates.mu.Lock()
		defer certificates.mu.Unlock()
		certificates.files = map[string]string{}
	})
	want := func(at time.Time) string {
		return fmt.Sprintf(`
# HELP gitops_serving_certificate_expiry_timestamp_seconds %s
# TYPE gitops_serving_certificate_expiry_timestamp_seconds gauge
gitops_serving_certificate_expiry_timestamp_seconds{server="webhook"} %d
`, "When a serving certificate expires (its NotAfter, in Unix seconds), by server; read from its tls.crt at each scrape, so a renewed certificate shows at once.", at.Unix())
	}
	if err := testutil.CollectAndCompare(certificates, strings.NewReader(want(first))); err != nil {
		t.Fatal(err)
	}
	renewed := first.AddDate(0, 3, 0)
	if err := os.WriteFile(file, certPEM(t, renewed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(certificates, strings.NewReader(want(renewed))); err != nil {
		t.Fatal(err)
	}
}
