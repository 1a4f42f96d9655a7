package stack

import (
	"fmt"
	"os"
	"strings"
)

// RSSMiB reads the resident and peak resident set sizes of a process, in MiB (0 when the
// process is gone).
func RSSMiB(pid int) (current, peak float64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
			current = kb / 1024
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %f kB", &kb); err == nil {
			peak = kb / 1024
		}
	}
	return current, peak
}

// Percentile is the p-quantile (0..1) of sorted values, by nearest rank.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// AllProcesses lists every process of the stack by name: the service's binaries and Argo CD's.
func (s *Stack) AllProcesses() map[string]int {
	pids := map[string]int{}
	for name, p := range s.Processes {
		pids[name] = p.Pid()
	}
	if a := s.ArgoCD; a != nil {
		pids["redis-server"] = a.Redis.Pid()
		pids["argocd-repo-server"] = a.RepoServer.Pid()
		pids["argocd-application-controller"] = a.Controller.Pid()
	}
	return pids
}
