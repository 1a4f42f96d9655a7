package metrics

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestGaugesCountRowsByState(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	tenant, err := store.GetOrCreateTenant(ctx, bdb, "ns-uid", "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	cluster, err := store.GetOrCreateEngineCluster(ctx, bdb, "default", "")
	g.Expect(err).NotTo(HaveOccurred())
	engine, err := store.GetOrCreateEngineInstance(ctx, bdb, &db.EngineInstance{EngineClusterID: cluster.ID, NamespaceName: "argocd", NamespaceUID: "argocd-uid"})
	g.Expect(err).NotTo(HaveOccurred())
	for _, uid := range []string{"6f1c2b9e-0000-4000-8000-000000000001", "6f1c2b9e-0000-4000-8000-000000000002"} {
		_, err := store.UpsertApplication(ctx, bdb, &db.Application{ID: uid, TenantID: tenant.ID, Name: argocd.ApplicationName(types.UID(uid)),
			EngineInstanceID: engine.ID, Spec: argocd.ApplicationSpec(argocd.ApplicationInput{RepoURL: "https://example.com/r", Path: "p"})})
		g.Expect(err).NotTo(HaveOccurred())
	}
	for _, state := range []db.OperationState{db.OperationWaiting, db.OperationWaiting, db.OperationCompleted} {
		g.Expect(store.CreateOperation(ctx, bdb, &db.Operation{EngineInstanceID: engine.ID, ResourceType: db.OperationResourceApplication,
			ResourceID: "6f1c2b9e-0000-4000-8000-000000000001", State: state, HumanReadableState: "test"})).To(Succeed())
	}

	c := &Collector{DB: bdb, Log: testr.New(t)}
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(`
# HELP gitops_backend_applications Applications (GitOpsDeployments) the service manages.
# TYPE gitops_backend_applications gauge
gitops_backend_applications 2
# HELP gitops_backend_operations Operations by state (Waiting, In_Progress, Completed, Failed).
# TYPE gitops_backend_operations gauge
gitops_backend_operations{state="Completed"} 1
gitops_backend_operations{state="Failed"} 0
gitops_backend_operations{state="In_Progress"} 0
gitops_backend_operations{state="Waiting"} 2
`), "gitops_backend_applications", "gitops_backend_operations")).To(Succeed())
	g.Expect(testutil.CollectAndCount(c, "gitops_backend_oldest_unfinished_operation_age_seconds")).To(Equal(1))
}

func TestTenantsPerEngineInstance(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	cluster, err := store.GetOrCreateEngineCluster(ctx, bdb, "east", "")
	g.Expect(err).NotTo(HaveOccurred())
	busy, err := store.GetOrCreateEngineInstance(ctx, bdb, &db.EngineInstance{EngineClusterID: cluster.ID, NamespaceName: "argocd-1", NamespaceUID: "argocd-1-uid"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = store.GetOrCreateEngineInstance(ctx, bdb, &db.EngineInstance{EngineClusterID: cluster.ID, NamespaceName: "argocd-2", NamespaceUID: "argocd-2-uid"})
	g.Expect(err).NotTo(HaveOccurred())
	for i, placed := range []bool{true, true, false} {
		tenant, err := store.GetOrCreateTenant(ctx, bdb, fmt.Sprintf("ns-uid-%d", i), fmt.Sprintf("team-%d", i))
		g.Expect(err).NotTo(HaveOccurred())
		if placed {
			g.Expect(store.SetTenantEngineInstance(ctx, bdb, tenant.ID, busy.ID)).To(Succeed())
		}
	}

	c := &Collector{DB: bdb, Log: testr.New(t)}
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(`
# HELP gitops_backend_tenants Tenants placed on each engine instance (<engine cluster>/<namespace>; "unplaced" for tenants not placed).
# TYPE gitops_backend_tenants gauge
gitops_backend_tenants{engine_instance="east/argocd-1"} 2
gitops_backend_tenants{engine_instance="east/argocd-2"} 0
gitops_backend_tenants{engine_instance="unplaced"} 1
`), "gitops_backend_tenants")).To(Succeed())
}

func TestDeploymentsBySyncAndHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	tenant, err := store.GetOrCreateTenant(ctx, bdb, "ns-uid", "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	cluster, err := store.GetOrCreateEngineCluster(ctx, bdb, "default", "")
	g.Expect(err).NotTo(HaveOccurred())
	engine, err := store.GetOrCreateEngineInstance(ctx, bdb, &db.EngineInstance{EngineClusterID: cluster.ID, NamespaceName: "argocd", NamespaceUID: "argocd-uid"})
	g.Expect(err).NotTo(HaveOccurred())
	// Two Synced and Healthy, one OutOfSync and Degraded, one OutOfSync and Progressing,
	// one Argo CD has not reported yet (no state row: Unknown, Unknown).
	states := []struct{ sync, health string }{
		{db.SyncStatusSynced, db.HealthHealthy},
		{db.SyncStatusSynced, db.HealthHealthy},
		{db.SyncStatusOutOfSync, db.HealthDegraded},
		{db.SyncStatusOutOfSync, db.HealthProgressing},
		{},
	}
	for i, s := range states {
		uid := fmt.Sprintf("6f1c2b9e-0000-4000-8000-%012d", i+1)
		_, err := store.UpsertApplication(ctx, bdb, &db.Application{ID: uid, TenantID: tenant.ID, Name: argocd.ApplicationName(types.UID(uid)),
			EngineInstanceID: engine.ID, Spec: argocd.ApplicationSpec(argocd.ApplicationInput{RepoURL: "https://example.com/r", Path: "p"})})
		g.Expect(err).NotTo(HaveOccurred())
		if s.sync == "" {
			continue
		}
		_, err = store.RecordApplicationState(ctx, bdb, &db.ApplicationState{ApplicationID: uid, EngineInstanceID: engine.ID, SyncStatus: s.sync, Health: s.health}, notify.ApplicationStateChanged)
		g.Expect(err).NotTo(HaveOccurred())
	}

	c := &Collector{DB: bdb, Log: testr.New(t)}
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(`
# HELP gitops_deployments GitOpsDeployments by the sync and health status Argo CD last reported (Unknown until it reports).
# TYPE gitops_deployments gauge
gitops_deployments{health_status="Degraded",sync_status="OutOfSync"} 1
gitops_deployments{health_status="Healthy",sync_status="OutOfSync"} 0
gitops_deployments{health_status="Missing",sync_status="OutOfSync"} 0
gitops_deployments{health_status="Progressing",sync_status="OutOfSync"} 1
gitops_deployments{health_status="Suspended",sync_status="OutOfSync"} 0
gitops_deployments{health_status="Unknown",sync_status="OutOfSync"} 0
gitops_deployments{health_status="Degraded",sync_status="Synced"} 0
gitops_deployments{health_status="Healthy",sync_status="Synced"} 2
gitops_deployments{health_status="Missing",sync_status="Synced"} 0
gitops_deployments{health_status="Progressing",sync_status="Synced"} 0
gitops_deployments{health_status="Suspended",sync_status="Synced"} 0
gitops_deployments{health_status="Unknown",sync_status="Synced"} 0
gitops_deployments{health_status="Degraded",sync_status="Unknown"} 0
gitops_deployments{health_status="Healthy",sync_status="Unknown"} 0
gitops_deployments{health_status="Missing",sync_status="Unknown"} 0
gitops_deployments{health_status="Progressing",sync_status="Unknown"} 0
gitops_deployments{health_status="Suspended",sync_status="Unknown"} 0
gitops_deployments{health_status="Unknown",sync_status="Unknown"} 1
`), "gitops_deployments")).To(Succeed())
}

// The gauges count the whole database: a replica that is not the leader exports none, so
// that with several replicas each row is counted once.
func TestOnlyTheLeaderExportsTheGauges(t *testing.T) {
	g := NewWithT(t)
	leading := false
	c := &Collector{DB: dbtest.NewDB(t), Log: testr.New(t), Leading: func() bool { return leading }}
	g.Expect(testutil.CollectAndCount(c)).To(BeZero())
	leading = true
	g.Expect(testutil.CollectAndCount(c, "gitops_backend_applications")).To(Equal(1))
	g.Expect(testutil.CollectAndCount(c, "gitops_backend_operations")).To(Equal(4))
}
