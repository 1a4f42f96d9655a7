package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/rest"
)

// CPUProfile is where a program's CPU went while it was profiled during the pipeline
// phase: by the work a CPU sample's stack belongs to (each sample to one), by costs that
// cut across that work (a sample to any number), and the functions with the most CPU of
// their own.
type CPUProfile struct {
	Seconds float64        `json:"seconds"`
	CPU     float64        `json:"cpuSeconds"`
	Areas   []ProfileShare `json:"areas"`
	Costs   []ProfileShare `json:"costs"`
	Top     []ProfileShare `json:"topFunctions"`
	// File is the raw profile (go tool pprof <file>).
	File string `json:"file,omitempty"`
}

// ProfileShare is a name and its share of the profile's CPU.
type ProfileShare struct {
	Name  string  `json:"name"`
	Share float64 `json:"share"`
}

// profileArea is a part of a program's work, named by |-separated substrings of the
// functions on its stacks.
type profileArea struct{ name, match string }

// profileKinds are the kinds of a program's work, in the order a sample is assigned to the
// first whose functions are on its stack, and the costs that cut across them.
type profileKinds struct{ areas, costs []profileArea }

var apiServerKinds = profileKinds{areas: []profileArea{
	{"PATCH and server-side apply requests", "handlers.(*patcher).patchResource"},
	{"POST requests", "createHandler"},
	// Before GET and LIST: a watch is served under the LIST handler.
	{"watches: sending events to watchers", "WatchServer|handleWatch|cacheWatcher|dispatchEvent"},
	{"GET and LIST requests", "ListResource|GetResource|getResourceHandler"},
	{"DELETE requests", "DeleteResource|DeleteCollection"},
	{"watch cache: decoding etcd's events", "etcd3.(*watchChan)"},
	garbageCollection,
}, costs: []profileArea{
	jsonCost,
	{"CRD schema coercion and pruning", "unstructuredSchemaCoercer|structural/pruning"},
	{"managed fields", "managedfields"},
	{"etcd transactions", "etcd/client/v3.(*txn)|etcd/client/v3.(*kv)"},
	{"authentication and authorization checks", "authenticator|authorizer|Authorize("},
	allocationCost,
}}

// serviceKinds are the kinds of work of the service's binaries.
var serviceKinds = profileKinds{areas: []profileArea{
	{"reconciles", ").reconcileHandler"},
	{"informers: decoding watch events", "(*StreamWatcher).receive|(*Reflector)"},
	{"informers: handing events to handlers", "processorListener|(*sharedIndexInformer).HandleDeltas|(*DeltaFIFO)"},
	{"PostgreSQL notifications", "WaitForNotification"},
	{"recording Events", "k8s.io/client-go/tools/record"},
	{"Go scheduler: parking and waking goroutines", "runtime.schedule|runtime.findRunnable"},
	garbageCollection,
}, costs: []profileArea{
	jsonCost,
	{"PostgreSQL client", "github.com/jackc/pgx"},
	{"Kubernetes client requests", "k8s.io/client-go/rest.(*Request)"},
	{"HTTP/2 and TLS", "golang.org/x/net/http2|net/http.(*http2|crypto/tls"},
	{"logging", "go.uber.org/zap|go-logr"},
	{"deep copies", "DeepCopy"},
	allocationCost,
}}

var (
	garbageCollection = profileArea{"garbage collection", "runtime.gcBgMarkWorker"}
	jsonCost          = profileArea{"JSON encoding and decoding", "encoding/json|json-iterator|sigs.k8s.io/json"}
	allocationCost    = profileArea{"memory allocation", "runtime.mallocgc"}
)

// profileAPIServer takes a CPU profile of the kube-apiserver for d, saves it to file and
// summarises it.
func profileAPIServer(ctx context.Context, cfg *rest.Config, d time.Duration, file string) (*CPUProfile, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	return takeProfile(ctx, &http.Client{Transport: transport}, strings.TrimSuffix(cfg.Host, "/"), d, file, apiServerKinds)
}

