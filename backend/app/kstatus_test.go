package app_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	argolua "github.com/argoproj/argo-cd/v3/util/lua"
	healthlib "github.com/argoproj/gitops-engine/pkg/health"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// TestKStatusAndArgoCDReadTheConditions reads GitOpsDeployments in each of their states
// back from the API server and checks what the kstatus library and Argo CD's Lua health
// check (manifests/components/argocd-health-check, run by Argo CD's own Lua code) make of
// them.
func TestKStatusAndArgoCDReadTheConditions(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	healthLua := argoCDHealthCheck(t)
	compared := func(d *v1.GitOpsDeployment) *argov1alpha1.ComparedTo {
		return &argov1alpha1.ComparedTo{
			Source:      argov1alpha1.ApplicationSource{RepoURL: d.Spec.Source.RepoURL, Path: d.Spec.Source.Path},
			Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: h.tenant},
		}
	}
	for _, tc := range []struct {
		name    string
		state   func(*v1.GitOpsDeployment) *db.ApplicationState
		mutate  func(*v1.GitOpsDeployment)
		kstatus status.Status
		health  healthlib.HealthStatusCode
	}{
		{name: "not-compared-yet", kstatus: status.InProgressStatus, health: healthlib.HealthStatusProgressing},
		{name: "deployed", kstatus: status.CurrentStatus, health: healthlib.HealthStatusHealthy,
			state: func(d *v1.GitOpsDeployment) *db.ApplicationState {
				return &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc", ReconciledState: compared(d)}
			}},
		{name: "degraded", kstatus: status.FailedStatus, health: healthlib.HealthStatusDegraded,
			state: func(d *v1.GitOpsDeployment) *db.ApplicationState {
				return &db.ApplicationState{Health: db.HealthDegraded, HealthMessage: "no replicas", SyncStatus: db.SyncStatusSynced, Revision: "abc", ReconciledState: compared(d)}
			}},
		{name: "syncing", kstatus: status.InProgressStatus, health: healthlib.HealthStatusProgressing,
			state: func(d *v1.GitOpsDeployment) *db.ApplicationState {
				return &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusOutOfSync, Revision: "def", ReconciledState: compared(d)}
			}},
		// kstatus reads Ready=False as InProgress; Argo CD sees a deployment waiting for its user.
		{name: "manual-out-of-sync", kstatus: status.InProgressStatus, health: healthlib.HealthStatusSuspended,
			mutate: func(d *v1.GitOpsDeployment) { d.Spec.Type = v1.GitOpsDeploymentSpecTypeManual },
			state: func(d *v1.GitOpsDeployment) *db.ApplicationState {
				return &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusOutOfSync, Revision: "def", ReconciledState: compared(d)}
			}},
		{name: "invalid-path", kstatus: status.FailedStatus, health: healthlib.HealthStatusDegraded,
			mutate: func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "/" }},
		{name: "missing-environment", kstatus: status.FailedStatus, health: healthlib.HealthStatusDegraded,
			mutate: func(d *v1.GitOpsDeployment) { d.Spec.Destination.Environment = "absent" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			depl := h.newDeployment(tc.name, v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
				if tc.mutate != nil {
					tc.mutate(d)
				}
			})
			if tc.state != nil {
				h.application(depl.UID)
				h.writeState(depl.UID, tc.state(depl))
			}
			h.g.Eventually(func() (verdict, error) { return judge(h, depl, healthLua) }, eventually, poll).
				Should(Satisfy(func(v verdict) bool { return v.KStatus == tc.kstatus && v.Health == tc.health }))
		})
	}
}

// verdict is what kstatus and Argo CD's health check make of an object whose status has a
// Ready condition (before the service writes one, kstatus calls any object Current).
type verdict struct {
	KStatus status.Status
	Health  healthlib.HealthStatusCode
	Message string
}

// judge reads obj back from the API server and computes its verdict; healthLua "" skips
// Argo CD.
func judge(h *harness, obj client.Object, healthLua string) (verdict, error) {
	gvk, err := cp.Client.GroupVersionKindFor(obj)
	if err != nil {
		return verdict{}, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := cp.Client.Get(h.ctx, client.ObjectKeyFromObject(obj), u); err != nil {
		return verdict{}, err
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if !slices.ContainsFunc(conditions, func(c any) bool { return c.(map[string]any)["type"] == "Ready" }) {
		return verdict{Message: "no Ready condition yet"}, nil
	}
	res, err := status.Compute(u)
	if err != nil {
		return verdict{}, err
	}
	v := verdict{KStatus: res.Status, Message: res.Message}
	if healthLua != "" {
		hs, err := (argolua.VM{}).ExecuteHealthLua(u, healthLua)
		if err != nil {
			return verdict{}, err
		}
		v.Health = hs.Status
	}
	return v, nil
}

// TestKStatusReadsEveryCoreKind checks kstatus's verdict on the other core kinds in their
// states, read back from the API server.
func TestKStatusReadsEveryCoreKind(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	token := h.serviceAccountToken("kstatus", true)
	automated := h.newDeployment("automated", v1.GitOpsDeploymentSpecTypeAutomated)
	for _, tc := range []struct {
		name   string
		create func() client.Object
		want   status.Status
	}{
		{"environment connected", func() client.Object {
			return h.newEnvironment("connected", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kubeconfig(cp.Config.Host, token)})
		}, status.CurrentStatus},
		{"environment with a Secret of the wrong type", func() client.Object {
			return h.newEnvironment("wrong-type", corev1.SecretTypeOpaque, map[string][]byte{"kubeconfig": kubeconfig(cp.Config.Host, token)})
		}, status.FailedStatus},
		{"repository credential without its Secret", func() client.Object {
			cred := &v1.GitOpsDeploymentRepositoryCredential{ObjectMeta: metav1.ObjectMeta{Name: "no-secret", Namespace: h.tenant},
				Spec: v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: "https://github.com/example/gitops", Secret: "absent"}}
			h.g.Expect(cp.Client.Create(h.ctx, cred)).To(Succeed())
			return cred
		}, status.FailedStatus},
		{"sync run of an automated deployment", func() client.Object { return h.newSyncRun("of-automated", automated.Name, "") }, status.FailedStatus},
		{"sync run waiting for its deployment", func() client.Object { return h.newSyncRun("waiting", "not-yet", "") }, status.InProgressStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.create()
			h.g.Eventually(func() (verdict, error) { return judge(h, obj, "") }, eventually, poll).Should(HaveField("KStatus", tc.want))
		})
	}
}

// argoCDHealthCheck is the Lua health check the argocd-health-check component installs.
func argoCDHealthCheck(t *testing.T) string {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "components", "argocd-health-check", "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal(data, cm); err != nil {
		t.Fatal(err)
	}
	script := cm.Data["resource.customizations.health.managed-gitops.redhat.com_GitOpsDeployment"]
	if script == "" {
		t.Fatal("the component has no health check for GitOpsDeployment")
	}
	return script
}
