package manageropts

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// refusing fails its first n requests with a refused connection, then answers.
func refusing(n int, calls *int, other error) *toolscache.ListWatch {
	fail := func() error {
		*calls++
		if *calls <= n {
			return fmt.Errorf("dial tcp 127.0.0.1:6443: %w", syscall.ECONNREFUSED)
		}
		return other
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			if err := fail(); err != nil {
				return nil, err
			}
			return &metav1.List{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			if err := fail(); err != nil {
				return nil, err
			}
			return watch.NewEmptyWatch(), nil
		},
	}
}

func TestPatientListerWatcherWaitsOutARefusedConnection(t *testing.T) {
	var calls int
	lw := newPatientListerWatcher(refusing(2, &calls, nil))
	start := time.Now()
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil || w == nil {
		t.Fatalf("watch after two refused connections: %v, %v", w, err)
	}
	if calls != 3 {
		t.Fatalf("%d requests, want 3", calls)
	}
	if elapsed := time.Since(start); elapsed < 2*APIServerPollInterval {
		t.Fatalf("retried after %s, want a pause of %s between tries", elapsed, APIServerPollInterval)
	}

	calls = 0
	if _, err := newPatientListerWatcher(refusing(1, &calls, nil)).ListWithContext(context.Background(), metav1.ListOptions{}); err != nil || calls != 2 {
		t.Fatalf("list: %v after %d requests, want success after 2", err, calls)
	}
}

func TestPatientListerWatcherPassesOtherErrorsOn(t *testing.T) {
	var calls int
	forbidden := errors.New("forbidden")
	_, err := newPatientListerWatcher(refusing(0, &calls, forbidden)).WatchWithContext(context.Background(), metav1.ListOptions{})
	if !errors.Is(err, forbidden) || calls != 1 {
		t.Fatalf("got %v after %d requests, want the error at once", err, calls)
	}
}

func TestPatientListerWatcherStopsWithItsContext(t *testing.T) {
	var calls int
	ctx, cancel := context.WithTimeout(context.Background(), 3*APIServerPollInterval/2)
	defer cancel()
	_, err := newPatientListerWatcher(refusing(1000, &calls, nil)).WatchWithContext(ctx, metav1.ListOptions{})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want the refused connection once the context ended", err)
	}
	if calls < 2 || calls > 3 {
		t.Fatalf("%d requests in %s, want 2 or 3", calls, 3*APIServerPollInterval/2)
	}
}
