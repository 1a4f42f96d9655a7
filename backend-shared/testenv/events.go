package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Recorded takes what rec recorded so far, each Event as "<type> <reason> <message>".
func Recorded(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// SettledEvents lists the Events of namespace as soon as there are want of them, or once
// their number has not grown for a second: a recorder writes in the background, and one
// that drops Events never reaches want.
func SettledEvents(t *testing.T, c client.Client, namespace string, want int) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	last, still := -1, 0
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if err := c.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) >= want {
			return list.Items
		}
		if len(list.Items) == last {
			if still++; still == 4 {
				return list.Items
			}
		} else {
			last, still = len(list.Items), 0
		}
	}
	t.Fatalf("Events of %s still growing after 2 minutes (%d)", namespace, len(list.Items))
	return nil
}
