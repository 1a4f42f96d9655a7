package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// programs whose CPU time the benchmark reports, by executable name (and the benchmark's
// own, whatever its name).
var programs = func() []string {
	p := []string{"kube-apiserver", "etcd", "postgres", "backend", "cluster-agent"}
	if exe, err := os.Executable(); err == nil {
		p = append(p, filepath.Base(exe))
	}
	return p
}()

// processes (P4) reads the resident memory and CPU time of each binary.
func (b *bench) processes() *Processes {
	p := &Processes{RSSMiB: map[string]float64{}, PeakRSSMiB: map[string]float64{}, CPUSeconds: map[string]float64{}}
	for name, proc := range b.s.Processes {
		p.RSSMiB[name], p.PeakRSSMiB[name] = stack.RSSMiB(proc.Pid())
		p.CPUSeconds[name] = cpuSeconds(fmt.Sprint(proc.Pid()))
	}
	return p
}

// cpuByProgram sums user+system CPU seconds of each program over this process and its
// descendants (the stack): other programs of the same names on the machine, such as another
// test's API server, are left out.
func cpuByProgram() map[string]float64 {
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
		if err != nil || !slices.Contains(programs, filepath.Base(exe)) {
			continue
		}
		out[filepath.Base(exe)] += cpuSeconds(pid)
	}
	return out
}

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

// machine describes this machine: CPU model and count, memory, OS and Go version.
func machine() string {
	model := ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v) + ", "
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		for line := range strings.SplitSeq(string(data), "\n") {
			if _, err := fmt.Sscanf(line, "MemTotal: %f kB", &kb); err == nil {
				mem = fmt.Sprintf(", %.0f GiB", kb/1024/1024)
			}
		}
	}
	return fmt.Sprintf("%s%d CPUs%s, %s/%s, %s", model, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
