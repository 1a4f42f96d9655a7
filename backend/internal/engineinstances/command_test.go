package engineinstances_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts/clitest"
	"github.com/gitops-service/gitops-service/backend/internal/engineinstances"
	"github.com/gitops-service/gitops-service/backend/internal/placement"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func newUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	db    *bun.DB
	store *db.Store
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, ctx: context.Background(), db: dbtest.NewDB(t), store: db.NewStore(nil)}
}

// run runs `backend engine-instances args...` against the fixture's database and returns
// its output.
func (f *fixture) run(args ...string) (string, error) {
	cmd := &engineinstances.Command{
		Store: f.store,
		Open: func(context.Context) (bun.IDB, func(), error) {
			return f.db, func() {}, nil
		},
		NamespaceUID: func(_ context.Context, _, namespace string) (string, error) {
			return "", fmt.Errorf("no cluster in this test (namespace %s)", namespace)
		},
	}
	res := clitest.Run(f.t, cmd.NewCommand(), args...)
	return res.Stdout, res.Err
}

func (f *fixture) mustRun(args ...string) string {
	f.t.Helper()
	out, err := f.run(args...)
	if err != nil {
		f.t.Fatalf("engine-instances %v: %v", args, err)
	}
	return out
}

// placeNewTenants creates n tenants and places them as the backend does.
func (f *fixture) placeNewTenants(n int) map[string]int {
	f.t.Helper()
	resolver := &tenancy.Resolver{Store: f.store} // the default placer
	placed := map[string]int{}
	for range n {
		uid := newUID()
		tenant, err := f.store.GetOrCreateTenant(f.ctx, f.db, uid, "ns-"+uid[:8])
		if err != nil {
			f.t.Fatal(err)
		}
		ei, err := resolver.EngineInstance(f.ctx, f.db, tenant)
		if err != nil {
			f.t.Fatal(err)
		}
		placed[ei.ID]++
	}
	return placed
}

