package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// programs whose CPU time the benchmark reports, by executable name (and the benchmark's
// own, whatever its name).
var programs = func() []string {
	p := []string{"kube-apiserver", "etcd", "kube-controller-manager", "postgres", "backend", "cluster-agent"}
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
		p.CPUSeconds[name] = stack.ProcessCPUSeconds(proc.Pid())
	}
	return p
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
