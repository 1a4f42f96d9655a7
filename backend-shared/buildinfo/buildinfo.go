// Package buildinfo says which build of the service is running: the release version and
// Git commit stamped in at link time (make images, make release), else what the Go
// toolchain recorded, and the Go version. Every binary prints it with its `version` verb
// and exports it as the gitops_service_build_info gauge.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set with -ldflags "-X github.com/gitops-service/gitops-service/backend-shared/buildinfo.version=v1.2.3
// -X .../buildinfo.commit=<sha>" by the image and release builds.
var (
	version string
	commit  string
)

// Info describes one build.
type Info struct {
	Version   string
	Commit    string
	GoVersion string
	Platform  string
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, bi)
}

// resolve prefers the stamped values and falls back to what the toolchain recorded: a
// build from a Git checkout records vcs.revision, `go install module@version` the module
// version.
func resolve(stampedVersion, stampedCommit string, bi *debug.BuildInfo) Info {
	info := Info{Version: stampedVersion, Commit: stampedCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		info.GoVersion = bi.GoVersion
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Commit == "" {
			modified := false
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					info.Commit = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if info.Commit != "" && modified {
				info.Commit += "-dirty"
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the `version` verb's output.
func (i Info) String() string {
	return fmt.Sprintf("version: %s\ncommit: %s\ngo: %s\nplatform: %s\n", i.Version, i.Commit, i.GoVersion, i.Platform)
}

// NewCollector returns the gitops_service_build_info gauge of binary: always 1, the
// build in its labels, so that dashboards can join on it and alerts can tell versions apart.
func NewCollector(binary string) prometheus.Collector {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gitops_service_build_info",
		Help: "The running build: always 1, labelled with the binary, release version, Git commit and Go version.",
		ConstLabels: prometheus.Labels{
			"binary": binary, "version": i.Version, "commit": i.Commit, "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}
