package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// single is a kubeconfig with one context c whose cluster and user are given as YAML
// flow mappings.
func single(cluster, user string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: %s}]
users: [{name: u, user: %s}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`, cluster, user))
}

const server = `{server: "https://x.example.com"}`

func TestParseRefusesWhatTheServiceCannotUse(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		opts     Options
		wantKind Kind
		// wantInMessage names what to fix.
		wantInMessage string
	}{
		{"an exec plugin", single(server, `{exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, args: [eks, get-token]}}`),
			Options{}, Plugin, "exec or auth-provider plugin"},
		{"an auth provider", single(server, `{auth-provider: {name: oidc, config: {id-token: secret-token}}}`), Options{}, Plugin, "plugin"},
		// A plugin is refused even when the caller has credentials of its own.
		{"a plugin with credentials optional", single(server, `{exec: {apiVersion: client.authentication.k8s.io/v1, command: x}, token: secret-token}`),
			Options{CredentialsOptional: true}, Plugin, "plugin"},
		{"a token file", single(server, `{tokenFile: /var/run/secrets/token}`), Options{}, FileReference, "tokenFile"},
		{"a client certificate file", single(server, `{client-certificate: /tmp/c.crt, client-key-data: a2V5}`), Options{}, FileReference, "client-certificate"},
		{"a client key file", single(server, `{client-certificate-data: Y2VydA==, client-key: /tmp/c.key}`), Options{}, FileReference, "client-key"},
		{"a CA file", single(`{server: "https://x.example.com", certificate-authority: /tmp/ca.crt}`, `{token: secret-token}`),
			Options{}, FileReference, "certificate-authority"},
		// Inline data beside a file reference does not make the reference acceptable.
		{"a file next to inline data", single(server, `{token: secret-token, tokenFile: /t}`), Options{}, FileReference, "tokenFile"},
		{"several files are all named", single(`{server: "https://x", certificate-authority: /ca}`, `{client-certificate: /c, client-key: /k}`),
			Options{}, FileReference, "client-certificate, client-key, certificate-authority"},
		{"a certificate without its key", single(server, `{client-certificate-data: Y2VydA==}`), Options{}, NoCredentials, "no credentials"},
		{"a key without its certificate", single(server, `{client-key-data: a2V5}`), Options{}, NoCredentials, "no credentials"},
		{"a username without a password", single(server, `{username: u}`), Options{}, NoCredentials, "no credentials"},
		{"a password without a username", single(server, `{password: p}`), Options{}, NoCredentials, "no credentials"},
		{"a token of spaces", single(server, `{token: "   "}`), Options{}, NoCredentials, "no credentials"},
		{"a context naming no cluster", []byte(`apiVersion: v1
kind: Config
current-context: c
users: [{name: u, user: {token: secret-token}}]
contexts: [{name: c, context: {cluster: missing, user: u}}]
`), Options{}, NoContext, "names no cluster"},
		{"not YAML", []byte("{{{ secret-token"), Options{}, Unparseable, "not a valid kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.data, tt.opts)
			if KindOf(err) != tt.wantKind {
				t.Fatalf("got %+v, %v (kind %q), want kind %q", c, err, KindOf(err), tt.wantKind)
			}
			if !strings.Contains(err.Error(), tt.wantInMessage) {
				t.Errorf("message %q does not say %q", err, tt.wantInMessage)
			}
			// The message never quotes the kubeconfig, which holds credentials.
			for _, secret := range []string{"secret-token", "a2V5", "Y2VydA=="} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("message %q quotes %q", err, secret)
				}
			}
		})
	}
}

func TestParseAcceptsEachKindOfInlineCredentials(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		opts Options
		want Credentials
	}{
		{"a token, trimmed", single(server, `{token: " tok\n"}`), Options{}, Credentials{Context: "c", Server: "https://x.example.com", BearerToken: "tok"}},
		{"a client certificate", single(server, `{client-certificate-data: Y2VydA==, client-key-data: a2V5}`), Options{},
			Credentials{Context: "c", Server: "https://x.example.com", CertData: []byte("cert"), KeyData: []byte("key")}},
		{"basic auth", single(server, `{username: u, password: p}`), Options{}, Credentials{Context: "c", Server: "https://x.example.com", Username: "u", Password: "p"}},
		// The caller installs a ServiceAccount and brings its own token.
		{"no credentials when they are optional", single(server, `{}`), Options{CredentialsOptional: true}, Credentials{Context: "c", Server: "https://x.example.com"}},
		{"TLS settings of the cluster", single(`{server: "https://x", insecure-skip-tls-verify: true, tls-server-name: api.internal, proxy-url: "http://proxy:3128"}`,
			`{token: t}`), Options{},
			Credentials{Context: "c", Server: "https://x", Insecure: true, ServerName: "api.internal", ProxyURL: "http://proxy:3128", BearerToken: "t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.data, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", *c) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("got %+v, want %+v", *c, tt.want)
			}
		})
	}
}

func TestParseAContextWithoutAUserHasNoCredentials(t *testing.T) {
	data := []byte(`apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://x"}}]
