package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
)

// The oldest operation not yet Completed or Failed says how far behind the cluster-agents
// are; finished operations, however old, do not count, and none is 0.
func TestOldestUnfinishedOperationAge(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	cluster, err := store.GetOrCreateEngineCluster(ctx, bdb, "default", "")
	g.Expect(err).NotTo(HaveOccurred())
	engine, err := store.GetOrCreateEngineInstance(ctx, bdb, &db.EngineInstance{EngineClusterID: cluster.ID, NamespaceName: "argocd", NamespaceUID: "argocd-uid"})
	g.Expect(err).NotTo(HaveOccurred())
	c := &Collector{DB: bdb, Log: testr.New(t)}
	age := func() float64 {
		return gaugeValue(g, c, "gitops_backend_oldest_unfinished_operation_age_seconds")
	}
	g.Expect(age()).To(BeZero(), "no operation")

	create := func(state db.OperationState, ageSeconds int) {
		op := &db.Operation{EngineInstanceID: engine.ID, ResourceType: db.OperationResourceApplication,
			ResourceID: "6f1c2b9e-0000-4000-8000-000000000001", State: state, HumanReadableState: "test"}
		g.Expect(store.CreateOperation(ctx, bdb, op)).To(Succeed())
		_, err := bdb.NewRaw("UPDATE operations SET created_at = now() - make_interval(secs => ?) WHERE id = ?", ageSeconds, op.ID).Exec(ctx)
		g.Expect(err).NotTo(HaveOccurred())
	}
	create(db.OperationCompleted, 3600)
	create(db.OperationFailed, 3600)
	g.Expect(age()).To(BeZero(), "finished operations do not count")

	create(db.OperationWaiting, 90)
	create(db.OperationInProgress, 30)
	g.Expect(age()).To(And(BeNumerically(">=", 90), BeNumerically("<", 150)), "the oldest Waiting one")
}

// gaugeValue collects c and returns the value of the gauge called name (exactly one series).
func gaugeValue(g Gomega, c prometheus.Collector, name string) float64 {
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	var values []float64
	for m := range ch {
		if !strings.Contains(m.Desc().String(), `fqName: "`+name+`"`) {
			continue
		}
		var out dto.Metric
		g.Expect(m.Write(&out)).To(Succeed())
		values = append(values, out.GetGauge().GetValue())
	}
	g.Expect(values).To(HaveLen(1), name)
	return values[0]
}

// A scrape whose query fails exports nothing, rather than zeros that would look like an
// idle service.
func TestAFailedQueryExportsNothing(t *testing.T) {
	g := NewWithT(t)
	bdb := dbtest.NewDB(t)
	c := &Collector{DB: bdb, Log: testr.New(t)}
	g.Expect(testutil.CollectAndCount(c, "gitops_backend_applications")).To(Equal(1))
	g.Expect(bdb.Close()).To(Succeed())
	g.Expect(testutil.CollectAndCount(c)).To(BeZero())
}

func TestDescribeListsEveryGauge(t *testing.T) {
	g := NewWithT(t)
	ch := make(chan *prometheus.Desc, 10)
	(&Collector{}).Describe(ch)
	close(ch)
	var names []string
	for d := range ch {
		s := d.String()
		start := strings.Index(s, `fqName: "`) + len(`fqName: "`)
		names = append(names, s[start:start+strings.Index(s[start:], `"`)])
	}
	g.Expect(names).To(ConsistOf("gitops_backend_applications", "gitops_backend_operations",
		"gitops_backend_oldest_unfinished_operation_age_seconds", "gitops_backend_tenants", "gitops_deployments"))
}

// A status written by a backend whose clock is behind the database's is recorded as 0, not
// as a negative latency.
func TestObserveStatusPropagation(t *testing.T) {
	g := NewWithT(t)
	read := func() (uint64, float64) {
		var m dto.Metric
		g.Expect(StatusPropagation.Write(&m)).To(Succeed())
		return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
	}
	count, sum := read()
	ObserveStatusPropagation(time.Now().Add(time.Hour))
	count2, sum2 := read()
	g.Expect(count2).To(Equal(count + 1))
	g.Expect(sum2).To(Equal(sum))

	ObserveStatusPropagation(time.Now().Add(-2 * time.Second))
	count3, sum3 := read()
	g.Expect(count3).To(Equal(count2 + 1))
	g.Expect(sum3 - sum2).To(And(BeNumerically(">=", 2), BeNumerically("<", 60)))
}
