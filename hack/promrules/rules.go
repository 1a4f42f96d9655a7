package main

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// Alert is one alerting rule of a PrometheusRule.
type Alert struct {
	Group, Name, Expr string
	// Metrics are the metric names the expression selects, sorted.
	Metrics []string
}

// Report is what promrules found for one alert.
type Report struct {
	Group   string   `json:"group"`
	Alert   string   `json:"alert"`
	Metrics []string `json:"metrics"`
	// Missing are the selected metrics the scrape does not have.
	Missing []string `json:"missing,omitempty"`
	// Firing counts the series the expression returns on the scrape.
	Firing int    `json:"firing"`
	Error  string `json:"error,omitempty"`
}

// promqlParser parses as Prometheus does by default.
var promqlParser = parser.NewParser(parser.Options{})

// ParseAlerts reads a PrometheusRule manifest, validates its groups with Prometheus's rule
// parser (unknown fields, durations, label and annotation templates, every expression) and
// returns its alerting rules.
func ParseAlerts(manifest []byte) ([]Alert, error) {
	var pr struct {
		Kind string    `yaml:"kind"`
		Spec yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(manifest, &pr); err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	if pr.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("kind %q, want PrometheusRule", pr.Kind)
	}
	spec, err := yaml.Marshal(&pr.Spec)
	if err != nil {
		return nil, err
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promqlParser, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid rules: %w", errors.Join(errs...))
	}
	var alerts []Alert
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			expr, err := promqlParser.ParseExpr(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("alert %s: %w", r.Alert, err)
			}
			alerts = append(alerts, Alert{Group: g.Name, Name: r.Alert, Expr: r.Expr, Metrics: MetricNames(expr)})
		}
	}
	if len(alerts) == 0 {
		return nil, errors.New("no alerting rules")
	}
	return alerts, nil
}

// MetricNames are the metric names an expression's selectors name, sorted, without
// duplicates.
func MetricNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
		return nil
	})
	slices.Sort(names)
	return names
}
