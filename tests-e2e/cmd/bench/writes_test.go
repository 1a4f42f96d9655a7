package main

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func TestWritesCountOnlyWriteVerbsByResource(t *testing.T) {
	metric := func(verb, resource, subresource string, v float64) *dto.Metric {
		return &dto.Metric{
			Label: []*dto.LabelPair{
				{Name: proto.String("verb"), Value: proto.String(verb)},
				{Name: proto.String("resource"), Value: proto.String(resource)},
				{Name: proto.String("subresource"), Value: proto.String(subresource)},
			},
			Counter: &dto.Counter{Value: proto.Float64(v)},
		}
	}
	before := writesOf(&dto.MetricFamily{Metric: []*dto.Metric{
		metric("POST", "gitopsdeployments", "", 10), metric("PATCH", "gitopsdeployments", "status", 4),
	}})
	after := writesOf(&dto.MetricFamily{Metric: []*dto.Metric{
		metric("POST", "gitopsdeployments", "", 30), metric("PATCH", "gitopsdeployments", "status", 44),
		metric("APPLY", "applications", "", 20), metric("GET", "applications", "", 500), metric("LIST", "secrets", "", 9),
	}})
	got := writesPerDeployment(before, after, 20)
	want := map[string]float64{"gitopsdeployments POST": 1, "gitopsdeployments/status PATCH": 2, "applications APPLY": 1}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	if s := summarizeWrites(got); s != "4.00 (gitopsdeployments/status PATCH 2.00, applications APPLY 1.00, gitopsdeployments POST 1.00)" {
		t.Errorf("summary %q", s)
	}
}

func TestCPUPerDeploymentListsEachProgramAndTheTotals(t *testing.T) {
	got := cpuPerDeployment(map[string]float64{"kube-apiserver": 171, "postgres": 40, "etcd": 0},
		map[string]float64{"kube-apiserver": 67, "etcd": 0.001}, 10000)
	if want := "kube-apiserver 17.1 / 6.7, postgres 4.0 / 0.0, total 21.1 / 6.7 ms"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
