package placement

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// The balance targets: after placing or rebalancing, the most loaded instance holds at
// most 10% more per unit of weight than the least loaded one, and a rebalance moves at
// most 2 points of the tenants more than the ideal share.
const (
	maxOverMinTarget = 1.1
	movedSlack       = 0.02
)

// placeTenants places n new tenants one after the other with p, as the backend does.
func placeTenants(t *testing.T, p *BoundedLoad, r *rand.Rand, instances []db.EngineInstance, n int) []db.Tenant {
	t.Helper()
	tenants := make([]db.Tenant, n)
	loads := map[string]int{}
	for i := range tenants {
		tenants[i] = *newTenant(r)
		in, err := p.Place(&tenants[i], instances, loads)
		if err != nil {
			t.Fatal(err)
		}
		tenants[i].EngineInstanceID = in.ID
		loads[in.ID]++
	}
	return tenants
}

// applyPlan plans, checks the plan and applies it to tenants; it returns the moves.
func applyPlan(t *testing.T, p *BoundedLoad, tenants []db.Tenant, instances []db.EngineInstance) []Move {
	t.Helper()
	g := NewWithT(t)
	moves := p.Plan(tenants, instances)
	seen := map[string]bool{}
	for _, m := range moves {
		g.Expect(seen[m.TenantID]).To(BeFalse(), "tenant %s moved twice", m.TenantID)
		seen[m.TenantID] = true
		g.Expect(m.To).NotTo(Equal(m.From))
	}
	applyMoves(tenants, moves)
	checkWithinBounds(t, p, tenants, instances)
	g.Expect(p.Plan(tenants, instances)).To(BeEmpty(), "planning again after applying the plan")
	return moves
}

// checkWithinBounds checks that every placed tenant is on an eligible instance holding
// between its lower and upper bound (Plan's type comment).
func checkWithinBounds(t *testing.T, p *BoundedLoad, tenants []db.Tenant, instances []db.EngineInstance) {
	t.Helper()
	loads, total := map[string]int{}, 0
	for _, tenant := range tenants {
		if tenant.EngineInstanceID != "" {
			loads[tenant.EngineInstanceID]++
			total++
		}
	}
	weights := 0
	for _, in := range eligibleInstances(instances) {
		weights += in.CapacityWeight
	}
	for _, in := range eligibleInstances(instances) {
		lower, upper := bounds(p, total, in.CapacityWeight, weights)
		if l := loads[in.ID]; l < lower || l > upper {
			t.Fatalf("instance %s (weight %d) holds %d tenants, outside [%d, %d]", in.ID, in.CapacityWeight, l, lower, upper)
		}
		delete(loads, in.ID)
	}
	if len(loads) > 0 {
		t.Fatalf("tenants left on instances that are not eligible: %v", loads)
	}
}

// bounds are the lower and upper bounds of Plan's type comment.
func bounds(p *BoundedLoad, tenants, weight, weights int) (lower, upper int) {
	lower = int(math.Floor((1 - p.shortfall()) * float64(tenants) * float64(weight) / float64(weights)))
	return lower, Bound(p.epsilon(), tenants, weight, weights)
}

func spread(tenants []db.Tenant, instances []db.EngineInstance) float64 {
	_, _, maxOverMin := loadSpread(tenants, instances)
	return maxOverMin
}

var balanceCases = []struct {
	name    string
	weights []int
}{
	{"10 equal", []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100}},
	{"weights 1:2", []int{100, 200, 100, 200, 100, 200, 100, 200, 100, 200}},
}

func TestPlaceKeepsMaxOverMinWithinTarget(t *testing.T) {
	for _, c := range balanceCases {
		for seed := range uint64(4) {
			r := rand.New(rand.NewPCG(seed, 21))
			instances := newInstances(r, c.weights...)
			tenants := placeTenants(t, &BoundedLoad{}, r, instances, 10000)
			if s := spread(tenants, instances); s > maxOverMinTarget || s == 0 {
				t.Errorf("%s, seed %d: max/min load per weight %.3f after placing 10,000 tenants", c.name, seed, s)
			}
		}
	}
}

