package crashpoint

import "testing"

// points are every named step a crash test can stop at.
var points = []string{BackendAfterApplyCommit, BackendAfterDeleteCommit, AgentAfterHandler, AgentAfterStateCommit}

func TestPointNamesAreDistinctAndNameTheirBinary(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range points {
		if seen[p] {
			t.Errorf("point %q is named twice: arming one would crash at both", p)
		}
		seen[p] = true
	}
	// The end-to-end stack arms a point in every binary's environment; a point must say
	// which binary it stops.
	for p, prefix := range map[string]string{
		BackendAfterApplyCommit: "backend-", BackendAfterDeleteCommit: "backend-",
		AgentAfterHandler: "cluster-agent-", AgentAfterStateCommit: "cluster-agent-",
	} {
		if len(p) <= len(prefix) || p[:len(prefix)] != prefix {
			t.Errorf("point %q does not start with %q", p, prefix)
		}
	}
	if EnvVar != "GITOPS_CRASHPOINT" {
		t.Errorf("EnvVar = %q: the end-to-end stack sets GITOPS_CRASHPOINT", EnvVar)
	}
}
