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

// Quiet is how a wait for a quiet stack before a phase ended: the seconds waited, and the
// cores the stack used over the last window.
type Quiet struct {
	Seconds float64 `json:"seconds"`
	Cores   float64 `json:"cores"`
}

// Reached reports whether the stack was quiet, rather than the wait giving up at
// quietTimeout.
func (q Quiet) Reached() bool { return q.Cores < quietCores }

// busyCores is the CPU the programs used between two readings of
// stack.CPUSecondsByProgram taken d apart, in cores. A program's reading falls when some of
// its processes end (PostgreSQL's backend of a closed connection): it then counts nothing,
// rather than taking the others' CPU away.
func busyCores(before, after map[string]float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	used := 0.0
	for name, seconds := range after {
		// A program that started between the readings counts from zero.
		used += max(0, seconds-before[name])
	}
	return used / d.Seconds()
}

// waitQuiet waits, before the phase of P1 named phase, until the stack's programs have used
// less than quietCores over quietWindow, or quietTimeout has passed; it says so when it
// gave up.
func waitQuiet(ctx context.Context, phase string) (Quiet, error) {
	start := time.Now()
	for {
		before, from := stack.CPUSecondsByProgram(programs), time.Now()
		select {
		case <-ctx.Done():
			return Quiet{}, ctx.Err()
		case <-time.After(quietWindow):
		}
		q := Quiet{Seconds: time.Since(start).Seconds(), Cores: busyCores(before, stack.CPUSecondsByProgram(programs), time.Since(from))}
		if q.Reached() {
			return q, nil
		}
		if q.Seconds >= quietTimeout.Seconds() {
			progress("P1 %s: the stack still used %.2f cores after %.0f s; measuring it as it is", phase, q.Cores, q.Seconds)
			return q, nil
		}
	}
}

// quietWaits prints the waits of a report row: how long each took, and the cores of a
// stack that did not quiet.
func quietWaits(waits ...Quiet) string {
	out := make([]string, len(waits))
	for i, q := range waits {
		out[i] = fmt.Sprintf("%.1f s", q.Seconds)
		if !q.Reached() {
			out[i] += fmt.Sprintf(" (not quiet: %.2f cores)", q.Cores)
		}
	}
	return strings.Join(out, " / ")
}
