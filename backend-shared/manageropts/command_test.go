package manageropts

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gitops-service/gitops-service/backend-shared/buildinfo"
)

func TestVersionVerbPrintsTheBuildWithoutACluster(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	// No kubeconfig is reachable from here: the verb must not need one.
	t.Setenv("KUBECONFIG", "/nonexistent")
	runErr := Command{Name: "backend"}.Run([]string{"version"})
	os.Stdout = stdout
	_ = w.Close()
	out, _ := io.ReadAll(r)
	if runErr != nil {
		t.Fatalf("version: %v", runErr)
	}
	if want := buildinfo.Get().String(); string(out) != want {
		t.Fatalf("version printed %q, want %q", out, want)
	}
	if !strings.Contains(string(out), "go: go1.") {
		t.Fatalf("version printed %q: no Go version", out)
	}
}
