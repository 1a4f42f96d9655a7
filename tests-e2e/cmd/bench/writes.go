package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// writeVerbs are the verbs of apiserver_request_total that change something.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// apiWrites reads the write requests the kube-apiserver has served so far, by
// "resource[/subresource] VERB", from its own apiserver_request_total: every client's
// writes (the benchmark's creates, the binaries', the status writer standing in for Argo CD),
// counted where they cost.
func apiWrites(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the kube-apiserver's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return writesOf(mfs["apiserver_request_total"]), nil
}

func writesOf(family *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !writeVerbs[labels["verb"]] {
			continue
		}
		resource := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		out[resource+" "+labels["verb"]] += m.GetCounter().GetValue()
	}
	return out
}

// writesPerDeployment is (after - before) / size, without the kinds of write that did not
// happen.
func writesPerDeployment(before, after map[string]float64, size int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d / float64(size)
		}
	}
	return out
}

// summarizeWrites is "total (largest first: resource VERB n, ...)".
func summarizeWrites(w map[string]float64) string {
	keys := make([]string, 0, len(w))
	total := 0.0
	for k, v := range w {
		keys = append(keys, k)
		total += v
	}
	sort.Slice(keys, func(i, j int) bool { return w[keys[i]] > w[keys[j]] || w[keys[i]] == w[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if w[k] >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, w[k]))
		}
	}
	return fmt.Sprintf("%.2f (%s)", total, strings.Join(parts, ", "))
}