func TestPlanAddingAnInstanceMovesItsShareToIt(t *testing.T) {
	for _, c := range balanceCases {
		for seed := range uint64(4) {
			g := NewWithT(t)
			r := rand.New(rand.NewPCG(seed, 22))
			p := &BoundedLoad{}
			instances := newInstances(r, c.weights...)
			tenants := placeTenants(t, p, r, instances, 10000)
			added := newInstances(r, 100)[0]
			grown := append(append([]db.EngineInstance(nil), instances...), added)
			weights := 100
			for _, w := range c.weights {
				weights += w
			}
			// Place may have left an instance below the lower bound it has once there is
			// one more instance: Plan lifts it too.
			loads := map[string]int{}
			for _, tenant := range tenants {
				loads[tenant.EngineInstanceID]++
			}
			underLoaded := map[string]bool{added.ID: true}
			for _, in := range instances {
				if lower, _ := bounds(p, len(tenants), in.CapacityWeight, weights); loads[in.ID] < lower {
					underLoaded[in.ID] = true
				}
			}

			moves := applyPlan(t, p, tenants, grown)
			ideal := 100 / float64(weights)
			moved := float64(len(moves)) / float64(len(tenants))
			g.Expect(moved).To(BeNumerically("<=", ideal+movedSlack), "%s, seed %d", c.name, seed)
			g.Expect(moved).To(BeNumerically(">=", ideal*(1-DefaultShortfall)-0.001), "%s, seed %d: the new instance is filled to its lower bound", c.name, seed)
			toAdded := 0
			for _, m := range moves {
				g.Expect(underLoaded[m.To]).To(BeTrue(), "%s, seed %d: only the new instance and those under-loaded take tenants", c.name, seed)
				if m.To == added.ID {
					toAdded++
				}
			}
			g.Expect(len(moves)-toAdded).To(BeNumerically("<=", len(tenants)/100), "%s, seed %d", c.name, seed)
			g.Expect(spread(tenants, grown)).To(BeNumerically("<=", maxOverMinTarget), "%s, seed %d", c.name, seed)
		}
	}
}

func TestPlanDrainingAnInstanceMovesItsTenants(t *testing.T) {
	for _, c := range balanceCases {
		for seed := range uint64(4) {
			g := NewWithT(t)
			r := rand.New(rand.NewPCG(seed, 23))
			p := &BoundedLoad{}
			instances := newInstances(r, c.weights...)
			tenants := placeTenants(t, p, r, instances, 10000)
			drained := r.IntN(len(instances))
			instances[drained].State = db.EngineInstanceDraining
			onDrained := 0
			for _, tenant := range tenants {
				if tenant.EngineInstanceID == instances[drained].ID {
					onDrained++
				}
			}

			moves := applyPlan(t, p, tenants, instances)
			weights := 0
			for _, w := range c.weights {
				weights += w
			}
			ideal := float64(c.weights[drained]) / float64(weights)
			g.Expect(float64(len(moves))/float64(len(tenants))).To(BeNumerically("<=", ideal+movedSlack), "%s, seed %d", c.name, seed)
			// Its tenants move, and hardly any other (only to lift an instance that was
			// already below its lower bound).
			fromDrained := 0
			for _, m := range moves {
				if m.From == instances[drained].ID {
					fromDrained++
				}
			}
			g.Expect(fromDrained).To(Equal(onDrained))
			g.Expect(len(moves)-fromDrained).To(BeNumerically("<=", len(tenants)/100), "%s, seed %d", c.name, seed)
			g.Expect(spread(tenants, instances)).To(BeNumerically("<=", maxOverMinTarget), "%s, seed %d", c.name, seed)
		}
	}
}

func TestPlanHandlesWeightZeroRemovedAndUnplaced(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(24, 25))
	p := &BoundedLoad{}
	instances := newInstances(r, 100, 100, 100, 100)
	tenants := placeTenants(t, p, r, instances, 2000)
	unplaced := *newTenant(r)
	tenants = append(tenants, unplaced)

	// Weight 0 empties the instance; one missing from the list (deregistered) too.
	instances[1].CapacityWeight = 0
	removed := instances[3]
	instances = instances[:3]
	moves := applyPlan(t, p, tenants, instances)
	for _, m := range moves {
		g.Expect(m.From).To(Or(Equal(instances[1].ID), Equal(removed.ID)))
		g.Expect(m.TenantID).NotTo(Equal(unplaced.ID))
	}
	g.Expect(tenants[len(tenants)-1].EngineInstanceID).To(BeEmpty())

	// Nowhere to go: no moves.
	instances[0].State = db.EngineInstanceDraining
	instances[2].State = db.EngineInstanceDraining
	g.Expect(p.Plan(tenants, instances)).To(BeNil())
	g.Expect(p.Plan(nil, nil)).To(BeNil())
}