contexts: [{name: c, context: {cluster: c, user: nobody}}]
`)
	if _, err := Parse(data, Options{}); KindOf(err) != NoCredentials {
		t.Errorf("without credentials optional: %v, want NoCredentials", err)
	}
	c, err := Parse(data, Options{CredentialsOptional: true})
	if err != nil || c.Server != "https://x" {
		t.Errorf("with credentials optional: %+v, %v", c, err)
	}
}

func TestErrorsNameTheChosenContext(t *testing.T) {
	_, err := Parse(single(server, `{}`), Options{})
	var e *Error
	if !errors.As(err, &e) || e.Context != "c" || !strings.Contains(e.Message, `context "c"`) {
		t.Errorf("error %+v, want one naming context c", err)
	}
	// No context was chosen: none is named.
	_, err = Parse(single(server, `{token: t}`), Options{Context: "other"})
	if !errors.As(err, &e) || e.Context != "" {
		t.Errorf("error %+v, want no context", err)
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, ""},
		{"another error", errors.New("x"), ""},
		{"an Error", &Error{Kind: Plugin}, Plugin},
		{"a wrapped Error", fmt.Errorf("reading Secret s: %w", &Error{Kind: FileReference}), FileReference},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KindOf(tt.err); got != tt.want {
				t.Errorf("KindOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChooseContextByServer(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	for name, srv := range map[string]string{"a": "https://one/", "b": "https://one", "c": "https://two", "d": "https://one//"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: srv}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name}
	}
	cfg.Contexts["dangling"] = &clientcmdapi.Context{Cluster: "missing"}
	cfg.Contexts["nil"] = nil
	tests := []struct {
		name          string
		current       string
		opts          Options
		want          string
		wantNoContext bool
	}{
		{"preferred first", "c", Options{Server: "https://one", Context: "d"}, "d", false},
		{"then the current one", "b", Options{Server: "https://one///"}, "b", false},
		{"then the first by name", "c", Options{Server: "https://one"}, "a", false},
		{"a preferred context that does not exist is passed over", "", Options{Server: "https://two", Context: "zzz"}, "c", false},
		// Contexts that name no cluster, or are empty, never match.
		{"no context serves it", "dangling", Options{Server: "https://three"}, "", true},
		{"without a server, the preferred context", "c", Options{Context: "a"}, "a", false},
		{"without a server, the current context", "c", Options{}, "c", false},
		{"without a server, a current context that does not exist", "gone", Options{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg.CurrentContext = tt.current
			got, err := chooseContext(cfg, tt.opts)
			if tt.wantNoContext {
				if KindOf(err) != NoContext {
					t.Fatalf("got %q, %v; want NoContext", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestSameServer(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://x:6443", "https://x:6443/", true},
		{"https://x:6443//", "https://x:6443", true},
		{"https://x:6443", "https://x:6444", false},
		{"https://x/path", "https://x", false},
		{"http://x", "https://x", false},
	}
	for _, tt := range tests {
		if got := sameServer(tt.a, tt.b); got != tt.want {
			t.Errorf("sameServer(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestFileReferences(t *testing.T) {
	tests := []struct {
		name    string
		cluster clientcmdapi.Cluster
		user    clientcmdapi.AuthInfo
		want    string
	}{
		{"none", clientcmdapi.Cluster{CertificateAuthorityData: []byte("ca")}, clientcmdapi.AuthInfo{Token: "t", ClientCertificateData: []byte("c")}, ""},
		{"token file", clientcmdapi.Cluster{}, clientcmdapi.AuthInfo{TokenFile: "/t"}, "tokenFile"},
		{"all", clientcmdapi.Cluster{CertificateAuthority: "/ca"}, clientcmdapi.AuthInfo{TokenFile: "/t", ClientCertificate: "/c", ClientKey: "/k"},
			"tokenFile,client-certificate,client-key,certificate-authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(fileReferences(&tt.cluster, &tt.user), ","); got != tt.want {
				t.Errorf("fileReferences = %q, want %q", got, tt.want)
			}
		})
	}
}

// writeFiles writes files into dir, and the kubeconfig config among them.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "config")
}

func TestLoadOfAnOperatorsFile(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		want     func(*Credentials) bool
		wantKind Kind
	}{
		{"client certificate files are read relative to the kubeconfig", map[string]string{
			"config":  string(single(`{server: "https://x"}`, `{client-certificate: tls.crt, client-key: tls.key}`)),
			"tls.crt": "cert", "tls.key": "key",
		}, func(c *Credentials) bool { return string(c.CertData) == "cert" && string(c.KeyData) == "key" }, ""},
		// An inline token is not replaced by the file's.
		{"an inline token wins over a token file", map[string]string{
			"config": string(single(`{server: "https://x"}`, `{token: inline, tokenFile: token}`)), "token": "from-file",
		}, func(c *Credentials) bool { return c.BearerToken == "inline" }, ""},
		{"a token file of spaces is no credential", map[string]string{
			"config": string(single(`{server: "https://x"}`, `{tokenFile: token}`)), "token": "  \n",
		}, nil, NoCredentials},
		{"a named file that is missing", map[string]string{
			"config": string(single(`{server: "https://x"}`, `{client-certificate: missing.crt, client-key-data: a2V5}`)),
		}, nil, FileReference},
		{"a missing token file", map[string]string{
			"config": string(single(`{server: "https://x"}`, `{tokenFile: missing}`)),
		}, nil, FileReference},
		// Even an operator's file may not run a plugin: the binaries run none.
		{"a plugin", map[string]string{
			"config": string(single(`{server: "https://x"}`, `{exec: {apiVersion: client.authentication.k8s.io/v1, command: x}}`)),
		}, nil, Plugin},
		{"not YAML", map[string]string{"config": "{{{"}, nil, Unparseable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(writeFiles(t, tt.files), Options{})
			if KindOf(err) != tt.wantKind {
				t.Fatalf("got %+v, %v; want kind %q", c, err, tt.wantKind)
			}
			if tt.want != nil && !tt.want(c) {
				t.Errorf("credentials %+v", c)
			}
		})
	}
}

func TestWriteNamesAnUnnamedContextDefault(t *testing.T) {
	c := &Credentials{Server: "https://x", BearerToken: "t", CAData: []byte("ca"), Insecure: false, ServerName: "sni", ProxyURL: "http://p:1"}
	data, err := c.Write()
	if err != nil {
		t.Fatal(err)
	}
	// What the database stores refers to no file, so Parse (not Load) reads it back.
	back, err := Parse(data, Options{Server: "https://x/"})
	if err != nil {
		t.Fatal(err)
	}
	want := *c
	want.Context = "default"
	if fmt.Sprintf("%+v", *back) != fmt.Sprintf("%+v", want) {
		t.Errorf("read back %+v, want %+v", *back, want)
	}
}

func TestRESTConfigCarriesEveryCredential(t *testing.T) {
	c := &Credentials{Server: "https://x", CAData: []byte("ca"), ServerName: "sni", CertData: []byte("cert"), KeyData: []byte("key"),
		Username: "u", Password: "p"}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.CAData) != "ca" || cfg.ServerName != "sni" || string(cfg.CertData) != "cert" || string(cfg.KeyData) != "key" ||
		cfg.Username != "u" || cfg.Password != "p" || cfg.Insecure {
		t.Errorf("%+v", cfg)
	}
	// No proxy-url: the environment's proxy settings are not overridden.
	if cfg.Proxy != nil {
		t.Error("a proxy was set without a proxy-url")
	}
}
