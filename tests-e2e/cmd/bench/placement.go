package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// Placement is what `backend engine-instances simulate -o json` prints (P6), or the error
// that kept it from running.
type Placement struct {
	Args                      string  `json:"args"`
	Error                     string  `json:"error,omitempty"`
	Instances                 int     `json:"instances"`
	Tenants                   int     `json:"tenants"`
	Epsilon                   float64 `json:"epsilon"`
	MaxLoad                   float64 `json:"maxLoad"`
	MinLoad                   float64 `json:"minLoad"`
	MaxOverMin                float64 `json:"maxOverMin"`
	AddedInstanceMovedShare   float64 `json:"addedInstanceMovedShare"`
	AddedInstanceIdealShare   float64 `json:"addedInstanceIdealShare"`
	RemovedInstanceMovedShare float64 `json:"removedInstanceMovedShare"`
	RemovedInstanceIdealShare float64 `json:"removedInstanceIdealShare"`
	MaxOverMinAfterAdd        float64 `json:"maxOverMinAfterAdd"`
	MaxOverMinAfterRemove     float64 `json:"maxOverMinAfterRemove"`
	Seconds                   float64 `json:"seconds"`
}

// simulatePlacement runs the simulation with the backend binary the stack runs (built into
// <stackDir>/bin, here if no stack was started). Failures are reported, not returned: the
// other phases' figures stand without it.
func simulatePlacement(ctx context.Context, stackDir, args string) *Placement {
	p := &Placement{Args: args}
	bins, err := filepath.Abs(filepath.Join(stackDir, "bin"))
	if err == nil {
		if _, statErr := os.Stat(filepath.Join(bins, "backend")); statErr != nil {
			err = stack.Build(ctx, bins, "backend")
		}
	}
	if err != nil {
		p.Error = err.Error()
		return p
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, "backend"),
		append([]string{"engine-instances", "simulate", "-o", "json"}, strings.Fields(args)...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		p.Error = fmt.Sprintf("%v: %s", err, firstLine(stderr.String()))
		return p
	}
	if err := json.Unmarshal(stdout.Bytes(), p); err != nil {
		p.Error = fmt.Sprintf("parsing the output (%q): %v", firstLine(stdout.String()), err)
	}
	p.Args = args
	return p
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
