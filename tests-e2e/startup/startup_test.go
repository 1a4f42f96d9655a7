// Package startup starts the binaries against an empty database in the order an
// installation may: the cluster-agent before the backend has migrated the schema.
package startup

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/schema"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// TestAgentBeforeTheBackend: the cluster-agent, started against an empty database a few
// seconds before the backend, touches nothing and is not ready until the backend has
// migrated the schema; then both are ready, the schema is at the latest version and
// clean, and a GitOpsDeployment reaches Argo CD.
func TestAgentBeforeTheBackend(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := stack.StartForTest(t, stack.Options{
		Binaries: []string{"backend", "cluster-agent"},
		Deferred: []string{"backend", "cluster-agent"},
	})
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	g.Expect(s.Launch("cluster-agent")).To(Succeed())
	readyz := func() (string, error) {
		resp, err := http.Get("http://" + s.ProbeAddr("cluster-agent") + "/readyz")
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.Status + " " + string(body), err
	}
	g.Eventually(readyz).WithTimeout(30 * time.Second).Should(And(HavePrefix("503"), ContainSubstring("waiting for the backend to migrate it")))
	time.Sleep(3 * time.Second) // what a slow backend start gives the agent
	var tables int
	g.Expect(conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables)).To(Succeed())
	g.Expect(tables).To(BeZero(), "the waiting cluster-agent created nothing")
	g.Expect(s.Processes["cluster-agent"].Running()).To(BeTrue())

	g.Expect(s.StartBinary(ctx, "backend")).To(Succeed())
	g.Expect(s.WaitReady(ctx, "cluster-agent")).To(Succeed())

	latest, err := db.LatestSchemaVersion()
	g.Expect(err).NotTo(HaveOccurred())
	state, err := schema.ReadState(ctx, conn)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state).To(Equal(schema.State{Version: latest}))

	c := s.ControlPlane.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "startup"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns.Name},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://git.example.com/startup/config.git", Path: "app"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	g.Expect(c.Create(ctx, depl)).To(Succeed())
	g.Eventually(func() (string, error) {
		app := &argov1alpha1.Application{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: stack.EngineNamespace, Name: argocd.ApplicationName(depl.UID)}, app); err != nil {
			return "", err
		}
		if app.Spec.Source == nil {
			return "", nil
		}
		return app.Spec.Source.Path, nil
	}).WithTimeout(60*time.Second).Should(Equal("app"), "the cluster-agent created the deployment's Argo CD Application")
}
