package manageropts_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// TestABinaryRecordsABurstOfEventsWhole: a binary built on Command records every Event of
// a burst of transitions on as many objects, more than client-go's single broadcaster
// queues (1,000), so a user sees each deployment's transition with kubectl describe.
func TestABinaryRecordsABurstOfEventsWhole(t *testing.T) {
	cp, err := testenv.StartControlPlane(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	t.Setenv("KUBECONFIG", cp.KubeconfigPath)
	ns := cp.NewNamespace(t, "events-")
	const burst = 2500

	recorded := make(chan struct{})
	root := manageropts.Command{
		Name: "backend", Summary: "Test binary.", MetricsAddr: "0", ProbeAddr: "0",
		Setup: func(_ context.Context, mgr ctrl.Manager, _ logr.Logger) error {
			rec := mgr.GetEventRecorderFor("burst-test")
			return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
				for i := range burst {
					obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i),
						UID: types.UID(fmt.Sprint("uid-", i))}}
					rec.Event(obj, corev1.EventTypeNormal, "Deployed", "Revision abc is deployed")
				}
				close(recorded)
				<-ctx.Done()
				return nil
			}))
		},
	}.NewCommand()
	root.SetArgs([]string{"--health-probe-bind-address=0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("binary: %v", err)
		}
	})
	select {
	case <-recorded:
	case err := <-done:
		t.Fatalf("the binary stopped before recording: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the binary did not record its Events within a minute")
	}

	if got := len(testenv.SettledEvents(t, cp.Client, ns, burst)); got != burst {
		t.Fatalf("the binary recorded %d of %d Events", got, burst)
	}
}
