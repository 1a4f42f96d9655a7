package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func randomUID(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff)
}

func newInstances(r *rand.Rand, weights ...int) []db.EngineInstance {
	eis := make([]db.EngineInstance, len(weights))
	for i, w := range weights {
		eis[i] = db.EngineInstance{ID: randomUID(r), CapacityWeight: w, State: db.EngineInstanceActive}
	}
	return eis
}

func newTenant(r *rand.Rand) *db.Tenant {
	return &db.Tenant{ID: randomUID(r), NamespaceUID: randomUID(r)}
}

// placeAll places n new tenants one after the other, as the backend does, and returns the
// final loads; check runs after each placement.
func placeAll(t *testing.T, p *BoundedLoad, r *rand.Rand, instances []db.EngineInstance, n int, check func(loads map[string]int)) map[string]int {
	t.Helper()
	loads := map[string]int{}
	for range n {
		in, err := p.Place(newTenant(r), instances, loads)
		if err != nil {
			t.Fatal(err)
		}
		loads[in.ID]++
		if check != nil {
			check(loads)
		}
	}
	return loads
}

func TestBoundedLoadIsDeterministic(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		weights := make([]int, 1+r.IntN(10))
		for i := range weights {
			weights[i] = 1 + r.IntN(300)
		}
		instances := newInstances(r, weights...)
		loads := map[string]int{}
		for _, in := range instances {
			loads[in.ID] = r.IntN(200)
		}
		shuffled := append([]db.EngineInstance(nil), instances...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		// A coarser ring than the default: rings are rebuilt below, and their size does
		// not matter here.
		p := &BoundedLoad{PointsPerWeight: 10}
		for i := range 200 {
			tenant := newTenant(r)
			first, err := p.Place(tenant, instances, loads)
			g.Expect(err).NotTo(HaveOccurred())
			again, err := p.Place(tenant, shuffled, loads)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.ID).To(Equal(first.ID), "round %d: the order of instances changed the placement", round)
			if i < 5 {
				fresh, err := (&BoundedLoad{PointsPerWeight: 10}).Place(tenant, shuffled, loads)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(fresh.ID).To(Equal(first.ID), "round %d: the cached ring changed the placement", round)
			}
		}
	}
}

func TestBoundedLoadNeverExceedsBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 30 {
		weights := make([]int, 1+r.IntN(12))
		for i := range weights {
			weights[i] = 1 + r.IntN(300)
		}
		epsilon := []float64{0.05, 0.1, 0.25, 0.5, 1}[r.IntN(5)]
		instances := newInstances(r, weights...)
		sum := 0
		for _, w := range weights {
			sum += w
		}
		total := 0
		placeAll(t, &BoundedLoad{Epsilon: epsilon}, r, instances, 2000, func(loads map[string]int) {
			total++
			for _, in := range instances {
				if bound := Bound(epsilon, total, in.CapacityWeight, sum); loads[in.ID] > bound {
					t.Fatalf("round %d (ε=%v, weights %v): instance of weight %d holds %d of %d tenants, over its bound %d",
						round, epsilon, weights, in.CapacityWeight, loads[in.ID], total, bound)
				}
			}
		})
	}
}

func TestBoundedLoadEqualWeightsSpreadWithinBound(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(5, 6))
	instances := newInstances(r, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100)
	loads := placeAll(t, &BoundedLoad{}, r, instances, 10000, nil)
	bound := Bound(DefaultEpsilon, 10000, 100, 1000) // 1020
	g.Expect(bound).To(Equal(1020))
	for _, in := range instances {
		g.Expect(loads[in.ID]).To(BeNumerically("<=", bound))
		// Not a guarantee of the algorithm, but a ring of 10,000 points per instance is
		// far from this uneven (see TestPlaceBalance for the max/min target).
		g.Expect(loads[in.ID]).To(BeNumerically(">=", 900))
	}
}

func TestBoundedLoadSkipsWeightZeroAndDraining(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(7, 8))
	instances := newInstances(r, 100, 0, 100, 300)
	instances[2].State = db.EngineInstanceDraining
	instances[3].State = db.EngineInstanceDraining
	// Even with the eligible instance far over any share, the others get none.
	loads := map[string]int{instances[0].ID: 1000}
	p := &BoundedLoad{}
	for range 1000 {
		in, err := p.Place(newTenant(r), instances, loads)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(in.ID).To(Equal(instances[0].ID))
		loads[in.ID]++
	}

	instances[0].State = db.EngineInstanceDraining
	_, err := (&BoundedLoad{}).Place(newTenant(r), instances, loads)
	g.Expect(err).To(MatchError(ErrNoEngineInstance))
	_, err = (&BoundedLoad{}).Place(newTenant(r), nil, nil)
	g.Expect(err).To(MatchError(ErrNoEngineInstance))
}

func TestBoundedLoadFollowsWeights(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(9, 10))
	for range 5 {
		instances := newInstances(r, 100, 200)
		loads := placeAll(t, &BoundedLoad{}, r, instances, 9000, nil)
		ratio := float64(loads[instances[1].ID]) / float64(loads[instances[0].ID])
		g.Expect(ratio).To(BeNumerically("~", 2, 0.4), "loads %v", loads)
	}
}

// With no loads to bound, placement is plain consistent hashing: adding an instance to N
// changes the placement of about 1/(N+1) of the tenants, all to the new instance.
func TestBoundedLoadRingIsConsistent(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(11, 12))
	instances := newInstances(r, 100, 100, 100, 100)
	grown := append(append([]db.EngineInstance(nil), instances...), newInstances(r, 100)...)
	newID := grown[4].ID
	p, q := &BoundedLoad{}, &BoundedLoad{} // one ring each
	moved := 0
	const n = 10000
	for range n {
		tenant := newTenant(r)
		before, err := p.Place(tenant, instances, nil)
		g.Expect(err).NotTo(HaveOccurred())
		after, err := q.Place(tenant, grown, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if before.ID != after.ID {
			moved++
			g.Expect(after.ID).To(Equal(newID))
		}
	}
	g.Expect(moved).To(BeNumerically("~", n/5, n/10))
}

func TestBound(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Bound(0.25, 1, 100, 100)).To(Equal(2))  // ceil(1.25)
	g.Expect(Bound(0.25, 4, 100, 500)).To(Equal(1))  // ceil(1.25 × 4 / 5 = 1.0)
	g.Expect(Bound(0.25, 10, 200, 300)).To(Equal(9)) // ceil(8.33)
	g.Expect(Bound(0.25, 0, 100, 100)).To(Equal(0))
}
