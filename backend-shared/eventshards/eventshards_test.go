package eventshards_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/gitops-service/gitops-service/backend-shared/eventshards"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true}, &cp, m.Run))
}

// start returns a recorder of a broadcaster of n shards writing to the test's API server.
func start(t *testing.T, n int) record.EventRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	b := eventshards.New(ctx, n)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return b.NewRecorder(cp.Scheme, corev1.EventSource{Component: "eventshards-test"})
}

func configMap(namespace string, i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("cm-%d", i),
		UID: types.UID(fmt.Sprint("uid-", i))}}
}

// A burst of transitions, one Event each on as many objects, faster than the API server
// takes them: one broadcaster (client-go's own) drops what exceeds its queues, the shards
// hold and write them all.
func TestABurstOfEventsIsRecordedWhole(t *testing.T) {
	const burst = 5000
	for _, tc := range []struct {
		shards  int
		wantAll bool
	}{
		{shards: 1, wantAll: false},
		{shards: eventshards.DefaultShards, wantAll: true},
	} {
		t.Run(fmt.Sprintf("%d shards", tc.shards), func(t *testing.T) {
			ns := cp.NewNamespace(t, "eventshards-")
			rec := start(t, tc.shards)
			for i := range burst {
				rec.Event(configMap(ns, i), corev1.EventTypeNormal, "Deployed", "Revision abc is deployed")
			}
			got := len(testenv.SettledEvents(t, cp.Client, ns, burst))
			t.Logf("%d shards recorded %d of %d Events", tc.shards, got, burst)
			if all := got == burst; all != tc.wantAll {
				t.Errorf("%d shards recorded %d of %d Events; want all: %v", tc.shards, got, burst, tc.wantAll)
			}
		})
	}
}

// An object's Events pass through one shard, in order, so client-go's correlator still
// counts a repeated Event on the Event it already wrote instead of writing another.
func TestAnObjectsEventsStayInOneShard(t *testing.T) {
	ns := cp.NewNamespace(t, "eventshards-")
	rec := start(t, eventshards.DefaultShards)
	const objects = 20
	for i := range objects {
		for range 3 {
			rec.Event(configMap(ns, i), corev1.EventTypeWarning, "SyncFailed", "the repository is unreachable")
		}
	}
	got := testenv.SettledEvents(t, cp.Client, ns, objects)
	if len(got) != objects {
		t.Fatalf("%d Events for %d objects; want one each", len(got), objects)
	}
	for _, e := range got {
		if e.Count != 3 {
			t.Errorf("Event of %s counts %d; want 3", e.InvolvedObject.Name, e.Count)
		}
	}
}

func TestShard(t *testing.T) {
	a, b := configMap("ns", 1), configMap("ns", 2)
	ref := &corev1.ObjectReference{Kind: "ConfigMap", Namespace: "ns", Name: a.Name}
	for _, tc := range []struct {
		name   string
		object runtime.Object
		want   int
	}{
		{"an object", a, eventshards.Shard(a, 8)},
		{"its copy", a.DeepCopy(), eventshards.Shard(a, 8)},
		{"a reference to it", ref, eventshards.Shard(a, 8)},
		{"nothing to name", &corev1.EventList{}, 0},
	} {
		if got := eventshards.Shard(tc.object, 8); got != tc.want || got < 0 || got >= 8 {
			t.Errorf("%s: shard %d; want %d", tc.name, got, tc.want)
		}
	}
	spread := map[int]bool{}
	for i := range 100 {
		spread[eventshards.Shard(configMap("ns", i), 8)] = true
	}
	if len(spread) != 8 {
		t.Errorf("100 objects fell in %d of 8 shards", len(spread))
	}
	if eventshards.Shard(a, 1) != 0 || eventshards.Shard(b, 1) != 0 {
		t.Error("one shard is not shard 0")
	}
}
