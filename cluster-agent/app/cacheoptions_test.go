package app_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// The agent caches the engine namespace only, without managedFields.
func TestCacheOptionsHoldTheEngineNamespaceWithoutManagedFields(t *testing.T) {
	c := (&agent.Options{Engine: engine.Options{Namespace: "argocd"}}).CacheOptions()
	if _, ok := c.DefaultNamespaces["argocd"]; !ok || len(c.DefaultNamespaces) != 1 {
		t.Errorf("namespaces %v, want the engine namespace only", c.DefaultNamespaces)
	}
	if c.DefaultTransform == nil {
		t.Fatal("no transform of cached objects")
	}
	out, err := c.DefaultTransform(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "argocd"}}}})
	if err != nil || out.(*corev1.Secret).ManagedFields != nil || out.(*corev1.Secret).Name != "s" {
		t.Errorf("transformed %+v, %v", out, err)
	}
}
