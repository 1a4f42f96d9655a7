package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestResolve(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified},
		}}
	}
	tests := []struct {
		name                    string
		stampedVersion, commit  string
		bi                      *debug.BuildInfo
		wantVersion, wantCommit string
	}{
		{"stamped wins over the toolchain", "v1.2.3", "abc", vcs("def", "false"), "v1.2.3", "abc"},
		{"a checkout build names its revision", "", "", vcs("def", "false"), "devel", "def"},
		{"a modified checkout says so", "", "", vcs("def", "true"), "devel", "def-dirty"},
		{"go install records the module version", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0", "unknown"},
		{"no build information at all", "", "", nil, "devel", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.stampedVersion, tt.commit, tt.bi)
			if got.Version != tt.wantVersion || got.Commit != tt.wantCommit {
				t.Fatalf("resolve() = %s@%s, want %s@%s", got.Version, got.Commit, tt.wantVersion, tt.wantCommit)
			}
			if got.GoVersion == "" || got.Platform == "" {
				t.Fatalf("resolve() = %+v: Go version and platform must be set", got)
			}
		})
	}
}

func TestCollectorExportsTheBuild(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector("backend"))
	i := Get()
	want := `# HELP gitops_service_build_info The running build: always 1, labelled with the binary, release version, Git commit and Go version.
# TYPE gitops_service_build_info gauge
gitops_service_build_info{binary="backend",commit="` + i.Commit + `",goversion="` + i.GoVersion + `",version="` + i.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gitops_service_build_info"); err != nil {
		t.Fatal(err)
	}
}
