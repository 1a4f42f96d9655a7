package operations_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts/clitest"
	"github.com/gitops-service/gitops-service/backend/internal/operations"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// now is the time the command counts ages to.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t        *testing.T
	db       *bun.DB
	store    *db.Store
	a, b     *db.EngineInstance
	failed   string // instance a, Failed, 1h old
	done     string // instance a, Completed, 2h old
	waiting  string // instance a, Waiting, 3h old
	progress string // instance b, In_Progress, 5m old
}

// newFixture creates two engine instances and four operations of different ages.
func newFixture(t *testing.T) *fixture {
	ctx := context.Background()
	g := NewWithT(t)
	f := &fixture{t: t, db: dbtest.NewDB(t), store: db.NewStore(nil)}
	cluster, err := f.store.GetOrCreateEngineCluster(ctx, f.db, "default", "")
	g.Expect(err).NotTo(HaveOccurred())
	newInstance := func(namespace, uid string) *db.EngineInstance {
		ei := &db.EngineInstance{EngineClusterID: cluster.ID, NamespaceName: namespace, NamespaceUID: uid}
		g.Expect(f.store.CreateEngineInstance(ctx, f.db, ei)).To(Succeed())
		return ei
	}
	f.a = newInstance("argocd-a", "4f8a0d1c-0b6e-4d0a-9b57-6f3a3d1e0a01")
	f.b = newInstance("argocd-b", "4f8a0d1c-0b6e-4d0a-9b57-6f3a3d1e0a02")
	newOp := func(ei *db.EngineInstance, state db.OperationState, message string, age time.Duration) string {
		op := &db.Operation{EngineInstanceID: ei.ID, ResourceType: db.OperationResourceApplication,
			ResourceID: "7d1c9e2a-5b3f-4c8e-a1d2-0e9f8a7b6c5d", State: state, HumanReadableState: message}
		g.Expect(f.store.CreateOperation(ctx, f.db, op)).To(Succeed())
		_, err := f.db.NewUpdate().Table("operations").Set("created_at = ?", now.Add(-age)).Where("id = ?", op.ID).Exec(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return op.ID
	}
	f.waiting = newOp(f.a, db.OperationWaiting, "waiting for the cluster-agent", 3*time.Hour)
	f.done = newOp(f.a, db.OperationCompleted, "", 2*time.Hour)
	f.failed = newOp(f.a, db.OperationFailed, "Argo CD rejected\nApplication x", time.Hour)
	f.progress = newOp(f.b, db.OperationInProgress, "applying", 5*time.Minute)
	return f
}

// run runs `backend operations args...` on the fixture's database.
func (f *fixture) run(args ...string) clitest.Result {
	cmd := &operations.Command{
		Store: f.store,
		Open:  func(context.Context) (bun.IDB, func(), error) { return f.db, func() {}, nil },
		Now:   func() time.Time { return now },
	}
	return clitest.Run(f.t, cmd.NewCommand(), args...)
}

// ids are the ids in the table out, in order.
func ids(out string) []string {
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		ids = append(ids, strings.Fields(line)[0])
	}
	return ids
}

func TestListTable(t *testing.T) {
	g, f := NewWithT(t), newFixture(t)
	res := f.run("list")
	g.Expect(res.Err).NotTo(HaveOccurred())
	g.Expect(res.Stdout).To(MatchRegexp(`^ID\s+ENGINE INSTANCE\s+RESOURCE TYPE\s+RESOURCE ID\s+STATE\s+AGE\s+MESSAGE\n`))
	g.Expect(ids(res.Stdout)).To(Equal([]string{f.progress, f.failed, f.done, f.waiting}))
	g.Expect(res.Stdout).To(MatchRegexp(`(?m)^%s\s+%s\s+Application\s+7d1c9e2a-5b3f-4c8e-a1d2-0e9f8a7b6c5d\s+In_Progress\s+5m\s+applying$`, f.progress, f.b.ID))
	g.Expect(res.Stdout).To(MatchRegexp(`(?m)^%s\s+%s\s+Application\s+\S+\s+Failed\s+60m\s+Argo CD rejected Application x$`, f.failed, f.a.ID))
	g.Expect(res.Stdout).To(MatchRegexp(`(?m)^%s\s+%s\s+Application\s+\S+\s+Completed\s+120m\s*$`, f.done, f.a.ID))
	g.Expect(res.Stdout).To(MatchRegexp(`(?m)^%s\s+.*\s+Waiting\s+3h\s+waiting for the cluster-agent$`, f.waiting))
}

func TestListFilters(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--state", "Waiting"}, []string{f.waiting}},
		{[]string{"--state=failed"}, []string{f.failed}},
		{[]string{"--state", "in_progress"}, []string{f.progress}},
		{[]string{"--engine-instance", f.a.ID}, []string{f.failed, f.done, f.waiting}},
		{[]string{"--engine-instance", f.b.ID, "--state", "Completed"}, nil},
		{[]string{"--limit", "2"}, []string{f.progress, f.failed}},
		{[]string{"--limit", "0"}, []string{f.progress, f.failed, f.done, f.waiting}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := f.run(append([]string{"list"}, tc.args...)...)
			NewWithT(t).Expect(res.Err).NotTo(HaveOccurred())
			NewWithT(t).Expect(ids(res.Stdout)).To(Equal(tc.want))
		})
	}
}

func TestListJSONAndYAML(t *testing.T) {
	g, f := NewWithT(t), newFixture(t)
	for _, format := range []string{"json", "yaml"} {
		res := f.run("list", "-o", format, "--limit=2")
		g.Expect(res.Err).NotTo(HaveOccurred())
		var rows []operations.Row
		if format == "json" {
			g.Expect(json.Unmarshal([]byte(res.Stdout), &rows)).To(Succeed(), res.Stdout)
		} else {
			g.Expect(yaml.UnmarshalStrict([]byte(res.Stdout), &rows)).To(Succeed(), res.Stdout)
		}
		g.Expect(rows).To(HaveLen(2))
		g.Expect(rows[0]).To(Equal(operations.Row{ID: f.progress, EngineInstanceID: f.b.ID, ResourceType: "Application",
			ResourceID: "7d1c9e2a-5b3f-4c8e-a1d2-0e9f8a7b6c5d", State: "In_Progress", Message: "applying",
			CreatedAt: now.Add(-5 * time.Minute), UpdatedAt: rows[0].UpdatedAt}))
		g.Expect(rows[1].ID).To(Equal(f.failed))
		g.Expect(rows[1].Message).To(Equal("Argo CD rejected\nApplication x"), "the message as it is")
	}
	// Nothing selected: an empty list, not null.
	res := f.run("list", "-o", "json", "--engine-instance", f.b.ID, "--state", "Failed")
	g.Expect(res.Err).NotTo(HaveOccurred())
	g.Expect(res.Stdout).To(Equal("[]\n"))
}

func TestListUsage(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--state", "Done"}, `--state "Done" is not one of Waiting, In_Progress, Completed, Failed`},
		{[]string{"--engine-instance", "argocd-a"}, `--engine-instance "argocd-a" is not an engine instance id`},
		{[]string{"--limit", "-1"}, "--limit -1 is negative"},
		{[]string{"extra"}, `takes no arguments`},
		{[]string{"-o", "wide"}, `invalid argument "wide"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := f.run(append([]string{"list"}, tc.args...)...)
			NewWithT(t).Expect(res.Err).To(MatchError(manageropts.ErrUsage))
			NewWithT(t).Expect(res.Err.Error()).To(ContainSubstring(tc.want))
		})
	}
}