// profileBinary takes a CPU profile of one of the service's binaries, served on its
// --pprof-address, for d, saves it to file and summarises it.
func profileBinary(ctx context.Context, pprofAddr string, d time.Duration, file string) (*CPUProfile, error) {
	return takeProfile(ctx, http.DefaultClient, "http://"+pprofAddr, d, file, serviceKinds)
}

// takeProfile takes a CPU profile for d from the net/http/pprof handlers under base, saves
// it to file and summarises it by kinds.
func takeProfile(ctx context.Context, client *http.Client, base string, d time.Duration, file string, kinds profileKinds) (*CPUProfile, error) {
	seconds := max(1, int(d.Seconds()))
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("profile from %s: %s: %s", base, resp.Status, bytes.TrimSpace(data))
	}
	if file != "" {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return nil, err
		}
	}
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out := summarizeProfile(p, kinds, 10)
	out.Seconds, out.File = float64(seconds), file
	return out, nil
}

// summarizeProfile sums a CPU profile's samples by kind of work (the first area with a
// frame on the stack, else "other"), by cost (any frame), and by leaf function.
func summarizeProfile(p *profile.Profile, kinds profileKinds, top int) *CPUProfile {
	value := len(p.SampleType) - 1 // cpu nanoseconds
	var total float64
	areas := make([]float64, len(kinds.areas)+1)
	costs := make([]float64, len(kinds.costs))
	flat := map[string]float64{}
	for _, s := range p.Sample {
		v := float64(s.Value[value])
		total += v
		frames := sampleFrames(s)
		if len(frames) > 0 {
			flat[frames[0]] += v
		}
		area := len(kinds.areas)
		for i, a := range kinds.areas {
			if anyFrameMatches(frames, a.match) {
				area = i
				break
			}
		}
		areas[area] += v
		for i, c := range kinds.costs {
			if anyFrameMatches(frames, c.match) {
				costs[i] += v
			}
		}
	}
	out := &CPUProfile{CPU: total / 1e9}
	if total == 0 {
		return out
	}
	for i, v := range areas {
		name := "other"
		if i < len(kinds.areas) {
			name = kinds.areas[i].name
		}
		out.Areas = append(out.Areas, ProfileShare{Name: name, Share: v / total})
	}
	for i, c := range kinds.costs {
		out.Costs = append(out.Costs, ProfileShare{Name: c.name, Share: costs[i] / total})
	}
	for name, v := range flat {
		out.Top = append(out.Top, ProfileShare{Name: name, Share: v / total})
	}
	for _, shares := range [][]ProfileShare{out.Areas, out.Costs, out.Top} {
		sort.SliceStable(shares, func(i, j int) bool {
			return shares[i].Share > shares[j].Share || shares[i].Share == shares[j].Share && shares[i].Name < shares[j].Name
		})
	}
	if len(out.Top) > top {
		out.Top = out.Top[:top]
	}
	return out
}

// sampleFrames are the function names of a sample's stack, leaf first.
func sampleFrames(s *profile.Sample) []string {
	var frames []string
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function != nil {
				frames = append(frames, line.Function.Name)
			}
		}
	}
	return frames
}

// anyFrameMatches reports whether a frame contains one of the |-separated substrings.
func anyFrameMatches(frames []string, match string) bool {
	for _, frame := range frames {
		for _, m := range strings.Split(match, "|") {
			if strings.Contains(frame, m) {
				return true
			}
		}
	}
	return false
}

// summarizeShares is "name 12%, ..." for the shares of at least 1%.
func summarizeShares(shares []ProfileShare) string {
	var parts []string
	for _, s := range shares {
		if s.Share >= 0.01 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", s.Name, 100*s.Share))
		}
	}
	return strings.Join(parts, ", ")
}
