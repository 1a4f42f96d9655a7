package main

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// resumingWatch delivers the events of one kind from a resource version on, and when the
// API server ends the watch (as it does with a watcher that falls behind) starts it again
// from the last version it delivered, so that nothing is sent twice. Starting again without
// a version would make the API server send every existing object once more: at N = 10,000
// that is more work for it and for the benchmark than the phase being measured, and a
// benchmark slowed by it falls behind again. Only when the version is too old (410 Gone)
// does it start from the current state, with an Added event per object.
type resumingWatch struct {
	events   chan watch.Event
	restarts atomic.Int64
}

// watchFrom watches list's kind with opts from resourceVersion ("" for the current state)
// until ctx ends.
func watchFrom(ctx context.Context, c client.WithWatch, list client.ObjectList, resourceVersion string, opts ...client.ListOption) *resumingWatch {
	w := &resumingWatch{events: make(chan watch.Event, 1024)}
	go func() {
		defer close(w.events)
		for ctx.Err() == nil {
			o := (&client.ListOptions{}).ApplyOptions(opts)
			o.Raw = &metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true}
			wi, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), o)
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					resourceVersion = ""
				}
				if ctx.Err() == nil {
					progress("watching %T again: %v", list, err)
				}
				sleep(ctx)
				continue
			}
			var failed bool
			resourceVersion, failed = w.deliver(ctx, wi, resourceVersion)
			wi.Stop()
			w.restarts.Add(1)
			if failed {
				sleep(ctx)
			}
		}
	}()
	return w
}

// deliver passes wi's events on and returns the resource version to start again from, and
// whether the watch ended with an error (then the caller waits before starting again).
func (w *resumingWatch) deliver(ctx context.Context, wi watch.Interface, resourceVersion string) (string, bool) {
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			if status, ok := apierrors.FromObject(ev.Object).(apierrors.APIStatus); ok && status.Status().Code == http.StatusGone {
				return "", false
			}
			return resourceVersion, true
		}
		if o, err := meta.Accessor(ev.Object); err == nil && o.GetResourceVersion() != "" {
			resourceVersion = o.GetResourceVersion()
		}
		if ev.Type == watch.Bookmark {
			continue
		}
		select {
		case w.events <- ev:
		case <-ctx.Done():
			return resourceVersion, false
		}
	}
	return resourceVersion, false
}

// currentVersion is the resource version of list's kind now: a watch from it sees only
// what changes after.
func currentVersion(ctx context.Context, c client.Client, list client.ObjectList, opts ...client.ListOption) (string, error) {
	if err := c.List(ctx, list, append(opts, client.Limit(1))...); err != nil {
		return "", err
	}
	return list.GetResourceVersion(), nil
}

// sleep waits a second, or until ctx ends.
func sleep(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
}
