package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeKubeconfig(t *testing.T, dir, name, user string) string {
	t.Helper()
	return writeKubeconfigFor(t, dir, name, "https://service.example.com:6443/", user)
}

func writeKubeconfigFor(t *testing.T, dir, name, server, user string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	content := `apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "` + server + `", certificate-authority: ca.crt}}]
users: [{name: u, user: ` + user + `}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadServiceClusterReadsTheCredentialsArgoCDNeeds(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"ca.crt": "service-ca", "token": "file-token\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	inline, err := LoadServiceCluster(writeKubeconfig(t, dir, "inline", "{token: inline-token}"))
	if err != nil {
		t.Fatal(err)
	}
	if inline.BearerToken != "inline-token" || string(inline.CAData) != "service-ca" || inline.Host != "https://service.example.com:6443/" {
		t.Errorf("host %q, CA %q, token set %v", inline.Host, inline.CAData, inline.BearerToken != "")
	}
	fromFile, err := LoadServiceCluster(writeKubeconfig(t, dir, "file", "{tokenFile: "+filepath.Join(dir, "token")+"}"))
	if err != nil {
		t.Fatal(err)
	}
	if fromFile.BearerToken != "file-token" {
		t.Error("the token file was not read")
	}

	for name, user := range map[string]string{
		"plugin":     "{exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token, args: [secret-arg]}}",
		"no secret":  "{username: admin}",
		"no file":    "{tokenFile: /nonexistent/secret-arg}",
		"not a file": "",
	} {
		path := writeKubeconfig(t, dir, name, user)
		if name == "not a file" {
			path = filepath.Join(dir, "missing")
		}
		_, err := LoadServiceCluster(path)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "secret-arg") && name != "no file" {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
}

func TestLoadServiceClusterRefusesAPlainHTTPServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("service-ca"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Argo CD would send the token in the clear.
	_, err := LoadServiceCluster(writeKubeconfigFor(t, dir, "plain", "http://service.example.com:8080/", "{token: inline-token}"))
	if err == nil || !strings.Contains(err.Error(), "https://") {
		t.Fatalf("a plain http:// server: %v", err)
	}
	if strings.Contains(err.Error(), "inline-token") {
		t.Errorf("the error quotes the token: %v", err)
	}
}
