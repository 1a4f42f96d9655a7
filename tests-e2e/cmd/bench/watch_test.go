package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// scriptedWatches answers each Watch with the next script's events, then ends that watch
// as the API server does, and records the resource version each was asked from.
type scriptedWatches struct {
	client.WithWatch
	scripts [][]watch.Event
	asked   chan string
}

func (s *scriptedWatches) Watch(_ context.Context, _ client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	s.asked <- o.Raw.ResourceVersion
	w := watch.NewFakeWithChanSize(8, false)
	if len(s.scripts) > 0 {
		for _, ev := range s.scripts[0] {
			w.Action(ev.Type, ev.Object)
		}
		s.scripts = s.scripts[1:]
		w.Stop()
	}
	return w, nil
}

func TestResumingWatchStartsAgainWhereItEnded(t *testing.T) {
	app := func(name, version string) *argov1alpha1.Application {
		return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version}}
	}
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired}
	s := &scriptedWatches{asked: make(chan string, 8), scripts: [][]watch.Event{
		{{Type: watch.Added, Object: app("a", "5")}, {Type: watch.Bookmark, Object: app("", "7")}},
		{{Type: watch.Modified, Object: app("a", "9")}, {Type: watch.Error, Object: gone}},
		{{Type: watch.Added, Object: app("a", "11")}},
	}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := watchFrom(ctx, s, &argov1alpha1.ApplicationList{}, "3")

	var got []string
	for len(got) < 3 {
		select {
		case ev := <-w.events:
			got = append(got, string(ev.Type)+" "+ev.Object.(client.Object).GetResourceVersion())
		case <-time.After(10 * time.Second):
			t.Fatalf("events so far: %v", got)
		}
	}
	want := []string{"ADDED 5", "MODIFIED 9", "ADDED 11"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events: got %v, want %v (bookmarks and errors are not passed on)", got, want)
		}
	}
	// From the start, after the bookmark, and from the current state after 410 Gone.
	for _, version := range []string{"3", "7", ""} {
		if asked := <-s.asked; asked != version {
			t.Errorf("a watch started from %q, want %q", asked, version)
		}
	}
	if n := w.restarts.Load(); n < 2 {
		t.Errorf("restarts: %d, want at least 2", n)
	}
}
