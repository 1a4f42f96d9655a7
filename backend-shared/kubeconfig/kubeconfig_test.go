package kubeconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// kubeconfig is a document with two clusters on the same server and one elsewhere.
const kubeconfig = `apiVersion: v1
kind: Config
current-context: %s
clusters:
- name: prod
  cluster: {server: "https://prod.example.com:6443/", certificate-authority-data: Y2E=}
- name: prod-again
  cluster: {server: "https://prod.example.com:6443"}
- name: dev
  cluster: {server: "https://dev.example.com"}
users:
- name: token
  user: {token: secret-token}
- name: cert
  user: {client-certificate-data: Y2VydA==, client-key-data: a2V5}
- name: basic
  user: {username: u, password: p}
- name: plugin
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token}}
- name: empty
  user: {}
- name: files
  user: {tokenFile: /var/run/secrets/token}
contexts:
- name: a-prod-cert
  context: {cluster: prod, user: cert}
- name: b-prod-token
  context: {cluster: prod-again, user: token}
- name: dev-basic
  context: {cluster: dev, user: basic}
- name: dev-plugin
  context: {cluster: dev, user: plugin}
- name: dev-empty
  context: {cluster: dev, user: empty}
- name: dev-files
  context: {cluster: dev, user: files}
`

func doc(current string) []byte { return []byte(strings.Replace(kubeconfig, "%s", current, 1)) }

func TestParse(t *testing.T) {
	tests := []struct {
		name        string
		current     string
		opts        Options
		wantContext string
		wantKind    Kind
	}{
		{"the current context", "dev-basic", Options{}, "dev-basic", ""},
		{"the preferred context", "dev-basic", Options{Context: "b-prod-token"}, "b-prod-token", ""},
		{"a preferred context that does not exist", "dev-basic", Options{Context: "nope"}, "", NoContext},
		{"no current context", "", Options{}, "", NoContext},
		{"by server: the preferred context", "dev-basic", Options{Server: "https://prod.example.com:6443", Context: "b-prod-token"}, "b-prod-token", ""},
		{"by server: the current context", "b-prod-token", Options{Server: "https://prod.example.com:6443/"}, "b-prod-token", ""},
		{"by server: else the first by name", "dev-basic", Options{Server: "https://prod.example.com:6443"}, "a-prod-cert", ""},
		{"by server: a preferred context elsewhere does not count", "dev-basic",
			Options{Server: "https://prod.example.com:6443", Context: "dev-basic"}, "a-prod-cert", ""},
		{"by server: none", "dev-basic", Options{Server: "https://other.example.com"}, "", NoContext},
		{"a credential plugin", "dev-plugin", Options{}, "", Plugin},
		{"no credentials", "dev-empty", Options{}, "", NoCredentials},
		{"a file reference", "dev-files", Options{}, "", FileReference},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(doc(tt.current), tt.opts)
			if KindOf(err) != tt.wantKind {
				t.Fatalf("error %v (kind %q), want kind %q", err, KindOf(err), tt.wantKind)
			}
			if err != nil {
				if strings.Contains(err.Error(), "secret-token") {
					t.Fatalf("the error quotes a credential: %v", err)
				}
				return
			}
			if c.Context != tt.wantContext {
				t.Fatalf("context %q, want %q", c.Context, tt.wantContext)
			}
		})
	}
}

func TestParseReadsTheChosenContextsCredentials(t *testing.T) {
	c, err := Parse(doc("a-prod-cert"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Credentials{Context: "a-prod-cert", Server: "https://prod.example.com:6443/", CAData: []byte("ca"),
		CertData: []byte("cert"), KeyData: []byte("key")}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	if _, err := Parse([]byte("clusters: [secret-token"), Options{}); KindOf(err) != Unparseable || strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("unparseable: %v", err)
	}
}

func TestLoadReadsTheFilesAnOperatorsKubeconfigNames(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"token": "file-token\n", "ca.crt": "ca-data"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "config")
	err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://x.example.com", certificate-authority: ca.crt}}]
users: [{name: c, user: {tokenFile: token}}]
contexts: [{name: c, context: {cluster: c, user: c}}]
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.BearerToken != "file-token" || string(c.CAData) != "ca-data" {
		t.Fatalf("token %q, CA %q", c.BearerToken, c.CAData)
	}
	if _, err := Load(filepath.Join(dir, "missing"), Options{}); KindOf(err) != Unparseable {
		t.Fatalf("a missing file: %v", err)
	}
}

func TestWriteThenParseGivesTheSameCredentials(t *testing.T) {
	for _, current := range []string{"b-prod-token", "dev-basic", "a-prod-cert"} {
		c, err := Parse(doc(current), Options{})
		if err != nil {
			t.Fatal(err)
		}
		data, err := c.Write()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Errorf("%s: after Write and Parse %+v, want %+v", current, again, c)
		}
	}
}

func TestRESTConfig(t *testing.T) {
	c := &Credentials{Server: "https://x", BearerToken: "t", Insecure: true, ProxyURL: "http://proxy:3128"}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://x" || cfg.BearerToken != "t" || !cfg.Insecure || cfg.Proxy == nil {
		t.Fatalf("%+v", cfg)
	}
	c.ProxyURL = "://bad"
	if _, err := c.RESTConfig(); KindOf(err) != Unparseable {
		t.Fatalf("a bad proxy-url: %v", err)
	}
}
