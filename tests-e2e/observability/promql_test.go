package observability

import (
	"os"
	"reflect"
	"testing"
)

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (job, controller) (rate(controller_runtime_reconcile_total{job=~"$job", result!="success"}[$__rate_interval]))`,
			[]string{"controller_runtime_reconcile_total"}},
		{`histogram_quantile(0.95, sum by (le) (rate(foo_bucket{a="b{c}"}[5m])))`, []string{"foo_bucket"}},
		{`sum(rate(a_total[1m] offset 5m)) / ignoring(code) group_left(instance) sum without (x) (b_total)`, []string{"a_total", "b_total"}},
		{`a and on(job) b or c unless d > bool 1e3`, []string{"a", "b", "c", "d"}},
		{`max_over_time(x:recorded:rate5m[1h:5m]) * 2.5e-3 + .5`, []string{"x:recorded:rate5m"}},
		{`label_replace(up{job='a\'b'}, "dst", "$1", "src", "(.*)")`, []string{"up"}},
		{`sum by(le)(rate(h_bucket[${__range}])) and absent(m) or vector(0)`, []string{"h_bucket", "m"}},
		{"count(count by (state) (ops)) # a comment: not_a_metric\n+ other{x=\"#\"}", []string{"ops", "other"}},
		{`sum (foo) by (le)`, []string{"foo"}},
		{`rate(process_cpu_seconds_total{job=~"[[job]]"}[5m]) @ end()`, []string{"process_cpu_seconds_total"}},
	} {
		if got := MetricNames(tc.expr); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("MetricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

func TestDashboardExprsFindsEveryTarget(t *testing.T) {
	exprs, err := DashboardExprs([]byte(`{"panels": [
		{"type": "row", "panels": [{"targets": [{"expr": "a"}]}]},
		{"targets": [{"expr": "b"}, {"expr": ""}, {"refId": "C"}]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(exprs, []string{"a", "b"}) {
		t.Fatalf("got %q", exprs)
	}
}

func TestDashboardQueriesParse(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	exprs, err := DashboardExprs(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, e := range exprs {
		if len(MetricNames(e)) == 0 {
			t.Errorf("no metric in %q", e)
		}
	}
}
