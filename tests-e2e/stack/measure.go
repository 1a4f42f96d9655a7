package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// CPUSecondsByProgram sums user+system CPU seconds of each program (by executable name;
// nil: every program) over this process and its descendants (the stack): other programs
// of the same names on the machine, such as another test's API server, are left out.
func CPUSecondsByProgram(programs []string) map[string]float64 {
	out := map[string]float64{}
	parent := map[string]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid := e.Name(); pid[0] >= '0' && pid[0] <= '9' {
			if fields := statFields(pid); len(fields) > 1 {
				parent[pid] = fields[1]
			}
		}
	}
	self := fmt.Sprint(os.Getpid())
	ours := func(pid string) bool {
		for range 64 { // depth bound, against a racy cycle
			if pid == self {
				return true
			}
			next, ok := parent[pid]
			if !ok || next == "0" {
				return false
			}
			pid = next
		}
		return false
	}
	for pid := range parent {
		if !ours(pid) {
			continue
		}
		exe, err := os.Readlink("/proc/" + pid + "/exe")
		if err != nil || programs != nil && !slices.Contains(programs, filepath.Base(exe)) {
			continue
		}
		out[filepath.Base(exe)] += cpuSeconds(pid)
	}
	return out
}

// ProcessCPUSeconds is the user+system CPU time of a process (0 when it is gone).
func ProcessCPUSeconds(pid int) float64 { return cpuSeconds(fmt.Sprint(pid)) }

// statFields are the fields of /proc/<pid>/stat after the parenthesised command name: the
// state, the parent's pid, ...
func statFields(pid string) []string {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	return strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
}

// cpuSeconds is the user+system CPU time of a process (0 when it is gone).
func cpuSeconds(pid string) float64 {
	// utime and stime are the 12th and 13th fields after the command name.
	fields := statFields(pid)
	if len(fields) < 13 {
		return 0
	}
	var utime, stime float64
	_, _ = fmt.Sscan(fields[11], &utime)
	_, _ = fmt.Sscan(fields[12], &stime)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}
