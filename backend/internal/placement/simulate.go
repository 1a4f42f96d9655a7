package placement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// SimulationResult is what Simulate measures. Ratios are max/min of the loads of the
// eligible instances (0 when one of them has no tenant); shares are of all tenants.
type SimulationResult struct {
	Instances int     `json:"instances"`
	Tenants   int     `json:"tenants"`
	Epsilon   float64 `json:"epsilon"`
	// MaxLoad and MinLoad are the loads after placing every tenant with Place.
	MaxLoad    int     `json:"maxLoad"`
	MinLoad    int     `json:"minLoad"`
	MaxOverMin float64 `json:"maxOverMin"`
	// AddedInstance...: after adding one instance and applying Plan.
	AddedInstanceMovedShare float64 `json:"addedInstanceMovedShare"`
	AddedInstanceIdealShare float64 `json:"addedInstanceIdealShare"`
	// RemovedInstance...: after draining one of the original instances and applying Plan.
	RemovedInstanceMovedShare float64 `json:"removedInstanceMovedShare"`
	RemovedInstanceIdealShare float64 `json:"removedInstanceIdealShare"`
	MaxOverMinAfterAdd        float64 `json:"maxOverMinAfterAdd"`
	MaxOverMinAfterRemove     float64 `json:"maxOverMinAfterRemove"`
	Seconds                   float64 `json:"seconds"`
}

// Simulate places tenants one after the other on instances of equal weight with
// BoundedLoad{Epsilon: epsilon}, then plans and applies a rebalance after adding an
// instance, and separately after draining one, and reports the loads and the moves. It
// needs no database; ids and namespace UIDs are random from a fixed seed, so the result
// is reproducible. instances must be at least 2.
func Simulate(instances, tenants int, epsilon float64) SimulationResult {
	start := time.Now()
	res := simulate(rand.New(rand.NewPCG(1, 2)), instances, tenants, epsilon) //nolint:gosec // reproducible, not secret
	res.Seconds = time.Since(start).Seconds()
	return res
}

func simulate(r *rand.Rand, instances, tenants int, epsilon float64) SimulationResult {
	p := &BoundedLoad{Epsilon: epsilon}
	eis := make([]db.EngineInstance, instances)
	for i := range eis {
		eis[i] = db.EngineInstance{ID: randomID(r), CapacityWeight: 100, State: db.EngineInstanceActive}
	}
	ts := make([]db.Tenant, tenants)
	loads := map[string]int{}
	for t := range ts {
		ts[t] = db.Tenant{ID: randomID(r), NamespaceUID: randomID(r)}
		in, err := p.Place(&ts[t], eis, loads)
		if err != nil {
			panic(err) // unreachable: every instance is eligible
		}
		ts[t].EngineInstanceID = in.ID
		loads[in.ID]++
	}
	res := SimulationResult{
		Instances:                 instances,
		Tenants:                   tenants,
		Epsilon:                   p.epsilon(),
		AddedInstanceIdealShare:   1 / float64(instances+1),
		RemovedInstanceIdealShare: 1 / float64(instances),
	}
	res.MaxLoad, res.MinLoad, res.MaxOverMin = loadSpread(ts, eis)

	grown := append(append([]db.EngineInstance(nil), eis...),
		db.EngineInstance{ID: randomID(r), CapacityWeight: 100, State: db.EngineInstanceActive})
	res.AddedInstanceMovedShare, res.MaxOverMinAfterAdd = rebalance(p, ts, grown)

	drained := append([]db.EngineInstance(nil), eis...)
	drained[0].State = db.EngineInstanceDraining
	res.RemovedInstanceMovedShare, res.MaxOverMinAfterRemove = rebalance(p, ts, drained)
	return res
}

// rebalance applies p's plan to a copy of tenants and returns the share of tenants moved
// and the max/min load afterwards.
func rebalance(p *BoundedLoad, tenants []db.Tenant, instances []db.EngineInstance) (movedShare, maxOverMin float64) {
	ts := append([]db.Tenant(nil), tenants...)
	moves := p.Plan(ts, instances)
	applyMoves(ts, moves)
	_, _, maxOverMin = loadSpread(ts, instances)
	return float64(len(moves)) / float64(len(ts)), maxOverMin
}

// applyMoves sets the EngineInstanceID of the tenants that moves move, as the database
// will once the moves are done.
func applyMoves(tenants []db.Tenant, moves []Move) {
	to := make(map[string]string, len(moves))
	for _, m := range moves {
		to[m.TenantID] = m.To
	}
	for i := range tenants {
		if id, ok := to[tenants[i].ID]; ok {
			tenants[i].EngineInstanceID = id
		}
	}
}

// loadSpread returns the largest and smallest load of the eligible instances and the
// ratio of the largest to the smallest load per unit of weight (0 when the smallest is 0).
func loadSpread(tenants []db.Tenant, instances []db.EngineInstance) (maxLoad, minLoad int, maxOverMin float64) {
	loads := map[string]int{}
	for _, t := range tenants {
		loads[t.EngineInstanceID]++
	}
	hi, lo := 0.0, math.Inf(1)
	minLoad = math.MaxInt
	for _, in := range eligibleInstances(instances) {
		maxLoad, minLoad = max(maxLoad, loads[in.ID]), min(minLoad, loads[in.ID])
		perWeight := float64(loads[in.ID]) / float64(in.CapacityWeight)
		hi, lo = max(hi, perWeight), min(lo, perWeight)
	}
	if lo > 0 && !math.IsInf(lo, 1) {
		maxOverMin = hi / lo
	}
	return maxLoad, minLoad, maxOverMin
}

func randomID(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff)
}
