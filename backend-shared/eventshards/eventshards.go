// Package eventshards records Events through several of client-go's broadcasters at once,
// each object always through the same one.
//
// One broadcaster writes its Events one at a time and holds about a thousand waiting; what
// comes beyond that is dropped. On an API server that takes a few milliseconds a write, a
// burst of transitions (a new revision reaching hundreds of deployments at once) outruns
// it, and the Events users read in `kubectl describe` go missing. Shards write in parallel
// and hold that many Events each. An object's Events
// stay in one shard, so they keep their order, and client-go's correlator (which counts
// repeats of an Event and limits the Events of one object) sees all of them.
package eventshards

import (
	"context"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// DefaultShards is how many Events the service's binaries write at once.
const DefaultShards = 8

// Broadcaster is a record.EventBroadcaster made of shards. It stops when the context it
// was made with ends, or on Shutdown.
type Broadcaster struct {
	shards []record.EventBroadcaster
}

var _ record.EventBroadcaster = (*Broadcaster)(nil)

// Use has the manager made with o record its Events through DefaultShards shards, which
// stop when ctx ends: a context that outlives the manager, so that the last Events of its
// stopping controllers still go out. controller-runtime then leaves the events.k8s.io
// broadcaster it makes beside them, which the service does not use, idle until the
// process ends.
func Use(ctx context.Context, o *ctrl.Options) {
	// Deprecated for the goroutines a broadcaster leaves behind a manager; these stop with ctx.
	o.EventBroadcaster = New(ctx, DefaultShards) //nolint:staticcheck
}

// New returns a broadcaster of n shards (at least one) that stop when ctx ends.
func New(ctx context.Context, n int) *Broadcaster {
	b := &Broadcaster{shards: make([]record.EventBroadcaster, max(n, 1))}
	for i := range b.shards {
		b.shards[i] = record.NewBroadcaster(record.WithContext(ctx))
	}
	return b
}

// StartRecordingToSink writes every shard's Events to sink.
func (b *Broadcaster) StartRecordingToSink(sink record.EventSink) watch.Interface {
	return b.each(func(s record.EventBroadcaster) watch.Interface { return s.StartRecordingToSink(sink) })
}

// StartEventWatcher passes every shard's Events to handle, from one goroutine per shard.
func (b *Broadcaster) StartEventWatcher(handle func(*corev1.Event)) watch.Interface {
	return b.each(func(s record.EventBroadcaster) watch.Interface { return s.StartEventWatcher(handle) })
}

// StartLogging logs every shard's Events with logf.
func (b *Broadcaster) StartLogging(logf func(format string, args ...any)) watch.Interface {
	return b.each(func(s record.EventBroadcaster) watch.Interface { return s.StartLogging(logf) })
}

// StartStructuredLogging logs every shard's Events at verbosity.
func (b *Broadcaster) StartStructuredLogging(verbosity klog.Level) watch.Interface {
	return b.each(func(s record.EventBroadcaster) watch.Interface { return s.StartStructuredLogging(verbosity) })
}

// Shutdown stops every shard; Events still waiting are not written.
func (b *Broadcaster) Shutdown() {
	for _, s := range b.shards {
		s.Shutdown()
	}
}

// NewRecorder returns a recorder that passes each Event to its object's shard.
func (b *Broadcaster) NewRecorder(scheme *runtime.Scheme, source corev1.EventSource) record.EventRecorderLogger {
	r := recorder{shards: make([]record.EventRecorderLogger, len(b.shards))}
	for i, s := range b.shards {
		r.shards[i] = s.NewRecorder(scheme, source)
	}
	return r
}

func (b *Broadcaster) each(start func(record.EventBroadcaster) watch.Interface) watch.Interface {
	w := make(watches, len(b.shards))
	for i, s := range b.shards {
		w[i] = start(s)
	}
	return w
}

// watches are the shards' watches of one kind, stopped together. Nothing reads the
// results of a broadcaster's own watches (they run their handler), so there are none.
type watches []watch.Interface

// Stop implements watch.Interface.
func (w watches) Stop() {
	for _, one := range w {
		one.Stop()
	}
}

// ResultChan implements watch.Interface: a channel that is closed.
func (w watches) ResultChan() <-chan watch.Event {
	c := make(chan watch.Event)
	close(c)
	return c
}

type recorder struct {
	shards []record.EventRecorderLogger
}

// Event implements record.EventRecorder.
func (r recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.of(object).Event(object, eventtype, reason, message)
}

// Eventf implements record.EventRecorder.
func (r recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.of(object).Eventf(object, eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf implements record.EventRecorder.
func (r recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.of(object).AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}

// WithLogger implements record.EventRecorderLogger.
func (r recorder) WithLogger(logger klog.Logger) record.EventRecorderLogger {
	shards := make([]record.EventRecorderLogger, len(r.shards))
	for i, s := range r.shards {
		shards[i] = s.WithLogger(logger)
	}
	return recorder{shards: shards}
}

func (r recorder) of(object runtime.Object) record.EventRecorderLogger {
	return r.shards[Shard(object, len(r.shards))]
}

// Shard is the shard of n that records object's Events: the same for every Event of an
// object, by its namespace and name (a reference's too); 0 for anything without them.
func Shard(object runtime.Object, n int) int {
	if n <= 1 {
		return 0
	}
	var namespace, name string
	if ref, ok := object.(*corev1.ObjectReference); ok {
		namespace, name = ref.Namespace, ref.Name
	} else if m, err := meta.Accessor(object); err == nil {
		namespace, name = m.GetNamespace(), m.GetName()
	} else {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	_, _ = h.Write([]byte{'/'})
	_, _ = h.Write([]byte(name))
	return int(h.Sum32()) % n
}
