package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestResolveFallbacks(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name                   string
		stampedVersion, commit string
		bi                     *debug.BuildInfo
		wantVersion            string
		wantCommit             string
		wantGo                 string
	}{
		// A stamped commit is the release's: the checkout's modification state does not apply to it.
		{"a stamped commit is never dirty", "", "abc", &debug.BuildInfo{GoVersion: "go1.26.1",
			Settings: settings("vcs.revision", "def", "vcs.modified", "true")}, "devel", "abc", "go1.26.1"},
		{"a stamped version with the toolchain's commit", "v1.0.0", "", &debug.BuildInfo{GoVersion: "go1.26.1",
			Main: debug.Module{Version: "v0.9.0"}, Settings: settings("vcs.revision", "def")}, "v1.0.0", "def", "go1.26.1"},
		// "(devel)" is what the toolchain records for a build of the main module from source.
		{"(devel) is no version", "", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}}, "devel", "unknown", "go1.26.1"},
		// A modified flag without a revision names no commit, dirty or not.
		{"modified without a revision", "", "", &debug.BuildInfo{GoVersion: "go1.26.1", Settings: settings("vcs.modified", "true")},
			"devel", "unknown", "go1.26.1"},
		{"the modified flag after the revision", "", "", &debug.BuildInfo{GoVersion: "go1.26.1",
			Settings: settings("vcs.modified", "true", "vcs.revision", "0123")}, "devel", "0123-dirty", "go1.26.1"},
		{"other settings are ignored", "", "", &debug.BuildInfo{GoVersion: "go1.26.1",
			Settings: settings("-tags", "crashpoints", "vcs.time", "2026-01-01T00:00:00Z", "vcs.revision", "0123", "vcs.modified", "false")},
			"devel", "0123", "go1.26.1"},
		{"without build information, the running Go", "", "", nil, "devel", "unknown", runtime.Version()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.stampedVersion, tt.commit, tt.bi)
			if got.Version != tt.wantVersion || got.Commit != tt.wantCommit || got.GoVersion != tt.wantGo {
				t.Errorf("resolve() = %+v, want version %q commit %q go %q", got, tt.wantVersion, tt.wantCommit, tt.wantGo)
			}
			if want := runtime.GOOS + "/" + runtime.GOARCH; got.Platform != want {
				t.Errorf("platform %q, want %q", got.Platform, want)
			}
		})
	}
}

func TestStringIsTheVersionVerbsOutput(t *testing.T) {
	got := Info{Version: "v1.2.3", Commit: "abc-dirty", GoVersion: "go1.26.8", Platform: "linux/arm64"}.String()
	want := "version: v1.2.3\ncommit: abc-dirty\ngo: go1.26.8\nplatform: linux/arm64\n"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestGetDescribesThisBinary(t *testing.T) {
	i := Get()
	// A test binary is not stamped: whatever the toolchain recorded, nothing is left empty.
	if i.Version == "" || i.Commit == "" || i.GoVersion != runtime.Version() || i.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("Get() = %+v", i)
	}
}
