package db_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// TestConnConfigTLSPolicy: only TLS connections, except plaintext to loopback with the
// explicit development flag.
func TestConnConfigTLSPolicy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url           string
		allowInsecure bool
		ok            bool
	}{
		{"postgres://u:p@db.example.com/gitops?sslmode=verify-full", false, true},
		{"postgres://u:p@db.example.com/gitops?sslmode=require", false, true},
		{"postgres://u:p@db.example.com/gitops?sslmode=verify-ca", false, true},
		{"host=db.example.com user=u dbname=gitops sslmode=require", false, true},
		{"postgres://u:p@db.example.com/gitops", false, false}, // no sslmode means prefer
		{"postgres://u:p@db.example.com/gitops?sslmode=prefer", false, false},
		{"postgres://u:p@db.example.com/gitops?sslmode=allow", false, false},
		{"postgres://u:p@db.example.com/gitops?sslmode=disable", false, false},
		{"postgres://u:p@db.example.com/gitops?sslmode=disable", true, false}, // not loopback
		{"postgres://u:p@db.example.com/gitops", true, false},
		{"postgres://u:p@127.0.0.1/gitops?sslmode=disable", false, false},
		{"postgres://u:p@127.0.0.1/gitops?sslmode=disable", true, true},
		{"postgres://u:p@localhost/gitops", true, true},
		{"postgres://u:p@[::1]:5433/gitops?sslmode=disable", true, true},
		{"postgres://u:p@127.0.0.1,db.example.com/gitops?sslmode=disable", true, false}, // every host counts
		{"", true, false},
	}
	for _, tc := range cases {
		_, err := db.Config{URL: tc.url, AllowInsecure: tc.allowInsecure}.ConnConfig()
		if tc.ok && err != nil {
			t.Errorf("%q (allowInsecure=%v): unexpected error: %v", tc.url, tc.allowInsecure, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%q (allowInsecure=%v): accepted, want refused", tc.url, tc.allowInsecure)
		}
	}
}

// TestConnConfigTakesTLSFromTheEnvironment: libpq's PGSSLMODE and PGSSLROOTCERT complete a
// URL without sslmode, as the CloudNativePG component configures the binaries (its
// Secret's uri names no sslmode); a URL's own sslmode still wins.
func TestConnConfigTakesTLSFromTheEnvironment(t *testing.T) {
	caPEM, _, _, err := testenv.ServerCertificate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	const uri = "postgresql://gitops:secret@gitops-service-db-rw.gitops-service:5432/gitops"
	cases := []struct {
		name, url, sslmode string
		ok                 bool
	}{
		{"verify-full from the environment", uri, "verify-full", true},
		{"prefer from the environment", uri, "prefer", false},
		{"the URL's disable wins", uri + "?sslmode=disable", "verify-full", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PGSSLMODE", tc.sslmode)
			t.Setenv("PGSSLROOTCERT", ca)
			cc, err := db.Config{URL: tc.url}.ConnConfig()
			if !tc.ok {
				if err == nil {
					t.Fatalf("accepted, want refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tlsCfg := cc.TLSConfig
			if tlsCfg == nil || tlsCfg.InsecureSkipVerify || tlsCfg.RootCAs == nil || tlsCfg.ServerName != "gitops-service-db-rw.gitops-service" {
				t.Fatalf("TLS config %+v, want the server's name verified against the CA", tlsCfg)
			}
		})
	}
}

func TestConnConfigErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	g := g(t)
	for _, url := range []string{
		"postgres://u:s3cr3t-pw@db.example.com:notaport/gitops?sslmode=require",
		"postgres://u:s3cr3t-pw@db.example.com/gitops?sslmode=bogus",
		"postgres://u:s3cr3t-pw@db.example.com/gitops?sslmode=disable",
	} {
		_, err := db.Config{URL: url}.ConnConfig()
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t-pw"))
	}
}

func TestOpenAndMigrateApplyThePolicy(t *testing.T) {
	t.Parallel()
	g := g(t)
	ctx := context.Background()
	cfg := dbtest.NewConfig(t)
	cfg.AllowInsecure = false
	_, err := db.Open(ctx, cfg)
	g.Expect(err).To(MatchError(ContainSubstring("--database-allow-insecure")))
	g.Expect(db.Migrate(ctx, cfg)).To(MatchError(ContainSubstring("sslmode")))

	cfg.AllowInsecure, cfg.MaxOpenConns = true, 3
	bdb, err := db.Open(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = bdb.Close() }()
	g.Expect(bdb.Stats().MaxOpenConnections).To(Equal(3))
}

func TestBindFlags(t *testing.T) {
	t.Setenv(db.EnvDatabaseURL, "postgres://from-env/db?sslmode=require")
	g := g(t)

	var cfg db.Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.BindFlags(fs)
	g.Expect(fs.Parse(nil)).To(Succeed())
	g.Expect(cfg).To(Equal(db.Config{URL: "postgres://from-env/db?sslmode=require", MaxOpenConns: db.DefaultMaxOpenConns}))

	cfg = db.Config{}
	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.BindFlags(fs)
	g.Expect(fs.Parse(strings.Fields("--database-url=postgres://x/y --database-max-conns=25 --database-allow-insecure"))).To(Succeed())
	g.Expect(cfg).To(Equal(db.Config{URL: "postgres://x/y", MaxOpenConns: 25, AllowInsecure: true}))
}

// The help shows --database-url's default from the environment without its password.
func TestDatabaseURLHelpHidesThePassword(t *testing.T) {
	t.Setenv(db.EnvDatabaseURL, "postgres://gitops:s3cret-pw@db.example.com/gitops?sslmode=require")
	g := g(t)
	var cfg db.Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.BindFlags(fs)
	var help strings.Builder
	fs.SetOutput(&help)
	fs.PrintDefaults()
	g.Expect(help.String()).To(ContainSubstring("postgres://gitops:xxxxx@db.example.com/gitops?sslmode=require"))
	g.Expect(help.String()).NotTo(ContainSubstring("s3cret-pw"))
	g.Expect(cfg.URL).To(Equal("postgres://gitops:s3cret-pw@db.example.com/gitops?sslmode=require"), "the value itself is kept")
}

func TestRedactURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://u:pw@h/db?sslmode=require", "postgres://u:xxxxx@h/db?sslmode=require"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://h/db?password=pw&sslmode=require", "postgres://h/db?password=xxxxx&sslmode=require"},
		{"host=h user=u password=pw sslmode=require", "host=h user=u password=xxxxx sslmode=require"},
		{"host=h password = 'p w\\'x' sslmode=require", "host=h password = xxxxx sslmode=require"},
		{"", ""},
	}
	for _, c := range cases {
		if got := db.RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
