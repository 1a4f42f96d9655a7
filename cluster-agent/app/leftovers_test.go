package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/orphans"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/leftovers"
)

// TestLeftoversAreRemovedAfterTheGracePeriod: no Argo CD runs here, so a deleted
// Application keeps its finalizer until the deletion timeout removes it and what Argo CD
// last listed is left behind. After the grace period the agent deletes, with Argo CD's own
// ServiceAccount token, what the deleted Application alone still tracks in its destination
// namespace, keeps the rest, and says what it removed in an Event.
func TestLeftoversAreRemovedAfterTheGracePeriod(t *testing.T) {
	e := startAgent(t, true, func(o *agent.Options) { o.OrphanGracePeriod = 2 * time.Second })
	g := e.g()
	// Argo CD's application controller, as its install binds it.
	_, _, err := cp.ServiceAccountKubeconfig(e.ctx, e.ns, leftovers.DefaultArgoCDServiceAccount)
	g.Expect(err).NotTo(HaveOccurred())
	target, elsewhere := cp.NewNamespace(t, "team-"), cp.NewNamespace(t, "other-")

	tenant := e.tenant()
	uid, liveUID := uuid.NewString(), uuid.NewString()
	name, liveName := argocd.ApplicationName(types.UID(uid)), argocd.ApplicationName(types.UID(liveUID))
	configMap := func(namespace, cm, trackedBy string, annotations map[string]string) orphans.Resource {
		r := orphans.Resource{Version: "v1", Kind: "ConfigMap", Namespace: namespace, Name: cm}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[orphans.AnnotationTrackingID] = orphans.TrackingID(trackedBy, r)
		g.Expect(e.c.Create(e.ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: cm, Annotations: annotations}})).To(Succeed())
		return r
	}
	leftBehind := configMap(target, "left-behind", name, nil)
	kept := configMap(target, "kept", name, map[string]string{orphans.AnnotationKeep: "true"})
	takenOver := configMap(target, "taken-over", liveName, nil)
	listedByLive := configMap(target, "listed-by-live", name, nil)
	outside := configMap(elsewhere, "outside", name, nil)

	// A live Application of the same tenant lists one of them.
	live := e.application(tenant, liveUID, repoURL, "apps/live", target, true)
	e.completed(e.signal(db.OperationResourceApplication, live.ID, tenant.ID).ID)
	e.argoUpdate(liveName, func(a *argov1alpha1.Application) {
		a.Status.Resources = []argov1alpha1.ResourceStatus{{Version: "v1", Kind: "ConfigMap", Namespace: target, Name: listedByLive.Name}}
	})

	row := e.application(tenant, uid, repoURL, "apps/one", target, true)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		for _, r := range []orphans.Resource{leftBehind, kept, takenOver, listedByLive, outside} {
			a.Status.Resources = append(a.Status.Resources,
				argov1alpha1.ResourceStatus{Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
		}
	})
	g.Expect(e.store.DeleteApplication(e.ctx, e.db, tenant.ID, row.ID)).To(Succeed())
	op := e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	g.Expect(op.HumanReadableState).To(ContainSubstring(argocd.MessageResourcesMayRemain))
	g.Expect(op.HumanReadableState).To(HaveSuffix("those in the destination namespace still left in 2s are removed unless annotated " +
		orphans.AnnotationKeep + "=true"))

	exists := func(r orphans.Resource) bool {
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, &corev1.ConfigMap{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		return !apierrors.IsNotFound(err)
	}
	g.Eventually(func() bool { return exists(leftBehind) }, timeout, interval).Should(BeFalse(), "the left-behind ConfigMap is removed")
	g.Expect(exists(kept)).To(BeTrue(), "the ConfigMap annotated to be kept was removed")
	g.Expect(exists(takenOver)).To(BeTrue(), "the ConfigMap another Application tracks was removed")
	g.Expect(exists(listedByLive)).To(BeTrue(), "the ConfigMap a live Application lists was removed")
	g.Expect(exists(outside)).To(BeTrue(), "a ConfigMap outside the destination namespace was removed")

	g.Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(e.c.List(e.ctx, events, client.InNamespace(target))).To(Succeed())
		var messages []string
		for _, ev := range events.Items {
			if ev.Reason == leftovers.EventReason {
				messages = append(messages, ev.Message)
			}
		}
		g.Expect(messages).To(ConsistOf(And(ContainSubstring(name), ContainSubstring("ConfigMap "+target+"/left-behind"),
			Not(ContainSubstring("kept")))))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func() ([]db.Leftovers, error) {
		return e.store.DueLeftovers(e.ctx, e.db, e.id.InstanceID, time.Now().Add(time.Hour), 10)
	}, timeout, interval).Should(BeEmpty(), "the record is dropped once handled")
}