func TestEngineInstancesCommand(t *testing.T) {
	t.Parallel()
	g, f := NewWithT(t), newFixture(t)

	uidA, uidB := newUID(), newUID()
	a := strings.TrimSpace(f.mustRun("register", "--namespace", "argocd-a", "--namespace-uid", uidA))
	b := strings.TrimSpace(f.mustRun("register", "--namespace", "argocd-b", "--cluster", "east", "--namespace-uid", uidB, "--weight", "300"))
	g.Expect(a).NotTo(Equal(b))
	// Registering again is idempotent and keeps the weight unless given.
	g.Expect(strings.TrimSpace(f.mustRun("register", "--namespace", "argocd-b", "--cluster", "east", "--namespace-uid", uidB))).To(Equal(b))
	ei, err := f.store.GetEngineInstance(f.ctx, f.db, b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ei.CapacityWeight).To(Equal(300))
	g.Expect(ei.NamespaceUID).To(Equal(uidB))
	// The same namespace on another cluster is refused.
	_, err = f.run("register", "--namespace", "argocd-b", "--cluster", "west", "--namespace-uid", uidB)
	g.Expect(err).To(MatchError(db.ErrConflict))

	out := f.mustRun("set-weight", b, "100")
	g.Expect(out).To(ContainSubstring("weight 100, Active"))

	placed := f.placeNewTenants(40)
	g.Expect(placed[a] + placed[b]).To(Equal(40))
	g.Expect(placed[a]).To(BeNumerically(">", 0))
	g.Expect(placed[b]).To(BeNumerically(">", 0))

	// The backend reaches east with stored credentials.
	key, err := secretbox.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	keyring, err := secretbox.NewKeyring("k1", map[string][]byte{"k1": key})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = db.NewStore(keyring).SetEngineClusterCredentials(f.ctx, f.db, "east",
		&db.ClusterCredentials{Host: "https://east.example.com:6443", BearerToken: "token"})
	g.Expect(err).NotTo(HaveOccurred())

	list := f.mustRun("list")
	g.Expect(list).To(MatchRegexp(`(?m)^ID\s+CLUSTER\s+NAMESPACE\s+WEIGHT\s+STATE\s+TENANTS\s+ACCESS$`))
	g.Expect(list).To(MatchRegexp(`(?m)^%s\s+default\s+argocd-a\s+100\s+Active\s+%d\s+in-cluster$`, a, placed[a]))
	g.Expect(list).To(MatchRegexp(`(?m)^%s\s+east\s+argocd-b\s+100\s+Active\s+%d\s+stored-credentials$`, b, placed[b]))
	// The same rows for scripts.
	for _, format := range []string{"json", "yaml"} {
		var rows []map[string]any
		g.Expect(yaml.Unmarshal([]byte(f.mustRun("list", "-o", format)), &rows)).To(Succeed(), format)
		g.Expect(rows).To(ConsistOf(
			map[string]any{"id": a, "cluster": "default", "namespace": "argocd-a", "weight": 100.0,
				"state": "Active", "tenants": float64(placed[a]), "access": "in-cluster"},
			map[string]any{"id": b, "cluster": "east", "namespace": "argocd-b", "weight": 100.0,
				"state": "Active", "tenants": float64(placed[b]), "access": "stored-credentials"}), format)
	}
	_, err = f.run("list", "-o", "xml")
	g.Expect(err).To(MatchError(ContainSubstring(`invalid argument "xml" for "-o, --output" flag: want one of table, json, yaml`)))

	// A drained instance gets no new tenants and keeps its own.
	g.Expect(f.mustRun("drain", a)).To(ContainSubstring("Draining"))
	g.Expect(f.placeNewTenants(30)).To(Equal(map[string]int{b: 30}))
	loads, err := f.store.CountTenantsByEngineInstance(f.ctx, f.db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loads).To(Equal(map[string]int{a: placed[a], b: placed[b] + 30}))

	// Weight 0 also takes none: with a drained and b at weight 0, nothing is eligible.
	f.mustRun("set-weight", b, "0")
	_, err = (&tenancy.Resolver{Store: f.store}).EngineInstance(f.ctx, f.db, &db.Tenant{ID: newUID(), NamespaceUID: newUID()})
	g.Expect(err).To(MatchError(placement.ErrNoEngineInstance))
	f.mustRun("set-weight", b, "100")
	g.Expect(f.mustRun("undrain", a)).To(ContainSubstring("weight 100, Active"))

	// Deregistering an instance with tenants is refused and says what to do.
	_, err = f.run("deregister", a)
	g.Expect(err).To(MatchError(db.ErrReferenced))
	var placedErr *db.TenantsPlacedError
	g.Expect(errors.As(err, &placedErr)).To(BeTrue())
	g.Expect(placedErr.Tenants).To(Equal(placed[a]))
	g.Expect(err.Error()).To(ContainSubstring("drain it first"))
	g.Expect(err.Error()).To(ContainSubstring("once the backend's rebalancer has moved its tenants"))
	_, err = f.store.GetEngineInstance(f.ctx, f.db, a)
	g.Expect(err).NotTo(HaveOccurred())

	// Once its tenants are gone, it can be deregistered.
	tenants, err := f.store.ListTenantsByEngineInstance(f.ctx, f.db, a)
	g.Expect(err).NotTo(HaveOccurred())
	for _, tenant := range tenants {
		g.Expect(f.store.DeleteTenant(f.ctx, f.db, tenant.ID)).To(Succeed())
	}
	f.mustRun("deregister", a)
	_, err = f.store.GetEngineInstance(f.ctx, f.db, a)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = f.run("deregister", a)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	g.Expect(f.mustRun("list")).NotTo(ContainSubstring(a))
}

func TestEngineInstancesCommandUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, args := range [][]string{
		{"frobnicate"},
		{"list", "extra"},
		{"drain"},
		{"drain", "a", "b"},
		{"set-weight", "x"},
		{"set-weight", "x", "heavy"},
		{"set-weight", "x", "-1"},
		{"register", "--namespace-uid", "u"},
		{"register", "--namespace", "ns", "--namespace-uid", "u", "--weight", "100001"},
		{"simulate", "extra"},
		{"simulate", "--instances", "1"},
		{"simulate", "--tenants", "0"},
		{"simulate", "--epsilon", "0"},
		{"simulate", "--epsilon", "-0.1"},
		{"set-cluster-credentials", "--kubeconfig", "k"},
		{"set-cluster-credentials", "--cluster", "east"},
		{"set-cluster-credentials", "--cluster", "east", "--kubeconfig", "k", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, err := f.run(args...)
			NewWithT(t).Expect(err).To(MatchError(manageropts.ErrUsage))
		})
	}
	// Without a verb, it prints its help, which lists the verbs.
	out, err := f.run()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(out).To(ContainSubstring("Available Commands:"))
	// Without --namespace-uid, register reads the namespace from the cluster.
	_, err = f.run("register", "--namespace", "argocd-x")
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("no cluster in this test (namespace argocd-x)")))
}

