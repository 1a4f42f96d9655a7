package placement

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// ErrNoEngineInstance means no engine instance accepts tenants.
var ErrNoEngineInstance = errors.New("no active GitOps engine instance accepts new tenants")

// Defaults of BoundedLoad.
const (
	// DefaultEpsilon lets an instance hold up to 2% more than its weighted share. Placing
	// 10,000 tenants on 10 equal instances one after the other then ends with the most
	// loaded instance within about 1.07 times the least (1.12 with 5%, 1.17 with 25%):
	// the bound is the only thing that evens out the ring's unevenness.
	DefaultEpsilon = 0.02
	// DefaultShortfall is how far below its share an instance may fall before Plan moves
	// tenants onto it: looser than ε, so that tenants leaving (deleted namespaces) do not
	// set off moves, each of which costs both instances' Argo CD a re-adoption, while a
	// plan still ends within about 1.1 times max/min.
	DefaultShortfall = 0.06
	// DefaultPointsPerWeight is the number of ring points per unit of capacity weight.
	// Weights are on the scale of the column's default, 100 (a standard instance), so a
	// standard instance has 10,000 points on the ring: its share of the ring is typically
	// within 1% of its weighted share (3% with 1,000 points, too uneven for ε = 2%).
	DefaultPointsPerWeight = 100
	// MaxPointsPerInstance caps the ring points of one instance (a huge weight still gets
	// its share through the load bound, just with a coarser ring).
	MaxPointsPerInstance = 100000
)

// BoundedLoad places a new tenant by consistent hashing with bounded loads (Mirrokni,
// Thorup and Zadimoghaddam, "Consistent Hashing with Bounded Loads", 2018).
//
// Every eligible instance (state Active, capacity weight > 0; Draining instances and
// weight 0 take no new tenants) has weight × PointsPerWeight points on a 64-bit hash ring
// (point k of instance i at sha256(i.ID + "#" + k)). A tenant's key is its namespace UID,
// which never changes, hashed the same way. From the tenant's hash, walk the ring
// clockwise and take the first instance i whose current load is below its bound
//
//	ceil((1+ε) × (T+1) × weight_i / W)
//
// where T is the number of tenants on eligible instances and W the sum of their weights.
// The bounds sum to more than T, so some eligible instance is always below its bound, and
// after the placement no instance holds more than (1+ε) times its weighted share (rounded
// up). Points depend only on an instance's id and weight, so registering or removing an
// instance changes only its own arcs of the ring: few placements change.
//
// Place only places NEW tenants; Plan (see rebalance.go) moves placed tenants back within
// the bounds when instances are added, drained, re-weighted or removed.
//
// The result depends only on (tenant, instances, loads), not on the order of instances.
// Two different tenants placed concurrently can read the same loads, so a burst of
// concurrent placements can overshoot a bound by the number of placements in flight.
type BoundedLoad struct {
	// Epsilon is ε, the allowed excess over an instance's share; 0 or less means
	// DefaultEpsilon.
	Epsilon float64
	// PointsPerWeight is the ring points per unit of weight; 0 or less means
	// DefaultPointsPerWeight.
	PointsPerWeight int
	// Shortfall is how far below its share an instance may be before Plan fills it; 0 or
	// less means DefaultShortfall.
	Shortfall float64

	mu   sync.Mutex
	last *ring // the ring of the last placement, reused while instances and weights stay
}

type ringPoint struct {
	hash     uint64
	instance int // index into ring.instances
}

// ring is the hash ring of a set of eligible instances (sorted by id).
type ring struct {
	signature string // instance ids and weights, see ringSignature
	instances []*db.EngineInstance
	points    []ringPoint
}

// Place implements tenancy.Placer. It is safe for concurrent use; use a *BoundedLoad.
func (p *BoundedLoad) Place(tenant *db.Tenant, instances []db.EngineInstance, loads map[string]int) (*db.EngineInstance, error) {
	epsilon := p.epsilon()
	eligible := eligibleInstances(instances)
	if len(eligible) == 0 {
		return nil, ErrNoEngineInstance
	}
	r := p.ring(eligible)

	total, weights := 0, 0
	for _, in := range eligible {
		total += loads[in.ID]
		weights += in.CapacityWeight
	}
	// eligible and r.instances are the same instances in the same order, but the caller's
	// rows (not the cached ones) are returned.
	i := r.walk(ringHash(tenant.NamespaceUID), func(i int) bool {
		in := eligible[i]
		return loads[in.ID] < Bound(epsilon, total+1, in.CapacityWeight, weights)
	})
	if i < 0 {
		// Unreachable: the bounds sum to more than total (see the type's comment).
		return nil, ErrNoEngineInstance
	}
	return eligible[i], nil
}

