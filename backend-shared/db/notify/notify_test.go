package notify_test

import (
	"context"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

var (
	_ manager.Runnable               = &notify.Listener{}
	_ manager.LeaderElectionRunnable = &notify.Listener{}
)

type received struct{ channel, payload string }

// startListener runs a Listener whose connection is tagged with a unique application_name
// (so a test can find and kill it) until the test ends; it waits until it is listening.
func startListener(t *testing.T, cfg db.Config, onReconnect func(context.Context)) (<-chan received, string, *bun.DB) {
	t.Helper()
	appName := "listener-" + t.Name()
	listenCfg := withApplicationName(t, cfg, appName)

	got := make(chan received, 100)
	l := &notify.Listener{
		Config:      listenCfg,
		Channels:    []string{notify.ApplicationStateChanged, notify.EngineInstancesChanged, notify.OperationChanged},
		Handler:     func(_ context.Context, ch, p string) { got <- received{ch, p} },
		OnReconnect: onReconnect,
		MinBackoff:  10 * time.Millisecond,
		MaxBackoff:  200 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("listener returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("listener did not return after cancellation")
		}
	})

	bdb := dbtest.Open(t, cfg)
	waitListening(t, bdb, appName)
	return got, appName, bdb
}

// withApplicationName tags the connections of cfg with appName, so that a test can find
// (and kill) them in pg_stat_activity.
func withApplicationName(t *testing.T, cfg db.Config, appName string) db.Config {
	t.Helper()
	u, err := url.Parse(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", appName)
	u.RawQuery = q.Encode()
	cfg.URL = u.String()
	return cfg
}

// waitListening waits until the listener's session has run its last LISTEN.
func waitListening(t *testing.T, bdb *bun.DB, appName string) {
	t.Helper()
	NewWithT(t).Eventually(func() (int64, error) {
		return bdb.NewSelect().TableExpr("pg_stat_activity").
			Where("application_name = ? AND query LIKE 'LISTEN %' AND query LIKE ?", appName, "%"+notify.OperationChanged+"%").
			Count(context.Background())
	}, 10*time.Second, 20*time.Millisecond).Should(BeEquivalentTo(1))
}

func TestNotificationDelivered(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	got, _, bdb := startListener(t, dbtest.NewConfig(t), nil)

	g.Expect(notify.Publish(context.Background(), bdb, notify.ApplicationStateChanged, "app-1")).To(Succeed())
	g.Expect(notify.Publish(context.Background(), bdb, notify.OperationChanged, "op-1")).To(Succeed())
	g.Eventually(got, 5*time.Second).Should(Receive(Equal(received{notify.ApplicationStateChanged, "app-1"})))
	g.Eventually(got, 5*time.Second).Should(Receive(Equal(received{notify.OperationChanged, "op-1"})))
	g.Expect(notify.Publish(context.Background(), bdb, "unrelated", "x")).To(Succeed())
	g.Consistently(got, 200*time.Millisecond).ShouldNot(Receive())
}

// Every write to engine_instances notifies, through the table's trigger, whoever wrote it.
func TestEngineInstanceChangesNotify(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	got, _, bdb := startListener(t, dbtest.NewConfig(t), nil)
	store := db.NewStore(nil)
	changed := received{notify.EngineInstancesChanged, ""}

	cluster, err := store.GetOrCreateEngineCluster(ctx, bdb, "default", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(got, 200*time.Millisecond).ShouldNot(Receive(), "engine clusters are not watched")
	ei, err := store.GetOrCreateEngineInstance(ctx, bdb, &db.EngineInstance{EngineClusterID: cluster.ID, NamespaceName: "argocd", NamespaceUID: "uid-1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(got, 5*time.Second).Should(Receive(Equal(changed)), "registered")
	ei.State = db.EngineInstanceDraining
	g.Expect(store.UpdateEngineInstance(ctx, bdb, ei)).To(Succeed())
	g.Eventually(got, 5*time.Second).Should(Receive(Equal(changed)), "drained")
	g.Expect(store.DeregisterEngineInstance(ctx, bdb, ei.ID)).To(Succeed())
	g.Eventually(got, 5*time.Second).Should(Receive(Equal(changed)), "deregistered")
}

func TestNotificationDeliveredOnlyAfterCommit(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	got, _, bdb := startListener(t, dbtest.NewConfig(t), nil)

	tx, err := bdb.BeginTx(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(notify.Publish(ctx, tx, notify.OperationChanged, "op-committed")).To(Succeed())
	g.Consistently(got, 300*time.Millisecond).ShouldNot(Receive(), "not before commit")
	g.Expect(tx.Commit()).To(Succeed())
	g.Eventually(got, 5*time.Second).Should(Receive(Equal(received{notify.OperationChanged, "op-committed"})))

	tx, err = bdb.BeginTx(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(notify.Publish(ctx, tx, notify.OperationChanged, "op-rolled-back")).To(Succeed())
	g.Expect(tx.Rollback()).To(Succeed())
	g.Consistently(got, 300*time.Millisecond).ShouldNot(Receive(), "never after rollback")
}

func TestListenerSurvivesConnectionLoss(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	var reconnects atomic.Int32
	got, appName, bdb := startListener(t, dbtest.NewConfig(t), func(context.Context) { reconnects.Add(1) })

	for round := int32(1); round <= 2; round++ {
		var killed int
		g.Expect(bdb.NewRaw("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ?", appName).
			Scan(ctx, &killed)).To(Succeed())
		g.Expect(killed).To(Equal(1))
		g.Eventually(reconnects.Load, 10*time.Second, 10*time.Millisecond).Should(Equal(round))
		waitListening(t, bdb, appName)

		g.Expect(notify.Publish(ctx, bdb, notify.ApplicationStateChanged, "after-reconnect")).To(Succeed())
		g.Eventually(got, 5*time.Second).Should(Receive(Equal(received{notify.ApplicationStateChanged, "after-reconnect"})))
	}
}

func TestListenerRejectsInsecureConfig(t *testing.T) {
	t.Parallel()
	l := &notify.Listener{
		Config:   db.Config{URL: "postgres://db.example.com/x?sslmode=disable"},
		Channels: []string{notify.OperationChanged},
		Handler:  func(context.Context, string, string) {},
	}
	NewWithT(t).Expect(l.Start(context.Background())).To(MatchError(ContainSubstring("sslmode")))
	NewWithT(t).Expect(l.NeedLeaderElection()).To(BeFalse())
}

func TestListenerIsReadyOnlyWhileListening(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := dbtest.NewConfig(t)
	appName := "ready-" + t.Name()
	listenCfg := withApplicationName(t, cfg, appName)
	// A reconnection that waits long enough to be seen.
	l := &notify.Listener{Config: listenCfg, Channels: []string{notify.OperationChanged},
		Handler: func(context.Context, string, string) {}, MinBackoff: 2 * time.Second, MaxBackoff: 2 * time.Second}
	g.Expect(l.Listening()).To(BeFalse(), "before it starts")
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("listener returned %v", err)
		}
	}()

	bdb := dbtest.Open(t, cfg)
	waitListening(t, bdb, appName)
	g.Eventually(l.Listening, 5*time.Second, 10*time.Millisecond).Should(BeTrue())

	_, err := bdb.NewRaw("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ?", appName).Exec(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(l.Listening, 5*time.Second, 10*time.Millisecond).Should(BeFalse(), "while it reconnects")
	g.Eventually(l.Listening, 10*time.Second, 10*time.Millisecond).Should(BeTrue(), "once it listens again")
}

// The cluster-agent's state writes publish their notification in the same statement: one
// per row written, none when nothing changed.
func TestStateWritesNotifyOncePerWrittenRow(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	got, _, bdb := startListener(t, dbtest.NewConfig(t), nil)
	store := db.NewStore(nil)

	cluster, err := store.GetOrCreateEngineCluster(ctx, bdb, "default", "")
	g.Expect(err).NotTo(HaveOccurred())
	ei, err := store.GetOrCreateEngineInstance(ctx, bdb, &db.EngineInstance{EngineClusterID: cluster.ID, NamespaceName: "argocd", NamespaceUID: "uid-1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(got, 5*time.Second).Should(Receive(), "the instance's registration")
	tenant, err := store.GetOrCreateTenant(ctx, bdb, "ns-uid", "ns")
	g.Expect(err).NotTo(HaveOccurred())
	app := &db.Application{TenantID: tenant.ID, Name: "app", EngineInstanceID: ei.ID}
	_, err = store.UpsertApplication(ctx, bdb, app)
	g.Expect(err).NotTo(HaveOccurred())

	var ids []string
	for range 2 {
		op := &db.Operation{EngineInstanceID: ei.ID, ResourceType: db.OperationResourceApplication, ResourceID: app.ID, GCExpirationSeconds: 3600}
		g.Expect(store.CreateOperation(ctx, bdb, op)).To(Succeed())
		ids = append(ids, op.ID)
	}
	ops, err := store.UpdateOperationStates(ctx, bdb, ei.ID, ids, db.OperationCompleted, "done", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops).To(HaveLen(2))
	for _, op := range ops {
		g.Expect(op.State).To(Equal(db.OperationCompleted))
		g.Expect(op.GCExpiresAt).NotTo(BeZero(), "returned as written")
	}
	// Each notification says what the backend routes by, so that it reads no row.
	change := func(id string, state db.OperationState) db.OperationChange {
		return db.OperationChange{ID: id, State: state, ResourceType: db.OperationResourceApplication, ResourceID: app.ID}
	}
	nextChange := func() db.OperationChange {
		var r received
		g.Eventually(got, 5*time.Second).Should(Receive(&r))
		g.Expect(r.channel).To(Equal(notify.OperationChanged))
		c, ok := db.ParseOperationChange(r.payload)
		g.Expect(ok).To(BeTrue(), r.payload)
		return c
	}
	notified := map[db.OperationChange]int{}
	for range 2 {
		notified[nextChange()]++
	}
	g.Expect(notified).To(Equal(map[db.OperationChange]int{
		change(ids[0], db.OperationCompleted): 1, change(ids[1], db.OperationCompleted): 1}))
	g.Consistently(got, 200*time.Millisecond).ShouldNot(Receive(), "once per row")

	missing := "00000000-0000-0000-0000-000000000000"
	ops, err = store.UpdateOperationStates(ctx, bdb, ei.ID, []string{ids[0], missing}, db.OperationFailed, "no", notify.OperationChanged)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	g.Expect(ops).To(HaveLen(1), "the existing one is updated all the same")
	g.Expect(nextChange()).To(Equal(change(ids[0], db.OperationFailed)))

	st := &db.ApplicationState{ApplicationID: app.ID, EngineInstanceID: ei.ID, Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced}
	changed, err := store.RecordApplicationState(ctx, bdb, st, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(st.UpdatedAt).NotTo(BeZero())
	g.Eventually(got, 5*time.Second).Should(Receive(Equal(received{notify.ApplicationStateChanged, app.ID})))
	changed, err = store.RecordApplicationState(ctx, bdb, st, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse(), "the same state again")
	g.Consistently(got, 300*time.Millisecond).ShouldNot(Receive(), "no write, no notification")

	tx, err := bdb.BeginTx(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	st.Health = db.HealthDegraded
	changed, err = store.RecordApplicationState(ctx, tx, st, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(tx.Rollback()).To(Succeed())
	g.Consistently(got, 300*time.Millisecond).ShouldNot(Receive(), "a write rolled back notifies nobody")
}
