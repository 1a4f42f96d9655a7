package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// A phase of P1 starts on a quiet stack: one that started just before (the kube-apiserver
// publishing the CRDs' schemas, the binaries' first lists, kube-controller-manager's
// discovery) or is still finishing the phase before would otherwise lend that CPU to
// the phase measured, and both phases keep the two cores busy.
const (
	// quietCores is the CPU, in cores, under which the stack's programs together count as
	// quiet (idle, the stack uses a few hundredths of a core).
	quietCores = 0.15
	// quietWindow is how long the stack must stay under quietCores.
	quietWindow = 2 * time.Second
	// quietTimeout bounds the wait: a stack that never quiets is measured as it is, and the
	// report shows that it was not quiet.
	quietTimeout = 2 * time.Minute
)

// Quiet is how a wait for a quiet stack before a phase ended.
type Quiet struct {
	// Seconds waited, and the cores the stack used over the last window.
	Seconds float64 `json:"seconds"`
	Cores   float64 `json:"cores"`
	// Reached is false when the wait gave up at quietTimeout.
	Reached bool `json:"reached"`
}

// busyCores is the CPU the programs used between two readings of
// stack.CPUSecondsByProgram taken d apart, in cores.
func busyCores(before, after map[string]float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	used := 0.0
	for name, seconds := range after {
		// A program that started between the readings counts from zero.
		used += seconds - before[name]
	}
	return max(0, used) / d.Seconds()
}

// quietBefore waits for a quiet stack before a phase of P1, and says so when it gave up.
func quietBefore(ctx context.Context, phase string) (Quiet, error) {
	q, err := waitQuiet(ctx)
	if err == nil && !q.Reached {
		progress("P1 %s: the stack still used %.2f cores after %.0f s; measuring it as it is", phase, q.Cores, q.Seconds)
	}
	return q, err
}

// waitQuiet waits until the stack's programs have used less than quietCores over
// quietWindow, or quietTimeout has passed.
func waitQuiet(ctx context.Context) (Quiet, error) {
	start := time.Now()
	for {
		before, from := stack.CPUSecondsByProgram(programs), time.Now()
		select {
		case <-ctx.Done():
			return Quiet{}, ctx.Err()
		case <-time.After(quietWindow):
		}
		cores := busyCores(before, stack.CPUSecondsByProgram(programs), time.Since(from))
		waited := time.Since(start)
		if cores < quietCores || waited >= quietTimeout {
			return Quiet{Seconds: waited.Seconds(), Cores: cores, Reached: cores < quietCores}, nil
		}
	}
}

// quietWaits prints the waits of a report row: how long each took, and the cores of a
// stack that did not quiet.
func quietWaits(waits ...Quiet) string {
	out := make([]string, len(waits))
	for i, q := range waits {
		out[i] = fmt.Sprintf("%.1f s", q.Seconds)
		if !q.Reached {
			out[i] += fmt.Sprintf(" (not quiet: %.2f cores)", q.Cores)
		}
	}
	return strings.Join(out, " / ")
}