func (p *BoundedLoad) shortfall() float64 {
	if p.Shortfall <= 0 {
		return DefaultShortfall
	}
	return p.Shortfall
}

func (p *BoundedLoad) epsilon() float64 {
	if p.Epsilon <= 0 {
		return DefaultEpsilon
	}
	return p.Epsilon
}

// eligibleInstances returns the instances that take tenants (Active, weight > 0), sorted
// by id so that results do not depend on the caller's order.
func eligibleInstances(instances []db.EngineInstance) []*db.EngineInstance {
	var eligible []*db.EngineInstance
	for i := range instances {
		if isEligible(&instances[i]) {
			eligible = append(eligible, &instances[i])
		}
	}
	sort.Slice(eligible, func(a, b int) bool { return eligible[a].ID < eligible[b].ID })
	return eligible
}

func isEligible(in *db.EngineInstance) bool {
	return in.State == db.EngineInstanceActive && in.CapacityWeight > 0
}

// walk visits the instances of the ring clockwise from key, each once, and returns the
// first one accept accepts (an index into r.instances), or -1 if none does.
func (r *ring) walk(key uint64, accept func(instance int) bool) int {
	start := sort.Search(len(r.points), func(i int) bool { return r.points[i].hash >= key })
	tried, left := make([]bool, len(r.instances)), len(r.instances)
	for step := 0; step < len(r.points) && left > 0; step++ {
		pt := r.points[(start+step)%len(r.points)]
		if tried[pt.instance] {
			continue
		}
		tried[pt.instance] = true
		left--
		if accept(pt.instance) {
			return pt.instance
		}
	}
	return -1
}

// rank is the number of other instances the walk from key visits before instance: 0 for
// the instance plain consistent hashing gives key to.
func (r *ring) rank(key uint64, instance int) int {
	n := 0
	r.walk(key, func(i int) bool {
		if i == instance {
			return true
		}
		n++
		return false
	})
	return n
}

// ring returns the ring of eligible (sorted by id), reusing the last one built when the
// instances and weights are the same.
func (p *BoundedLoad) ring(eligible []*db.EngineInstance) *ring {
	var sig strings.Builder
	for _, in := range eligible {
		sig.WriteString(in.ID)
		sig.WriteByte('=')
		sig.WriteString(strconv.Itoa(in.CapacityWeight))
		sig.WriteByte(';')
	}
	signature := sig.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != nil && p.last.signature == signature {
		return p.last
	}
	perWeight := p.PointsPerWeight
	if perWeight <= 0 {
		perWeight = DefaultPointsPerWeight
	}
	r := &ring{signature: signature, instances: eligible}
	for i, in := range eligible {
		n := in.CapacityWeight * perWeight
		if n > MaxPointsPerInstance || n <= 0 { // n <= 0: overflow
			n = MaxPointsPerInstance
		}
		for k := 0; k < n; k++ {
			r.points = append(r.points, ringPoint{hash: ringHash(in.ID + "#" + strconv.Itoa(k)), instance: i})
		}
	}
	// Ties (64-bit collisions) go to the smaller instance id: instances are sorted by id.
	sort.Slice(r.points, func(a, b int) bool {
		if r.points[a].hash != r.points[b].hash {
			return r.points[a].hash < r.points[b].hash
		}
		return r.points[a].instance < r.points[b].instance
	})
	p.last = r
	return r
}

// Bound is the most tenants an instance of weight may hold, out of tenants on instances
// of total weight weights: ceil((1+epsilon) × tenants × weight / weights).
func Bound(epsilon float64, tenants, weight, weights int) int {
	return int(math.Ceil((1 + epsilon) * float64(tenants) * float64(weight) / float64(weights)))
}

func ringHash(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}
