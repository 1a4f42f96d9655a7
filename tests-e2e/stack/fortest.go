package stack

import (
	"os"
	"path/filepath"
	"testing"
)

// StartForTest starts a stack in a new temporary directory for one test and stops it when
// the test ends: on failure it prints the tail of each binary's log (and of the logs in the
// sub-directories extraLogs of the log directory) and keeps the directory; otherwise it
// removes it. Progress is logged to the test unless opts says otherwise.
func StartForTest(t *testing.T, opts Options, extraLogs ...string) *Stack {
	t.Helper()
	dir, err := os.MkdirTemp("", "gitops-"+filepath.Base(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir = dir
	if opts.Progress == nil {
		opts.Progress = func(what string) { t.Logf("stack: %s", what) }
	}
	s, err := Start(t.Context(), opts)
	t.Cleanup(func() {
		if s != nil {
			_ = s.Stop()
		}
		if t.Failed() && s != nil {
			DumpLogs(os.Stderr, s.LogDir, 20_000)
			for _, sub := range extraLogs {
				DumpLogs(os.Stderr, filepath.Join(s.LogDir, sub), 20_000)
			}
			t.Logf("all logs: %s", s.LogDir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	if err != nil {
		t.Fatalf("starting the stack: %v", err)
	}
	return s
}
