package outcome

import (
	"context"
	"errors"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/statuspatch"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutArgoCDCRDs: true}, &cp, m.Run))
}

func TestEndWritesOnceAndOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	rec := record.NewFakeRecorder(10)
	ending := Ending{Client: cp.Client, Recorder: rec}
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: cp.NewNamespace(t, "outcome-")},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://example.com", ClusterCredentialsSecret: "s"},
	}
	if err := cp.Client.Create(ctx, env); err != nil {
		t.Fatal(err)
	}
	end := func(p Progress, err error) (*v1.GitOpsDeploymentManagedEnvironment, error) {
		obj := &v1.GitOpsDeploymentManagedEnvironment{}
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(env), obj); err != nil {
			t.Fatal(err)
		}
		start := obj.DeepCopy()
		_, rerr := ending.End(ctx, obj, start, Status{
			Conditions: MetaConditions{List: &obj.Status.Conditions, Generation: obj.Generation}, ObservedGeneration: &obj.Status.ObservedGeneration,
		}, p, err)
		stored := &v1.GitOpsDeploymentManagedEnvironment{}
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(env), stored); err != nil {
			t.Fatal(err)
		}
		return stored, rerr
	}

	// Pending work: Ready False, Reconciling, the generation not observed yet.
	got, _ := end(Working("Connecting", "connecting", true), nil)
	if got.Status.ObservedGeneration != 0 || len(got.Status.Conditions) != 2 {
		t.Fatalf("pending: observedGeneration %d, conditions %+v", got.Status.ObservedGeneration, got.Status.Conditions)
	}
	// Done: the generation is observed, Reconciling goes, one Event for Ready.
	got, _ = end(Done("Connected", "connected"), nil)
	if got.Status.ObservedGeneration != got.Generation || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Status != "True" {
		t.Fatalf("done: observedGeneration %d, conditions %+v", got.Status.ObservedGeneration, got.Status.Conditions)
	}
	if e := <-rec.Events; e != "Normal Connected connected" {
		t.Errorf("event %q", e)
	}
	// The same again writes nothing and records nothing.
	again, _ := end(Done("Connected", "connected"), nil)
	if again.ResourceVersion != got.ResourceVersion {
		t.Errorf("an unchanged status was written again (resourceVersion %s → %s)", got.ResourceVersion, again.ResourceVersion)
	}
	if len(rec.Events) != 0 {
		t.Errorf("an unchanged status recorded %q", <-rec.Events)
	}
	// An internal error goes back to the workqueue, with a generic message.
	boom := errors.New("database password rejected")
	got, err := end(Done("Connected", ""), boom)
	if !errors.Is(err, boom) || got.Status.Conditions[0].Message != InternalMessage {
		t.Fatalf("internal error: %v, conditions %+v", err, got.Status.Conditions)
	}

	// A stale copy writes nothing and asks for a quick retry.
	stale := &v1.GitOpsDeploymentManagedEnvironment{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(env), stale); err != nil {
		t.Fatal(err)
	}
	start := stale.DeepCopy()
	fresh := stale.DeepCopy()
	fresh.Labels = map[string]string{"changed": "elsewhere"}
	if err := cp.Client.Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	res, err := ending.End(ctx, stale, start, Status{Conditions: MetaConditions{List: &stale.Status.Conditions}, ObservedGeneration: &stale.Status.ObservedGeneration},
		Failed("Broken", "broken"), nil)
	if err != nil || res.RequeueAfter != statuspatch.StaleRetry {
		t.Errorf("stale: %+v, %v", res, err)
	}
}