// TestLeftoversOnAManagedEnvironmentAreRemovedWithItsCredentials: a destination named by a
// cluster Secret is reached with the Secret's credentials; one whose Secret is gone has
// nothing removed, and its record is dropped.
func TestLeftoversOnAManagedEnvironmentAreRemovedWithItsCredentials(t *testing.T) {
	e := startAgent(t, true, func(o *agent.Options) { o.OrphanGracePeriod = time.Second })
	g := e.g()
	target := cp.NewNamespace(t, "env-")
	_, token, err := cp.ServiceAccountKubeconfig(e.ctx, target, "deployer")
	g.Expect(err).NotTo(HaveOccurred())
	envID := uuid.NewString()
	sec, err := argocd.ClusterSecret(e.ns, argocd.Cluster{ManagedEnvironmentID: envID, TenantID: uuid.NewString(),
		APIURL: cp.Config.Host, BearerToken: token, CAData: cp.Config.CAData, Namespaces: []string{target}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.c.Create(e.ctx, sec)).To(Succeed())

	const app = "gitopsdepl-on-env"
	r := orphans.Resource{Version: "v1", Kind: "ConfigMap", Namespace: target, Name: "left-behind"}
	g.Expect(e.c.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: r.Name,
		Annotations: map[string]string{orphans.AnnotationTrackingID: orphans.TrackingID(app, r)}}})).To(Succeed())
	for _, l := range []*db.Leftovers{
		{ApplicationName: app, DestinationName: sec.Name, Resources: []orphans.Resource{r}},
		{ApplicationName: "gitopsdepl-env-gone", DestinationName: argocd.ClusterSecretName(uuid.NewString()), Resources: []orphans.Resource{r}},
	} {
		l.EngineInstanceID, l.DestinationNamespace, l.RemoveAfter = e.id.InstanceID, target, time.Now()
		g.Expect(e.store.RecordLeftovers(e.ctx, e.db, l)).To(Succeed())
	}

	g.Eventually(func() bool {
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: target, Name: r.Name}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "the left-behind ConfigMap on the environment is removed")
	g.Eventually(func() ([]db.Leftovers, error) {
		return e.store.DueLeftovers(e.ctx, e.db, e.id.InstanceID, time.Now().Add(time.Hour), 10)
	}, timeout, interval).Should(BeEmpty(), "both records are dropped")
}

// TestLeftoversInARecreatedNamespaceAreKept: a namespace deleted and created again (or
// restored from a backup) before the grace period ends holds new objects, even where they
// carry the deleted Application's tracking id: the agent removes none of them.
func TestLeftoversInARecreatedNamespaceAreKept(t *testing.T) {
	e := startAgent(t, true, func(o *agent.Options) { o.OrphanGracePeriod = time.Second })
	g := e.g()
	_, _, err := cp.ServiceAccountKubeconfig(e.ctx, e.ns, leftovers.DefaultArgoCDServiceAccount)
	g.Expect(err).NotTo(HaveOccurred())
	target := cp.NewNamespace(t, "restored-")
	const app = "gitopsdepl-before-restore"
	r := orphans.Resource{Version: "v1", Kind: "ConfigMap", Namespace: target, Name: "settings"}
	tracked := map[string]string{orphans.AnnotationTrackingID: orphans.TrackingID(app, r)}
	g.Expect(e.c.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: r.Name, Annotations: tracked}})).To(Succeed())
	g.Expect(e.store.RecordLeftovers(e.ctx, e.db, &db.Leftovers{EngineInstanceID: e.id.InstanceID, ApplicationName: app,
		DestinationServer: argocd.InClusterServer, DestinationNamespace: target, Resources: []orphans.Resource{r},
		RemoveAfter: time.Now().Add(time.Hour)})).To(Succeed())

	// The namespace's objects go with it (no namespace controller runs here: the object is
	// deleted as the namespace controller would), and come back restored.
	g.Expect(e.c.Delete(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: r.Name}})).To(Succeed())
	time.Sleep(time.Second) // creation times are whole seconds
	g.Expect(e.c.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: r.Name, Annotations: tracked}})).To(Succeed())
	_, err = e.db.NewUpdate().Table("leftover_resources").Set("remove_after = now()").Where("application_name = ?", app).Exec(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() ([]db.Leftovers, error) {
		return e.store.DueLeftovers(e.ctx, e.db, e.id.InstanceID, time.Now().Add(time.Hour), 10)
	}, timeout, interval).Should(BeEmpty(), "the record is handled")
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: target, Name: r.Name}, &corev1.ConfigMap{})).To(Succeed(),
		"the restored ConfigMap is still there")
}