func TestPlanIsDeterministic(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(26, 27))
	for round := range 5 {
		weights := make([]int, 2+r.IntN(6))
		for i := range weights {
			weights[i] = 1 + r.IntN(300)
		}
		instances := newInstances(r, weights...)
		tenants := placeTenants(t, &BoundedLoad{}, r, instances, 1000+r.IntN(2000))
		// Change the set: re-weight, drain and add instances.
		instances[0].CapacityWeight = 1 + r.IntN(300)
		instances[len(instances)-1].State = db.EngineInstanceDraining
		instances = append(instances, newInstances(r, 1+r.IntN(300))...)

		first := (&BoundedLoad{}).Plan(tenants, instances)
		g.Expect(first).NotTo(BeEmpty())
		shuffledTenants := append([]db.Tenant(nil), tenants...)
		r.Shuffle(len(shuffledTenants), func(i, j int) { shuffledTenants[i], shuffledTenants[j] = shuffledTenants[j], shuffledTenants[i] })
		shuffledInstances := append([]db.EngineInstance(nil), instances...)
		r.Shuffle(len(shuffledInstances), func(i, j int) {
			shuffledInstances[i], shuffledInstances[j] = shuffledInstances[j], shuffledInstances[i]
		})
		g.Expect((&BoundedLoad{}).Plan(shuffledTenants, shuffledInstances)).To(Equal(first), "round %d", round)
		applyPlan(t, &BoundedLoad{}, tenants, instances)
	}
}

// The rebalancer applies a few moves per run and plans again: that converges, with about
// as many moves as one whole plan.
func TestPlanAppliedInSmallStepsConverges(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(28, 29))
	p := &BoundedLoad{}
	instances := newInstances(r, 100, 100, 100, 100, 100)
	tenants := placeTenants(t, p, r, instances, 3000)
	instances[2].State = db.EngineInstanceDraining
	instances = append(instances, newInstances(r, 200)...)

	whole := len(p.Plan(tenants, instances))
	total := 0
	for step := 0; ; step++ {
		g.Expect(step).To(BeNumerically("<", whole), "no convergence")
		moves := p.Plan(tenants, instances)
		if len(moves) == 0 {
			break
		}
		moves = moves[:min(len(moves), 10)]
		applyMoves(tenants, moves)
		total += len(moves)
	}
	checkWithinBounds(t, p, tenants, instances)
	g.Expect(total).To(BeNumerically("<=", whole+whole/20))
}

func TestSimulateMeetsTheTargets(t *testing.T) {
	g := NewWithT(t)
	for seed := range uint64(3) {
		res := simulate(rand.New(rand.NewPCG(seed, 30)), 10, 10000, 0)
		g.Expect(res.Instances).To(Equal(10))
		g.Expect(res.Tenants).To(Equal(10000))
		g.Expect(res.Epsilon).To(Equal(DefaultEpsilon))
		g.Expect(res.MaxLoad).To(BeNumerically("<=", Bound(DefaultEpsilon, 10000, 1, 10)))
		g.Expect(float64(res.MaxLoad) / float64(res.MinLoad)).To(BeNumerically("~", res.MaxOverMin, 1e-9))
		g.Expect(res.MaxOverMin).To(And(BeNumerically(">=", 1), BeNumerically("<=", maxOverMinTarget)))
		g.Expect(res.AddedInstanceIdealShare).To(BeNumerically("~", 1.0/11, 1e-12))
		g.Expect(res.AddedInstanceMovedShare).To(And(BeNumerically(">", 0.08), BeNumerically("<=", 1.0/11+movedSlack)))
		g.Expect(res.RemovedInstanceIdealShare).To(BeNumerically("~", 0.1, 1e-12))
		g.Expect(res.RemovedInstanceMovedShare).To(And(BeNumerically(">", 0.08), BeNumerically("<=", 0.1+movedSlack)))
		g.Expect(res.MaxOverMinAfterAdd).To(And(BeNumerically(">=", 1), BeNumerically("<=", maxOverMinTarget)))
		g.Expect(res.MaxOverMinAfterRemove).To(And(BeNumerically(">=", 1), BeNumerically("<=", maxOverMinTarget)))
	}
	res := Simulate(4, 100, 0.5)
	g.Expect(res.Epsilon).To(Equal(0.5))
	g.Expect(res.Seconds).To(BeNumerically(">", 0))
	g.Expect(Simulate(4, 100, 0.5).MaxOverMin).To(Equal(res.MaxOverMin), "reproducible")
}
