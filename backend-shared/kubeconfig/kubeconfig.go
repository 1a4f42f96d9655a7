// Package kubeconfig reads the kubeconfigs the service is given, with one set of rules for
// all of them: a tenant's (a ManagedEnvironment's Secret, stored as given), an operator's
// file (the engine cluster credentials and --service-cluster-kubeconfig), and those stored
// in the database.
//
// The rules: one context is chosen (see Options); its credentials must be inline
// (a bearer token, a client certificate and key, or a username and password), because Argo
// CD and the backend run no credential plugins and read no files of the user; and an error
// never quotes the kubeconfig, which holds credentials. Only an operator's own file may
// name files, which are read relative to it, as kubectl reads them.
package kubeconfig

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kind says what is wrong with a kubeconfig.
type Kind string

// The kinds of Error.
const (
	Unparseable   Kind = "Unparseable"
	NoContext     Kind = "NoContext"
	FileReference Kind = "FileReference"
	Plugin        Kind = "Plugin"
	NoCredentials Kind = "NoCredentials"
)

// Error is a kubeconfig the rules refuse. Its message never quotes the kubeconfig.
type Error struct {
	Kind Kind
	// Context is the chosen context, when one was.
	Context string
	Message string
}

func (e *Error) Error() string { return e.Message }

// KindOf is the Kind of err, "" when err is no *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// Options choose the context.
type Options struct {
	// Server, when set, limits the choice to contexts whose cluster's server is Server
	// (trailing slashes ignored).
	Server string
	// Context is the preferred context; without Server it must exist.
	Context string
	// CredentialsOptional accepts a context without credentials: the caller has its own
	// (the token of a ServiceAccount the service installed).
	CredentialsOptional bool
}

// Credentials are what the chosen context says, all inline.
type Credentials struct {
	// Context is the name of the chosen context.
	Context    string
	Server     string
	CAData     []byte
	Insecure   bool
	ServerName string
	ProxyURL   string

	BearerToken        string
	CertData, KeyData  []byte
	Username, Password string
}

// Parse reads kubeconfig data given by someone else than the operator (a tenant's Secret,
// or what the database stores): file references are refused.
func Parse(data []byte, opts Options) (*Credentials, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The parser's message may quote the document.
		return nil, &Error{Kind: Unparseable, Message: "not a valid kubeconfig"}
	}
	return read(cfg, opts, false)
}

// Load reads the operator's kubeconfig file at path: the files it names are read,
// relative to it.
func Load(path string, opts Options) (*Credentials, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, &Error{Kind: Unparseable, Message: "not a readable kubeconfig file"}
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil, &Error{Kind: Unparseable, Message: err.Error()}
	}
	return read(cfg, opts, true)
}

func read(cfg *clientcmdapi.Config, opts Options, readFiles bool) (*Credentials, error) {
	name, err := chooseContext(cfg, opts)
	if err != nil {
		return nil, err
	}
	kc := cfg.Contexts[name]
	cluster, user := cfg.Clusters[kc.Cluster], cfg.AuthInfos[kc.AuthInfo]
	if cluster == nil {
		return nil, &Error{Kind: NoContext, Context: name, Message: fmt.Sprintf("context %q names no cluster of the kubeconfig", name)}
	}
	if user == nil {
		user = &clientcmdapi.AuthInfo{}
	}
	if user.Exec != nil || user.AuthProvider != nil {
		return nil, &Error{Kind: Plugin, Context: name, Message: fmt.Sprintf(
			"context %q authenticates with an exec or auth-provider plugin, which the service cannot run: use a bearer token or a client certificate", name)}
	}
	if refs := fileReferences(cluster, user); len(refs) > 0 && !readFiles {
		return nil, &Error{Kind: FileReference, Context: name, Message: fmt.Sprintf(
			"context %q of the kubeconfig refers to local files (%s), which the service does not read: embed their content instead "+
				"(token, client-certificate-data, client-key-data, certificate-authority-data)", name, strings.Join(refs, ", "))}
	}
	c := &Credentials{
		Context: name, Server: cluster.Server, CAData: cluster.CertificateAuthorityData, Insecure: cluster.InsecureSkipTLSVerify,
		ServerName: cluster.TLSServerName, ProxyURL: cluster.ProxyURL,
		BearerToken: user.Token, CertData: user.ClientCertificateData, KeyData: user.ClientKeyData,
		Username: user.Username, Password: user.Password,
	}
	if readFiles {
		if err := c.readFiles(name, cluster, user); err != nil {
			return nil, err
		}
	}
	c.BearerToken = strings.TrimSpace(c.BearerToken)
	if !opts.CredentialsOptional && c.BearerToken == "" && (len(c.CertData) == 0 || len(c.KeyData) == 0) && (c.Username == "" || c.Password == "") {
		return nil, &Error{Kind: NoCredentials, Context: name, Message: fmt.Sprintf(
			"context %q of the kubeconfig has no credentials: use a bearer token, a client certificate and key, or a username and password", name)}
	}
	return c, nil
}