// simulate runs `backend engine-instances simulate args...` with no database.
func simulate(t *testing.T, args ...string) string {
	t.Helper()
	cmd := &engineinstances.Command{Open: func(context.Context) (bun.IDB, func(), error) {
		t.Fatal("simulate opened the database")
		return nil, nil, nil
	}}
	res := clitest.Run(t, cmd.NewCommand(), append([]string{"simulate"}, args...)...)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res.Stdout
}

func TestEngineInstancesSimulate(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)

	// The benchmark tool's call: exactly one JSON object with these fields.
	out := simulate(t, "-o", "json", "--instances", "10", "--tenants", "10000")
	var fields map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	g.Expect(dec.Decode(&fields)).To(Succeed())
	g.Expect(dec.More()).To(BeFalse(), "more than one JSON value: %s", out)
	g.Expect(fields).To(HaveLen(13))
	for _, name := range []string{"instances", "tenants", "epsilon", "maxLoad", "minLoad", "maxOverMin",
		"addedInstanceMovedShare", "addedInstanceIdealShare", "removedInstanceMovedShare", "removedInstanceIdealShare",
		"maxOverMinAfterAdd", "maxOverMinAfterRemove", "seconds"} {
		g.Expect(fields).To(HaveKeyWithValue(name, BeNumerically(">=", 0)))
	}
	var res placement.SimulationResult
	g.Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())
	g.Expect(res.Instances).To(Equal(10))
	g.Expect(res.Tenants).To(Equal(10000))
	g.Expect(res.Epsilon).To(Equal(placement.DefaultEpsilon))
	g.Expect(res.MaxLoad).To(BeNumerically(">=", 1000))
	g.Expect(res.MinLoad).To(And(BeNumerically(">", 0), BeNumerically("<=", 1000)))
	// The targets: max/min at most 1.1 after placing and after each rebalance, and at most
	// 2 points more tenants moved than the ideal share.
	g.Expect(res.MaxOverMin).To(BeNumerically("<=", 1.1))
	g.Expect(res.MaxOverMinAfterAdd).To(BeNumerically("<=", 1.1))
	g.Expect(res.MaxOverMinAfterRemove).To(BeNumerically("<=", 1.1))
	g.Expect(res.AddedInstanceIdealShare).To(BeNumerically("~", 1.0/11, 1e-9))
	g.Expect(res.AddedInstanceMovedShare).To(And(BeNumerically(">", 0), BeNumerically("<=", 1.0/11+0.02)))
	g.Expect(res.RemovedInstanceIdealShare).To(BeNumerically("~", 0.1, 1e-9))
	g.Expect(res.RemovedInstanceMovedShare).To(And(BeNumerically(">", 0), BeNumerically("<=", 0.1+0.02)))
	g.Expect(res.Seconds).To(BeNumerically(">", 0))

	// --json, as before -o.
	g.Expect(json.Unmarshal([]byte(simulate(t, "--json", "--instances", "4", "--tenants", "100")), &res)).To(Succeed())
	g.Expect(res.Instances).To(Equal(4))
	g.Expect(yaml.Unmarshal([]byte(simulate(t, "-o", "yaml", "--instances", "5", "--tenants", "100")), &res)).To(Succeed())
	g.Expect(res.Instances).To(Equal(5))

	out = simulate(t, "--instances", "4", "--tenants", "1000", "--epsilon", "0.1")
	g.Expect(out).To(MatchRegexp(`(?m)^instances, tenants, epsilon\s+4, 1000, 0\.1$`))
	g.Expect(out).To(MatchRegexp(`(?m)^after placing\s+max \d+, min \d+, max/min 1\.\d{3}$`))
	g.Expect(out).To(MatchRegexp(`(?m)^after adding an instance\s+moved \d+\.\d\d% \(ideal 20\.00%\), max/min 1\.\d{3}$`))
	g.Expect(out).To(MatchRegexp(`(?m)^after draining an instance\s+moved \d+\.\d\d% \(ideal 25\.00%\), max/min 1\.\d{3}$`))
	g.Expect(out).To(MatchRegexp(`(?m)^seconds\s+\d+\.\d\d$`))
}
