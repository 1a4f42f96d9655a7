package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argoproj/argo-cd/v3/util/lua"
)

// healthLua is `argocd admin health-lua SCRIPT`: it runs the Lua health check in the file
// SCRIPT, with Argo CD's own Lua VM, on each object read from in (one JSON object per line)
// and writes Argo CD's verdict on it to out, one JSON line ({"status", "message"}) each. It
// lets the service's tests check its health customization against the Argo CD it runs
// without importing Argo CD's module.
func healthLua(scriptFile string, in io.Reader, out io.Writer) error {
	script, err := os.ReadFile(scriptFile) //nolint:gosec // a file the caller names
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(sc.Bytes()); err != nil {
			return fmt.Errorf("reading an object: %w", err)
		}
		hs, err := (lua.VM{}).ExecuteHealthLua(obj, string(script))
		if err != nil {
			return fmt.Errorf("running the health check on %s: %w", obj.GetName(), err)
		}
		if err := enc.Encode(map[string]string{"status": string(hs.Status), "message": hs.Message}); err != nil {
			return err
		}
	}
	return sc.Err()
}
