// Package crash kills the backend and the cluster-agent (SIGKILL, through
// backend-shared/crashpoint) between the steps of a change and checks that the change is
// carried out once the binary is back: rows committed before the crash reach Argo CD, and
// nothing is left half done.
package crash

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/crashpoint"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

const (
	timeout  = 60 * time.Second
	interval = 200 * time.Millisecond
)

func TestCrashBetweenSteps(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	g := NewWithT(t)
	s, err := stack.Start(ctx, stack.Options{
		Dir:      t.TempDir(),
		Binaries: []string{"backend", "cluster-agent"},
		// Nothing prunes without Argo CD: deleted Applications lose their finalizer soon.
		Args: map[string][]string{"cluster-agent": {"--application-deletion-timeout=5s"}},
	})
	t.Cleanup(func() {
		if t.Failed() && s != nil {
			for name, p := range s.Processes {
				t.Logf("--- %s log tail:\n%s", name, p.Tail())
			}
		}
		if s != nil {
			_ = s.Stop()
		}
	})
	g.Expect(err).NotTo(HaveOccurred())
	c := s.ControlPlane.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crash"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	create := func(g Gomega, name string) *v1.GitOpsDeployment {
		depl := &v1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
			Spec: v1.GitOpsDeploymentSpec{
				Source: v1.ApplicationSource{RepoURL: "https://git.example.com/crash/config.git", Path: name},
				Type:   v1.GitOpsDeploymentSpecTypeAutomated,
			},
		}
		g.Expect(c.Create(ctx, depl)).To(Succeed())
		return depl
	}
	application := func(depl *v1.GitOpsDeployment) func() (string, error) {
		return func() (string, error) {
			app := &argov1alpha1.Application{}
			err := c.Get(ctx, client.ObjectKey{Namespace: stack.EngineNamespace, Name: argocd.ApplicationName(depl.UID)}, app)
			if err != nil {
				return "", err
			}
			if app.Spec.Source == nil {
				return "", nil
			}
			return app.Spec.Source.Path, nil
		}
	}
	// settled: no operation is unfinished, no engine instance's signal is left up, and every
	// Operation CR has its row and no status (the state lives in the row).
	settled := func(g Gomega) {
		var unfinished, signals int
		g.Expect(conn.QueryRow(ctx, "SELECT count(*) FROM operations WHERE state IN ('Waiting', 'In_Progress')").Scan(&unfinished)).To(Succeed())
		g.Expect(unfinished).To(BeZero(), "unfinished operations")
		g.Expect(conn.QueryRow(ctx, "SELECT count(*) FROM operation_signals").Scan(&signals)).To(Succeed())
		g.Expect(signals).To(BeZero(), "signals left up")
		rows, err := conn.Query(ctx, "SELECT id::text, state FROM operations")
		g.Expect(err).NotTo(HaveOccurred())
		states := map[string]string{}
		for rows.Next() {
			var id, state string
			g.Expect(rows.Scan(&id, &state)).To(Succeed())
			states[id] = state
		}
		g.Expect(rows.Err()).NotTo(HaveOccurred())
		crs := &v1.OperationList{}
		g.Expect(c.List(ctx, crs, client.InNamespace(stack.EngineNamespace))).To(Succeed())
		for _, cr := range crs.Items {
			g.Expect(states).To(HaveKey(cr.Spec.OperationID), "Operation %s has its row", cr.Name)
			g.Expect(cr.Status).To(Equal(v1.OperationStatus{}), "status of Operation %s", cr.Name)
		}
	}
	// listed waits until a restarted backend has reconciled every GitOpsDeployment it
	// found: only then does it see a deletion as an event (one before its first list is
	// the sweep's to find). The cluster-agent sees an Operation CR either way.
	listed := func(g Gomega, binary string) {
		if binary != "backend" {
			return
		}
		list := &v1.GitOpsDeploymentList{}
		g.Expect(c.List(ctx, list)).To(Succeed())
		want := float64(len(list.Items))
		g.Eventually(func() (float64, error) {
			families, err := stack.Scrape(ctx, s.MetricsAddr[binary])
			if err != nil {
				return 0, err
			}
			total := 0.0
			for _, m := range families["controller_runtime_reconcile_total"].GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "controller" && l.GetValue() == "gitopsdeployment" {
						total += m.GetCounter().GetValue()
					}
				}
			}
			return total, nil
		}, timeout, interval).Should(BeNumerically(">=", want), "%s reconciled what it listed", binary)
	}
	// crashAt restarts binary armed at point, runs act, waits for the binary to kill itself
	// there, and starts it again unarmed.
	crashAt := func(t *testing.T, binary, point string, act func()) {
		g := NewWithT(t)
		s.CrashBinary(binary)
		g.Eventually(s.Processes[binary].Running, timeout, interval).Should(BeFalse())
		g.Expect(s.StartBinaryWithEnv(ctx, binary, crashpoint.EnvVar+"="+point)).To(Succeed())
		listed(g, binary)
		act()
		g.Eventually(s.Processes[binary].Running, timeout, interval).Should(BeFalse(), "%s is killed at %s", binary, point)
		g.Expect(s.StartBinary(ctx, binary)).To(Succeed())
	}

	for _, tc := range []struct{ binary, point string }{
		{"backend", crashpoint.BackendAfterApplyCommit},
		{"cluster-agent", crashpoint.AgentAfterHandler},
		{"cluster-agent", crashpoint.AgentAfterStateCommit},
	} {
		t.Run(tc.point, func(t *testing.T) {
			g := NewWithT(t)
			var depl *v1.GitOpsDeployment
			crashAt(t, tc.binary, tc.point, func() { depl = create(g, tc.point) })
			g.Eventually(application(depl), timeout, interval).Should(Equal(depl.Name), "the Application is created after the restart")
			g.Eventually(settled, timeout, interval).Should(Succeed())
		})
	}

	t.Run(crashpoint.BackendAfterDeleteCommit, func(t *testing.T) {
		g := NewWithT(t)
		depl := create(g, "deleted")
		g.Eventually(application(depl), timeout, interval).Should(Equal(depl.Name))
		crashAt(t, "backend", crashpoint.BackendAfterDeleteCommit, func() { g.Expect(c.Delete(ctx, depl)).To(Succeed()) })
		g.Eventually(func() bool {
			_, err := application(depl)()
			return apierrors.IsNotFound(err)
		}, timeout, interval).Should(BeTrue(), "the Application is deleted after the restart")
		var rows int
		g.Expect(conn.QueryRow(ctx, "SELECT count(*) FROM applications WHERE id = $1", string(depl.UID)).Scan(&rows)).To(Succeed())
		g.Expect(rows).To(BeZero())
		g.Eventually(settled, timeout, interval).Should(Succeed())
	})
}
