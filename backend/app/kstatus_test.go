package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
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
		health  argov1alpha1.HealthStatusCode
	}{
		{name: "not-compared-yet", kstatus: status.InProgressStatus, health: argov1alpha1.HealthStatusProgressing},
		{name: "deployed", kstatus: status.CurrentStatus, health: argov1alpha1.HealthStatusHealthy,
			state: func(d *v1.GitOpsDeployment) *db.ApplicationState {
				return &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc", ReconciledState: compared(d)}
			}},
		{name: "degraded", kstatus: status.FailedStatus, health: argov1alpha1.HealthStatusDegraded,
			state: func(d *v1.GitOpsDeployment) *db.ApplicationState {
				return &db.ApplicationState{Health: db.HealthDegraded, HealthMessage: "no replicas", SyncStatus: db.SyncStatusSynced, Revision: "abc", ReconciledState: compared(d)}
			}},
		{name: "syncing", kstatus: status.InProgressStatus, health: argov1alpha1.HealthStatusProgressing,
			state: func(d *v1.GitOpsDeployment) *db.ApplicationState {
				return &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusOutOfSync, Revision: "def", ReconciledState: compared(d)}
			}},
		// kstatus reads Ready=False as InProgress; Argo CD sees a deployment waiting for its user.
		{name: "manual-out-of-sync", kstatus: status.InProgressStatus, health: argov1alpha1.HealthStatusSuspended,
			mutate: func(d *v1.GitOpsDeployment) { d.Spec.Type = v1.GitOpsDeploymentSpecTypeManual },
			state: func(d *v1.GitOpsDeployment) *db.ApplicationState {
				return &db.ApplicationState{Health: db.HealthHealthy, SyncStatus: db.SyncStatusOutOfSync, Revision: "def", ReconciledState: compared(d)}
			}},
		{name: "invalid-path", kstatus: status.FailedStatus, health: argov1alpha1.HealthStatusDegraded,
			mutate: func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "/" }},
		{name: "missing-environment", kstatus: status.FailedStatus, health: argov1alpha1.HealthStatusDegraded,
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
	Health  argov1alpha1.HealthStatusCode
	Message string
}

// judge reads obj back from the API server and computes its verdict; healthLua is the file
// of Argo CD's health check, "" skips Argo CD.
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
		if v.Health, err = argoCDHealth(u, healthLua); err != nil {
			return verdict{}, err
		}
	}
	return v, nil
}

// argoCDBinDir asks hack/build-binaries.sh once, not on every poll of a verdict.
var argoCDBinDir = sync.OnceValues(testenv.ArgoCDBinDir)

// argoCDHealth is Argo CD's verdict on obj by the Lua health check in the file script, from
// Argo CD's own Lua code in the Argo CD binary the tests run (`argocd admin health-lua`).
func argoCDHealth(obj *unstructured.Unstructured, script string) (argov1alpha1.HealthStatusCode, error) {
	dir, err := argoCDBinDir()
	if err != nil {
		return "", err
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(dir, "argocd"), "admin", "health-lua", script)
	cmd.Stdin = bytes.NewReader(data) // one line: MarshalJSON ends it
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("argocd admin health-lua: %w: %s", err, stderr.String())
	}
	var hs struct{ Status argov1alpha1.HealthStatusCode }
	if err := json.Unmarshal(out, &hs); err != nil {
		return "", fmt.Errorf("reading Argo CD's verdict %q: %w", out, err)
	}
	return hs.Status, nil
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

// argoCDHealthCheck writes the Lua health check the argocd-health-check component installs
// to a file, and returns its path.
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
	file := filepath.Join(t.TempDir(), "health.lua")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
