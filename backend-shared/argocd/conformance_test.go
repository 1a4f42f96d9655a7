package argocd_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// conformanceObjects are the Argo CD objects the service builds, in each shape it builds
// them, plus an Application carrying every status field the service reads, as Argo CD
// writes them.
func conformanceObjects(namespace string) map[string]client.Object {
	automated := argocd.ApplicationSpec(argocd.ApplicationInput{
		RepoURL: "https://github.com/example/gitops", Path: "environments/dev", TargetRevision: "main",
		Destination: argocd.Destination{Namespace: "team-a"}, Project: argocd.AppProjectName("t1"),
		Automated: true, SyncOptions: []string{"CreateNamespace=true"},
	})
	manual := argocd.ApplicationSpec(argocd.ApplicationInput{
		RepoURL: "ssh://git@git.example.com/team/repo.git", Path: ".",
		Destination: argocd.Destination{Namespace: "prod", ManagedEnvironmentID: "env-1"},
		Project:     argocd.RemoteAppProjectName("t1"),
	})
	syncing := argocd.Application(namespace, "gitopsdepl-syncing", "app-2", "t1", manual)
	syncing.Operation = argocd.SyncOperation(manual, "v1.2.0", "gitops-service")
	syncing.Operation.Info = append(syncing.Operation.Info, &argov1alpha1.Info{Name: argocd.InfoSyncOperationID, Value: "run-1"})

	reported := argocd.Application(namespace, "gitopsdepl-reported", "app-3", "t1", automated)
	now := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	finished := metav1.NewTime(now.Add(3 * time.Second))
	reported.Status = argov1alpha1.ApplicationStatus{
		Resources: []argov1alpha1.ResourceStatus{{
			Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings",
			Status: argov1alpha1.SyncStatusCodeSynced, RequiresPruning: true,
			Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusHealthy, Message: "ok", LastTransitionTime: &now},
		}, {Group: "batch", Version: "v1", Kind: "Job", Namespace: "team-a", Name: "migrate", Hook: true}},
		Sync: argov1alpha1.SyncStatus{
			Status: argov1alpha1.SyncStatusCodeSynced, Revision: "0123abcd", Revisions: []string{"0123abcd"},
			ComparedTo: argov1alpha1.ComparedTo{Source: *automated.Source, Destination: automated.Destination},
		},
		Health:       argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusHealthy, Message: "all healthy", LastTransitionTime: &now},
		Conditions:   []argov1alpha1.ApplicationCondition{{Type: argov1alpha1.ApplicationConditionSyncError, Message: "earlier", LastTransitionTime: &now}},
		ReconciledAt: &now,
		ObservedAt:   &now,
		OperationState: &argov1alpha1.OperationState{
			Operation:  *argocd.SyncOperation(automated, "0123abcd", "gitops-service"),
			Phase:      argov1alpha1.OperationSucceeded,
			Message:    "successfully synced (all tasks run)",
			SyncResult: &argov1alpha1.SyncOperationResult{Revision: "0123abcd", Source: *automated.Source},
			StartedAt:  now, FinishedAt: &finished, RetryCount: 1,
		},
	}
	local, remote := argocd.AppProjects(namespace, "t1", "https://service.example.com:6443",
		[]string{"https://github.com/example/gitops", "ssh://git@git.example.com/team/repo.git"},
		[]argocd.ProjectDestination{{Namespace: "team-a"}, {ManagedEnvironmentID: "env-1", Namespace: "*"}})
	return map[string]client.Object{
		"automated Application":         argocd.Application(namespace, "gitopsdepl-automated", "app-1", "t1", automated),
		"Application with an operation": syncing,
		"Application with a status":     reported,
		"local AppProject":              local,
		"remote AppProject":             remote,
	}
}

// TestOwnArgoCDTypesConformToArgoCD holds the service's copy of Argo CD's types to Argo CD's
// own CRDs: every object the service builds applies with strict field validation (a field
// name Argo CD does not have is refused), comes back unchanged, and decodes without loss.
func TestOwnArgoCDTypesConformToArgoCD(t *testing.T) {
	cp, err := testenv.StartControlPlane(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd-conformance"}}
	if err := cp.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	// The check is worth something only if the API server refuses unknown fields.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "bad", "namespace": ns.Name},
		"spec":     map[string]any{"sourceRepo": []any{"*"}},
	}}
	if err := testenv.StrictApply(ctx, cp.Client, bad, "conformance"); err == nil {
		t.Fatalf("the API server accepted an AppProject field Argo CD does not have")
	}

	for name, obj := range conformanceObjects(ns.Name) {
		t.Run(name, func(t *testing.T) {
			sent := obj.DeepCopyObject().(client.Object)
			// Applied whole, status included: every field the types have must be Argo CD's.
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				t.Fatal(err)
			}
			unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
			if err := testenv.StrictApply(ctx, cp.Client, &unstructured.Unstructured{Object: m}, "conformance"); err != nil {
				t.Fatalf("server-side apply with strict field validation: %v", err)
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind(kindOf(t, obj)))
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
				t.Fatal(err)
			}
			back := sent.DeepCopyObject().(client.Object)
			lost, err := testenv.DecodeLoss(u.Object, back)
			if err != nil {
				t.Fatal(err)
			}
			if len(lost) > 0 {
				t.Fatalf("decoding what the API server stored loses %v", lost)
			}
			if !equality.Semantic.DeepEqual(content(t, sent), content(t, back)) {
				t.Fatalf("the API server changed the object:\nsent %+v\ngot  %+v", content(t, sent), content(t, back))
			}
		})
	}
}

func kindOf(t *testing.T, obj client.Object) string {
	t.Helper()
	switch obj.(type) {
	case *argov1alpha1.Application:
		return "Application"
	case *argov1alpha1.AppProject:
		return "AppProject"
	}
	t.Fatalf("not an Argo CD object: %T", obj)
	return ""
}

// content is what the service writes: everything but the metadata the API server fills in.
func content(t *testing.T, obj client.Object) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "metadata")
	delete(m, "apiVersion")
	delete(m, "kind")
	return m
}
