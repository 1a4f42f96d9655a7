package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

const argoCDModule = "github.com/argoproj/argo-cd/v3"

// ArgoCDCRDPaths returns Argo CD's Application, AppProject and ApplicationSet CRD files from
// the module cache, at the Argo CD version the tests run (ArgoCDModuleDir), so that the
// tests hold the service's own copy of Argo CD's types to Argo CD's real CRDs.
func ArgoCDCRDPaths() ([]string, error) {
	dir, err := ArgoCDModuleDir()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, name := range []string{"application-crd.yaml", "appproject-crd.yaml", "applicationset-crd.yaml"} {
		p := filepath.Join(dir, "manifests", "crds", name)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("argo CD CRD missing from the module cache: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// argoCDRequire finds the Argo CD version in a go.mod's require lines.
var argoCDRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(argoCDModule) + `\s+(v\S+)`)

// ArgoCDModuleDir is the directory of Argo CD's module, at the version hack/argocd builds
// (the Argo CD the tests and the local stack run), in the module cache; it is downloaded
// if it is not there yet.
func ArgoCDModuleDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	modDir := filepath.Join(root, "hack", "argocd")
	gomod, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return "", err
	}
	m := argoCDRequire.FindSubmatch(gomod)
	if m == nil {
		return "", fmt.Errorf("hack/argocd/go.mod does not require %s", argoCDModule)
	}
	return ModuleDir(argoCDModule, string(m[1]), modDir)
}

// ModuleDir is the directory of a module version in the module cache, downloaded (and
// checked against go.sum in dir, or the checksum database) if it is not there yet. dir is
// where `go mod download` runs: a module that requires it, or any directory.
func ModuleDir(module, version, dir string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &info); jsonErr != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s: %w", module, version, info.Error, errors.Join(err, jsonErr))
	}
	return info.Dir, nil
}

// ArgoCDBinDir is where hack/build-binaries.sh puts the Argo CD binary under its role names
// (`make binaries` builds it).
func ArgoCDBinDir() (string, error) {
	return builtDir("--argocd-dir", "argocd-application-controller")
}

// KubeBinDir is where hack/build-binaries.sh puts the Kubernetes binaries (the node's
// components and kubectl).
func KubeBinDir() (string, error) {
	return builtDir("--kube-dir", "kubectl")
}

// builtDir asks hack/build-binaries.sh for a directory (flag) and checks that it holds
// probe.
func builtDir(flag, probe string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(root, "hack", "build-binaries.sh"), flag).Output()
	if err != nil {
		return "", fmt.Errorf("hack/build-binaries.sh %s: %w", flag, err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, probe)); err != nil {
		return "", fmt.Errorf("%s is not built (run `make binaries`): %w", probe, err)
	}
	return dir, nil
}
