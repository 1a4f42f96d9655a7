// Command promrules checks a PrometheusRule manifest with Prometheus's own rule parser and,
// given a scrape of the service's binaries, evaluates every alert against it with
// Prometheus's query engine: each metric an alert selects must be one the binaries export,
// and each expression must evaluate. It prints one JSON line per alert. It is a module of
// its own so that Prometheus's dependencies never reach the service's.
//
//	promrules -rules manifests/components/monitoring/prometheusrule.yaml [-metrics scrape.txt]
//
// The scrape is Prometheus's text format, several binaries' concatenated, each sample with
// the labels Prometheus would give it (job, namespace). It is loaded as a series held
// steady for the last 15 minutes, so that rates read 0 and gauges their scraped value.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

func main() {
	rules := flag.String("rules", "", "PrometheusRule manifest (YAML) to check")
	metrics := flag.String("metrics", "", "optional: a scrape in Prometheus's text format to evaluate the alerts against")
	flag.Parse()
	if *rules == "" {
		fmt.Fprintln(os.Stderr, "promrules: -rules is required")
		os.Exit(2)
	}
	reports, err := run(*rules, *metrics)
	if err != nil {
		fmt.Fprintln(os.Stderr, "promrules:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	failed := false
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "promrules:", err)
			os.Exit(1)
		}
		failed = failed || r.Error != "" || len(r.Missing) > 0
	}
	if failed {
		os.Exit(1)
	}
}

// run checks the rules, and evaluates them when a scrape is given.
func run(rulesFile, metricsFile string) ([]Report, error) {
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		return nil, err
	}
	alerts, err := ParseAlerts(data)
	if err != nil {
		return nil, err
	}
	if metricsFile == "" {
		reports := make([]Report, 0, len(alerts))
		for _, a := range alerts {
			reports = append(reports, Report{Group: a.Group, Alert: a.Name, Metrics: a.Metrics})
		}
		return reports, nil
	}
	scrape, err := os.ReadFile(metricsFile)
	if err != nil {
		return nil, err
	}
	return Evaluate(alerts, scrape)
}
