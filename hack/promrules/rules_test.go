package main

import (
	"slices"
	"strings"
	"testing"
)

// manifest wraps rule groups (YAML, indented under spec) in a PrometheusRule.
func manifest(groups string) []byte {
	return []byte("apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: x\nspec:\n" + groups)
}

func TestParseAlerts(t *testing.T) {
	tests := []struct {
		name, groups string
		want         []string // alert: metrics
		wantErr      string
	}{
		{
			name: "alerts and their metrics; recording rules are not alerts",
			groups: `  groups:
    - name: g
      rules:
        - record: job:x:rate5m
          expr: rate(x_total[5m])
        - alert: Slow
          expr: histogram_quantile(0.99, sum by (le) (rate(d_seconds_bucket[5m]))) > 1 and on() {__name__="y"} == 1
          for: 10m
          labels: {severity: warning}
          annotations: {summary: "slow {{ $value }}"}
`,
			want: []string{"Slow: d_seconds_bucket,y"},
		},
		{name: "not a PrometheusRule", groups: "", wantErr: "no alerting rules"},
		{name: "an expression that does not parse", groups: "  groups:\n    - name: g\n      rules:\n        - alert: A\n          expr: rate(x[5m]\n", wantErr: "invalid rules"},
		{name: "an unknown field", groups: "  groups:\n    - name: g\n      rules:\n        - alert: A\n          expr: x > 1\n          severity: page\n", wantErr: "invalid rules"},
		{name: "a template that does not parse", groups: "  groups:\n    - name: g\n      rules:\n        - alert: A\n          expr: x > 1\n          annotations: {summary: \"{{ $value \"}\n", wantErr: "invalid rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alerts, err := ParseAlerts(manifest(tt.groups))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseAlerts = %v, %v; want an error with %q", alerts, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range alerts {
				got = append(got, a.Name+": "+strings.Join(a.Metrics, ","))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("alerts %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := ParseAlerts([]byte("kind: ConfigMap\n")); err == nil || !strings.Contains(err.Error(), "want PrometheusRule") {
		t.Fatalf("a ConfigMap was accepted: %v", err)
	}
}

func TestEvaluate(t *testing.T) {
	alerts, err := ParseAlerts(manifest(`  groups:
    - name: g
      rules:
        - alert: QueueDeep
          expr: max by (job) (depth) > 10
        - alert: ErrorsRising
          expr: sum by (job) (rate(errors_total[5m])) > 0
        - alert: HistogramSlow
          expr: histogram_quantile(0.99, sum by (le) (rate(latency_seconds_bucket[5m]))) > 1
        - alert: Unknown
          expr: absent_metric > 0
`))
	if err != nil {
		t.Fatal(err)
	}
	scrape := `# TYPE depth gauge
depth{job="a"} 3
depth{job="b"} 12
# TYPE errors_total counter
errors_total{job="a"} 7
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.5"} 1
latency_seconds_bucket{le="+Inf"} 1
latency_seconds_sum 0.1
latency_seconds_count 1
`
	reports, err := Evaluate(alerts, []byte(scrape))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Report{}
	for _, r := range reports {
		got[r.Alert] = r
	}
	// A gauge reads its scraped value; a counter held steady has no rate.
	if r := got["QueueDeep"]; r.Firing != 1 || r.Error != "" || len(r.Missing) > 0 {
		t.Errorf("QueueDeep: %+v, want one series firing", r)
	}
	for _, name := range []string{"ErrorsRising", "HistogramSlow"} {
		if r := got[name]; r.Firing != 0 || r.Error != "" || len(r.Missing) > 0 {
			t.Errorf("%s: %+v, want it evaluated, not firing", name, r)
		}
	}
	if r := got["Unknown"]; !slices.Equal(r.Missing, []string{"absent_metric"}) {
		t.Errorf("Unknown: %+v, want absent_metric missing", r)
	}
	if _, err := Evaluate(alerts, []byte("# nothing\n")); err == nil {
		t.Errorf("an empty scrape was accepted")
	}
}