// chooseContext applies Options: with Server, the preferred context if its cluster's server
// is Server, else the current one if so, else the first such by name; without, the
// preferred context, else the current one.
func chooseContext(cfg *clientcmdapi.Config, opts Options) (string, error) {
	if opts.Server == "" {
		if opts.Context != "" {
			if _, ok := cfg.Contexts[opts.Context]; !ok {
				return "", &Error{Kind: NoContext, Message: fmt.Sprintf("the kubeconfig has no context %q", opts.Context)}
			}
			return opts.Context, nil
		}
		if _, ok := cfg.Contexts[cfg.CurrentContext]; !ok {
			// The document's own name is not quoted: the caller may not show it.
			return "", &Error{Kind: NoContext, Message: "the kubeconfig's current context does not exist"}
		}
		return cfg.CurrentContext, nil
	}
	serves := func(name string) bool {
		kc, ok := cfg.Contexts[name]
		if !ok || kc == nil {
			return false
		}
		cluster, ok := cfg.Clusters[kc.Cluster]
		return ok && cluster != nil && sameServer(cluster.Server, opts.Server)
	}
	names := make([]string, 0, len(cfg.Contexts))
	for name := range cfg.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range append([]string{opts.Context, cfg.CurrentContext}, names...) {
		if name != "" && serves(name) {
			return name, nil
		}
	}
	return "", &Error{Kind: NoContext, Message: fmt.Sprintf("the kubeconfig has no context whose cluster's server is %s", opts.Server)}
}

// sameServer compares API URLs without their trailing slashes.
func sameServer(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// fileReferences lists the fields of a context's cluster and user that name files.
func fileReferences(cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) []string {
	var refs []string
	if user.TokenFile != "" {
		refs = append(refs, "tokenFile")
	}
	if user.ClientCertificate != "" {
		refs = append(refs, "client-certificate")
	}
	if user.ClientKey != "" {
		refs = append(refs, "client-key")
	}
	if cluster.CertificateAuthority != "" {
		refs = append(refs, "certificate-authority")
	}
	return refs
}

// readFiles inlines the files an operator's kubeconfig names (paths already resolved).
func (c *Credentials) readFiles(name string, cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) error {
	for _, f := range []struct {
		path string
		into *[]byte
	}{
		{cluster.CertificateAuthority, &c.CAData},
		{user.ClientCertificate, &c.CertData},
		{user.ClientKey, &c.KeyData},
	} {
		if f.path == "" || len(*f.into) > 0 {
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			return &Error{Kind: FileReference, Context: name, Message: fmt.Sprintf("reading a file context %q names: %v", name, err)}
		}
		*f.into = data
	}
	if user.TokenFile != "" && c.BearerToken == "" {
		token, err := os.ReadFile(user.TokenFile)
		if err != nil {
			return &Error{Kind: FileReference, Context: name, Message: fmt.Sprintf("reading the token file context %q names: %v", name, err)}
		}
		c.BearerToken = string(token)
	}
	return nil
}

// RESTConfig is the client configuration of the credentials.
func (c *Credentials) RESTConfig() (*rest.Config, error) {
	cfg := &rest.Config{
		Host:        c.Server,
		BearerToken: c.BearerToken,
		Username:    c.Username,
		Password:    c.Password,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: c.CAData, CertData: c.CertData, KeyData: c.KeyData, Insecure: c.Insecure, ServerName: c.ServerName,
		},
	}
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil {
			return nil, &Error{Kind: Unparseable, Context: c.Context, Message: fmt.Sprintf("context %q has a proxy-url that is not a URL", c.Context)}
		}
		cfg.Proxy = http.ProxyURL(u)
	}
	return cfg, nil
}

// Write is a kubeconfig of only these credentials, inline, whose current context is
// c.Context: what the database stores for a cluster.
func (c *Credentials) Write() ([]byte, error) {
	name := c.Context
	if name == "" {
		name = "default"
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAData, InsecureSkipTLSVerify: c.Insecure,
		TLSServerName: c.ServerName, ProxyURL: c.ProxyURL}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: c.BearerToken, ClientCertificateData: c.CertData, ClientKeyData: c.KeyData,
		Username: c.Username, Password: c.Password}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}
