package placement

import (
	"math"
	"sort"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// Move is one tenant to move from engine instance From to engine instance To.
type Move struct {
	TenantID, From, To string
}

// Plan returns the moves that bring the placed tenants (those with an EngineInstanceID;
// unplaced ones are ignored) within the bounds of Place, with as few moves as it can:
//
//   - T is the number of placed tenants, W the total weight of the eligible instances
//     (as for Place), and an eligible instance i of weight w_i should hold between
//     floor((1-s) × T × w_i / W) and Bound(ε, T, w_i, W) tenants, where s is the
//     Shortfall (looser than ε: departures alone rarely set off moves).
//   - Tenants on an instance that is not eligible (draining, weight 0, or not in
//     instances) must move.
//   - An instance above its upper bound sheds the excess, first the tenants its ring walk
//     reaches last (those that consistent hashing would place elsewhere).
//   - Each tenant that must move walks the ring from its key, as in Place, and goes to the
//     first instance below its lower bound, else below its share (rounded up), else
//     below its upper bound: the neediest instances first.
//   - An instance still below its lower bound (one just added, say) takes tenants from
//     instances above their lower bound, first the tenants whose ring walk reaches it
//     first: those that consistent hashing alone would give it.
//
// So adding an instance to n moves about (1-s)/(n+1) of the tenants, all to the new
// instance, and draining one moves its tenants and (nearly always) no others.
//
// Moves come most urgent first: off ineligible instances, off instances above their upper
// bound, onto instances below their lower bound. No move takes an instance out of its
// bounds, so applying only the first moves and planning again still converges. The plan
// depends only on the tenants and instances, not on their order. Once it is applied, every instance is within its bounds, so planning again
// returns no moves. With no eligible instance it returns nil: there is nowhere to move to.
func (p *BoundedLoad) Plan(tenants []db.Tenant, instances []db.EngineInstance) []Move {
	eligible := eligibleInstances(instances)
	if len(eligible) == 0 {
		return nil
	}
	r := p.ring(eligible)
	epsilon := p.epsilon()
	index := make(map[string]int, len(eligible))
	weights := 0
	for i, in := range eligible {
		index[in.ID] = i
		weights += in.CapacityWeight
	}

	var placed []*db.Tenant
	for i := range tenants {
		if tenants[i].EngineInstanceID != "" {
			placed = append(placed, &tenants[i])
		}
	}
	sort.Slice(placed, func(a, b int) bool { return placed[a].ID < placed[b].ID })
	// Each instance's lower bound, share rounded up and upper bound.
	lower, share, upper := make([]int, len(eligible)), make([]int, len(eligible)), make([]int, len(eligible))
	for i, in := range eligible {
		exact := float64(len(placed)) * float64(in.CapacityWeight) / float64(weights)
		lower[i], share[i] = int(math.Floor((1-p.shortfall())*exact)), int(math.Ceil(exact))
		upper[i] = Bound(epsilon, len(placed), in.CapacityWeight, weights)
	}

	// Tenants are indexes into placed, instances into eligible. home[t] is the instance
	// tenant t is on (-1: not eligible), at[t] the one it ends on (-1: still to place).
	home, at, keys := make([]int, len(placed)), make([]int, len(placed)), make([]uint64, len(placed))
	loads := make([]int, len(eligible))
	on := make([][]int, len(eligible)) // the tenants of each instance
	var homeless []int
	for t, tenant := range placed {
		keys[t] = ringHash(tenant.NamespaceUID)
		i, ok := index[tenant.EngineInstanceID]
		if !ok {
			i = -1
			homeless = append(homeless, t)
		} else {
			loads[i]++
			on[i] = append(on[i], t)
		}
		home[t], at[t] = i, i
	}

	// Shed the excess of instances above their upper bound.
	for i, ts := range on {
		excess := loads[i] - upper[i]
		if excess <= 0 {
			continue
		}
		ranks := make(map[int]int, len(ts))
		for _, t := range ts {
			ranks[t] = r.rank(keys[t], i)
		}
		shed := append([]int(nil), ts...)
		sort.SliceStable(shed, func(a, b int) bool { return ranks[shed[a]] > ranks[shed[b]] })
		for _, t := range shed[:excess] {
			at[t] = -1
			homeless = append(homeless, t)
		}
		loads[i] = upper[i]
	}

	// Place the homeless (those off ineligible instances first) on the neediest instances
	// first. Some instance is below its upper bound: the bounds sum to more than T.
	for _, t := range homeless {
		i := -1
		for _, limit := range [][]int{lower, share, upper} {
			if i = r.walk(keys[t], func(i int) bool { return loads[i] < limit[i] }); i >= 0 {
				break
			}
		}
		at[t] = i
		loads[i]++
	}

	// Fill the instances still below their lower bound from those above theirs.
	var filled []int
	for i := range eligible {
		if loads[i] >= lower[i] {
			continue
		}
		var candidates []int
		ranks := map[int]int{}
		for t := range placed {
			// A tenant already moved stays where the plan put it.
			if at[t] == home[t] && at[t] != i && loads[at[t]] > lower[at[t]] {
				candidates = append(candidates, t)
				ranks[t] = r.rank(keys[t], i)
			}
		}
		sort.SliceStable(candidates, func(a, b int) bool { return ranks[candidates[a]] < ranks[candidates[b]] })
		for _, t := range candidates {
			if loads[i] >= lower[i] {
				break
			}
			if from := at[t]; loads[from] > lower[from] {
				loads[from]--
				loads[i]++
				at[t] = i
				filled = append(filled, t)
			}
		}
	}

	moves := make([]Move, 0, len(homeless)+len(filled))
	for _, t := range append(homeless, filled...) {
		moves = append(moves, Move{TenantID: placed[t].ID, From: placed[t].EngineInstanceID, To: eligible[at[t]].ID})
	}
	return moves
}
