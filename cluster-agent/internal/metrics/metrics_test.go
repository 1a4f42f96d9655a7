package metrics

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// gathered returns the families of the controller-runtime registry the agent serves.
func gathered(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

// series returns the label sets of a family, as "name=value,..." strings.
func series(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out = append(out, strings.Join(labels, ","))
	}
	return out
}

func TestMetricsAreServedByTheManagersRegistry(t *testing.T) {
	g := NewWithT(t)
	families := gathered(t)
	// The sync duration series exist before the first sync, one per final phase.
	g.Expect(families).To(HaveKey("gitops_cluster_agent_sync_duration_seconds"))
	g.Expect(series(families["gitops_cluster_agent_sync_duration_seconds"])).To(ConsistOf("phase=Succeeded", "phase=Failed", "phase=Error"))
	for _, name := range []string{"gitops_cluster_agent_status_write_seconds", "gitops_cluster_agent_application_drift_reverted_total"} {
		g.Expect(families).To(HaveKey(name))
	}
}

func TestInitResourceTypesCreatesEverySeriesAtZero(t *testing.T) {
	g := NewWithT(t)
	InitResourceTypes("TestInitType")
	for _, outcome := range Outcomes {
		g.Expect(testutil.ToFloat64(OperationsProcessed.WithLabelValues("TestInitType", outcome))).To(BeZero(), outcome)
	}
	families := gathered(t)
	var runs []string
	for _, s := range series(families["gitops_cluster_agent_operation_runs_total"]) {
		if strings.Contains(s, "resource_type=TestInitType") {
			runs = append(runs, s)
		}
	}
	// Every outcome, so that rates over them are defined before the first run.
	g.Expect(runs).To(ConsistOf(
		"outcome=completed,resource_type=TestInitType", "outcome=failed,resource_type=TestInitType",
		"outcome=waiting,resource_type=TestInitType", "outcome=error,resource_type=TestInitType"))
	g.Expect(series(families["gitops_cluster_agent_operation_run_seconds"])).To(ContainElement("resource_type=TestInitType"))
}

func TestObserveOperationCountsTheRunAndItsDuration(t *testing.T) {
	g := NewWithT(t)
	ObserveOperation("TestObserveType", OutcomeWaiting, 30*time.Millisecond)
	ObserveOperation("TestObserveType", OutcomeWaiting, 70*time.Millisecond)
	ObserveOperation("TestObserveType", OutcomeCompleted, 2*time.Second)

	g.Expect(testutil.ToFloat64(OperationsProcessed.WithLabelValues("TestObserveType", OutcomeWaiting))).To(Equal(2.0))
	g.Expect(testutil.ToFloat64(OperationsProcessed.WithLabelValues("TestObserveType", OutcomeCompleted))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(OperationsProcessed.WithLabelValues("TestObserveType", OutcomeError))).To(BeZero())

	families := gathered(t)
	var hist *dto.Histogram
	for _, m := range families["gitops_cluster_agent_operation_run_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "resource_type" && l.GetValue() == "TestObserveType" {
				hist = m.GetHistogram()
			}
		}
	}
	g.Expect(hist).NotTo(BeNil())
	g.Expect(hist.GetSampleCount()).To(Equal(uint64(3)))
	g.Expect(hist.GetSampleSum()).To(BeNumerically("~", 2.1, 0.001), "observed in seconds")
}

func TestOutcomesListEveryOutcome(t *testing.T) {
	NewWithT(t).Expect(Outcomes).To(ConsistOf(OutcomeCompleted, OutcomeFailed, OutcomeWaiting, OutcomeError))
}
