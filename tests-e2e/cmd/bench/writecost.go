package main

import (
	"context"
	"fmt"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// writeCostNamespace holds the Applications of the write-cost measurement: watched by no
// status writer and no binary of the service.
const writeCostNamespace = "bench-write-cost"

// writeCostMax bounds the Applications created each way: enough for a steady figure.
const writeCostMax = 2000

// writeCostRounds alternate the two ways of creating, so that a drift of the machine
// touches both alike.
const writeCostRounds = 2

// WriteCost is what creating an Argo CD Application costs the kube-apiserver (and etcd),
// in CPU milliseconds per Application: by a plain create (POST), as the floor creates
// them, and by server-side apply, as the cluster-agent does.
type WriteCost struct {
	PerWay int `json:"perWay"`
	// CPUMillis by way ("create", "apply") and program ("kube-apiserver", "etcd").
	CPUMillis map[string]map[string]float64 `json:"cpuMillis"`
}

// applicationWriteCost creates n Applications each way (in writeCostRounds alternating
// rounds, with the benchmark's creating clients) and returns the CPU each cost.
func (b *bench) applicationWriteCost(ctx context.Context, n int) (*WriteCost, error) {
	if _, err := waitQuiet(ctx, "the write-cost measurement"); err != nil {
		return nil, err
	}
	if err := createNamespaces(ctx, b.c, []string{writeCostNamespace}); err != nil {
		return nil, err
	}
	spec := argocd.ApplicationSpec(argocd.ApplicationInput{
		RepoURL: "https://github.com/example/gitops", Path: "deploy", Project: "default",
		Destination: argocd.Destination{Namespace: writeCostNamespace}, Automated: true,
	})
	ways := map[string]func(ctx context.Context, name string) error{
		"create": func(ctx context.Context, name string) error {
			return b.c.Create(ctx, argocd.Application(writeCostNamespace, name, "cost", "cost", spec))
		},
		"apply": func(ctx context.Context, name string) error {
			return ssa.Apply(ctx, b.c, argocd.Application(writeCostNamespace, name, "cost", "cost", spec))
		},
	}
	out := &WriteCost{PerWay: n, CPUMillis: map[string]map[string]float64{"create": {}, "apply": {}}}
	perRound := max(1, n/writeCostRounds)
	for round := range writeCostRounds {
		for _, way := range []string{"create", "apply"} {
			progress("write cost: %d Applications by %s, round %d of %d", perRound, way, round+1, writeCostRounds)
			before := stack.CPUSecondsByProgram(programs)
			if err := parallel(perRound, b.cfg.Concurrency, func(i int) error {
				return ways[way](ctx, fmt.Sprintf("%s-%d-%d", way, round, i))
			}); err != nil {
				return nil, err
			}
			after := stack.CPUSecondsByProgram(programs)
			for _, p := range []string{"kube-apiserver", "etcd"} {
				out.CPUMillis[way][p] += 1000 * (after[p] - before[p]) / float64(perRound*writeCostRounds)
			}
		}
	}
	return out, nil
}
