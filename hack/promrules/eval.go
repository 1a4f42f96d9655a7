package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"
)

// history is how long the scrape is held steady before the evaluation: longer than any
// range an alert takes, so that every range selector sees samples.
const (
	history = 15 * time.Minute
	step    = 30 * time.Second
)

// Evaluate loads the scrape as series held steady over history and evaluates each alert at
// its end.
func Evaluate(alerts []Alert, scrape []byte) ([]Report, error) {
	dir, err := os.MkdirTemp("", "promrules-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	db, err := tsdb.Open(dir, slog.New(slog.DiscardHandler), nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }()

	now := time.Now().Truncate(time.Second)
	names, err := load(db, scrape, now)
	if err != nil {
		return nil, err
	}
	engine := promql.NewEngine(promql.EngineOpts{
		Logger: slog.New(slog.DiscardHandler), MaxSamples: 10_000_000, Timeout: time.Minute,
		LookbackDelta: 5 * time.Minute, Parser: promqlParser,
	})
	defer func() { _ = engine.Close() }()

	ctx := context.Background()
	reports := make([]Report, 0, len(alerts))
	for _, a := range alerts {
		r := Report{Group: a.Group, Alert: a.Name, Metrics: a.Metrics}
		for _, m := range a.Metrics {
			if !names[m] {
				r.Missing = append(r.Missing, m)
			}
		}
		r.Firing, err = evaluate(ctx, engine, db, a.Expr, now)
		if err != nil {
			r.Error = err.Error()
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// evaluate runs expr at ts and counts the series it returns.
func evaluate(ctx context.Context, engine *promql.Engine, db *tsdb.DB, expr string, ts time.Time) (int, error) {
	q, err := engine.NewInstantQuery(ctx, db, nil, expr, ts)
	if err != nil {
		return 0, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return 0, res.Err
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return len(v), nil
	case promql.Scalar:
		return 1, nil
	default:
		return 0, fmt.Errorf("an alert expression must return a vector, this one returns %s", res.Value.Type())
	}
}

// load appends every sample of the scrape at each step of the history up to end, and
// returns the metric names it holds.
func load(db *tsdb.DB, scrape []byte, end time.Time) (map[string]bool, error) {
	type sample struct {
		lset  labels.Labels
		value float64
	}
	var samples []sample
	p, err := textparse.New(scrape, "text/plain", labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		return nil, err
	}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parsing the scrape: %w", err)
		}
		if entry != textparse.EntrySeries {
			continue
		}
		_, _, v := p.Series()
		var lset labels.Labels
		p.Labels(&lset)
		samples = append(samples, sample{lset: lset, value: v})
	}
	if len(samples) == 0 {
		return nil, errors.New("the scrape holds no samples")
	}
	names := map[string]bool{}
	for _, s := range samples {
		names[s.lset.Get(model.MetricNameLabel)] = true
	}
	app := db.Appender(context.Background())
	for t := end.Add(-history); !t.After(end); t = t.Add(step) {
		for _, s := range samples {
			if _, err := app.Append(0, s.lset, t.UnixMilli(), s.value); err != nil {
				_ = app.Rollback()
				return nil, fmt.Errorf("loading %s: %w", s.lset, err)
			}
		}
	}
	return names, app.Commit()
}
