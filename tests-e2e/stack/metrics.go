package stack

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape reads and parses the Prometheus text exposition at http://addr/metrics.
func Scrape(ctx context.Context, addr string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s/metrics: %s: %s", addr, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// ScrapeAll scrapes every binary of the stack, by binary name.
func (s *Stack) ScrapeAll(ctx context.Context) (map[string]map[string]*dto.MetricFamily, error) {
	out := map[string]map[string]*dto.MetricFamily{}
	for name, addr := range s.MetricsAddr {
		mfs, err := Scrape(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = mfs
	}
	return out, nil
}
