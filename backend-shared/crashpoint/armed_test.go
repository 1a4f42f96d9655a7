//go:build crashpoints

package crashpoint

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// helperEnv, when set, makes the test binary hit that point and exit 0 if it survives.
const helperEnv = "CRASHPOINT_TEST_HIT"

func TestMain(m *testing.M) {
	if p := os.Getenv(helperEnv); p != "" {
		Hit(p)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAnArmedBuildDiesAtTheArmedPointOnly(t *testing.T) {
	tests := []struct {
		name, armed, hit string
		wantKilled       bool
	}{
		{"the armed point kills", AgentAfterHandler, AgentAfterHandler, true},
		{"another point passes", AgentAfterHandler, BackendAfterApplyCommit, false},
		{"nothing armed passes", "", AgentAfterHandler, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), EnvVar+"="+tt.armed, helperEnv+"="+tt.hit)
			err := cmd.Run()
			var exit *exec.ExitError
			killed := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
			if killed != tt.wantKilled {
				t.Fatalf("killed by SIGKILL = %v (%v), want %v", killed, err, tt.wantKilled)
			}
			if !tt.wantKilled && err != nil {
				t.Fatalf("the process failed: %v", err)
			}
		})
	}
}
