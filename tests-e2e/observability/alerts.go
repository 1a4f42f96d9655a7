package observability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// AlertReport is what hack/promrules prints for each alert.
type AlertReport struct {
	Group   string   `json:"group"`
	Alert   string   `json:"alert"`
	Metrics []string `json:"metrics"`
	Missing []string `json:"missing"`
	Firing  int      `json:"firing"`
	Error   string   `json:"error"`
}

// Exposition renders the binaries' scrapes in Prometheus's text format as Prometheus stores
// them when the ServiceMonitor of manifests/components/monitoring scrapes them: each sample
// with its target's labels (job is the metrics Service's name) and each target's up.
func Exposition(scrapes map[string]map[string]*dto.MetricFamily) ([]byte, error) {
	merged := map[string]*dto.MetricFamily{}
	up := &dto.MetricFamily{Name: proto.String("up"), Type: dto.MetricType_GAUGE.Enum()}
	merged["up"] = up
	binaries := make([]string, 0, len(scrapes))
	for bin := range scrapes {
		binaries = append(binaries, bin)
	}
	slices.Sort(binaries)
	for _, bin := range binaries {
		target := targetLabels(bin)
		up.Metric = append(up.Metric, &dto.Metric{Label: target, Gauge: &dto.Gauge{Value: proto.Float64(1)}})
		for name, mf := range scrapes[bin] {
			into, ok := merged[name]
			if !ok {
				into = &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
				merged[name] = into
			}
			for _, m := range mf.GetMetric() {
				m = proto.Clone(m).(*dto.Metric)
				m.Label = append(m.Label, targetLabels(bin)...)
				into.Metric = append(into.Metric, m)
			}
		}
	}
	names := make([]string, 0, len(merged))
	for n := range merged {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, n := range names {
		if err := enc.Encode(merged[n]); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", n, err)
		}
	}
	return buf.Bytes(), nil
}

// targetLabels are the labels the Prometheus Operator gives a target of the ServiceMonitor.
func targetLabels(binary string) []*dto.LabelPair {
	service := "gitops-service-" + binary + "-metrics"
	pod := "gitops-service-" + binary + "-0"
	pairs := [][2]string{
		{"job", service}, {"namespace", "gitops-service"}, {"service", service}, {"endpoint", "https-metrics"},
		{"pod", pod}, {"container", binary}, {"instance", pod + ":8443"},
	}
	labels := make([]*dto.LabelPair, 0, len(pairs))
	for _, p := range pairs {
		labels = append(labels, &dto.LabelPair{Name: proto.String(p[0]), Value: proto.String(p[1])})
	}
	return labels
}

// EvaluateAlerts runs hack/promrules on the rules file against the scrape and returns its
// report of each alert. It fails only when the tool cannot run: the reports say what it found.
func EvaluateAlerts(ctx context.Context, rulesFile string, scrape []byte) ([]AlertReport, error) {
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "scrape-*.txt")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if _, err := f.Write(scrape); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	// A module of its own, outside the workspace: Prometheus's dependencies stay out of the
	// service's modules.
	cmd := exec.CommandContext(ctx, "go", "run", ".", "-rules", rules, "-metrics", f.Name())
	cmd.Dir = promrulesDir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var reports []AlertReport
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var r AlertReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("reading promrules' report %q: %w", sc.Text(), err)
		}
		reports = append(reports, r)
	}
	if len(reports) == 0 {
		return nil, fmt.Errorf("promrules reported nothing: %w: %s", runErr, stderr.String())
	}
	return reports, nil
}

// promrulesDir is hack/promrules, seen from this package.
const promrulesDir = "../../hack/promrules"
