package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
)

const argoCDModule = "github.com/argoproj/argo-cd/v3"

// ArgoCDCRDPaths returns Argo CD's Application, AppProject and ApplicationSet CRD files from
// the module cache, at the Argo CD version this binary was built with, so that the CRDs the
// tests install always match the API types the service imports.
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

// ArgoCDModuleDir is the Argo CD module's directory in the module cache. Binaries carry the
// version in their build information; test binaries do not, so for them `go list` resolves
// it from the working directory (the package under test), which gives the same version.
func ArgoCDModuleDir() (string, error) {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path != argoCDModule {
				continue
			}
			if dep.Replace != nil {
				dep = dep.Replace
			}
			out, err := exec.Command("go", "env", "GOMODCACHE").Output()
			if err != nil {
				return "", fmt.Errorf("go env GOMODCACHE: %w", err)
			}
			return filepath.Join(strings.TrimSpace(string(out)), argoCDModule+"@"+dep.Version), nil
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", argoCDModule).Output()
	if err != nil {
		return "", fmt.Errorf("locating %s with go list: %w", argoCDModule, err)
	}
	return strings.TrimSpace(string(out)), nil
}
