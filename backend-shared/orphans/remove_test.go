package orphans

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutServiceCRDs: true, WithoutArgoCDCRDs: true}, &cp, m.Run))
}

func TestRemoveDeletesOnlyWhatTheDeletedApplicationStillTracks(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	ns := cp.NewNamespace(t, "tenant-")
	other := cp.NewNamespace(t, "other-")
	const app = "gitopsdepl-deleted"
	configMap := func(namespace, name string, annotations map[string]string) Resource {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations}}
		g.Expect(cp.Client.Create(ctx, cm)).To(Succeed())
		return Resource{Version: "v1", Kind: "ConfigMap", Namespace: namespace, Name: name}
	}
	tracked := func(namespace, name string) map[string]string {
		return map[string]string{AnnotationTrackingID: TrackingID(app, Resource{Kind: "ConfigMap", Namespace: namespace, Name: name})}
	}
	leftBehind := configMap(ns, "left-behind", tracked(ns, "left-behind"))
	keep := tracked(ns, "opted-out")
	keep[AnnotationKeep] = "true"
	optedOut := configMap(ns, "opted-out", keep)
	takenOver := configMap(ns, "taken-over", map[string]string{
		AnnotationTrackingID: TrackingID("gitopsdepl-live", Resource{Kind: "ConfigMap", Namespace: ns, Name: "taken-over"})})
	elsewhere := configMap(other, "elsewhere", tracked(other, "elsewhere"))
	listedByLive := configMap(ns, "listed-by-live", tracked(ns, "listed-by-live"))
	missing := Resource{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "missing"}

	removed, err := Remove(ctx, cp.Client, app, ns, time.Now().Add(time.Minute), []Resource{leftBehind, optedOut, takenOver, elsewhere, listedByLive, missing},
		func(r Resource) bool { return r == listedByLive })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(ConsistOf(leftBehind))

	exists := func(r Resource) bool {
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, &corev1.ConfigMap{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		return !apierrors.IsNotFound(err)
	}
	g.Expect(exists(leftBehind)).To(BeFalse(), "the left-behind ConfigMap remains")
	g.Expect(exists(optedOut)).To(BeTrue(), "the opted-out ConfigMap was deleted")
	g.Expect(exists(takenOver)).To(BeTrue(), "the ConfigMap another Application tracks was deleted")
	g.Expect(exists(elsewhere)).To(BeTrue(), "a ConfigMap outside the destination was deleted")
	g.Expect(exists(listedByLive)).To(BeTrue(), "a ConfigMap a live Application lists was deleted")
}
