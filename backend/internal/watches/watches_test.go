package watches

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

func request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

func TestRequests(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	runs := &v1.GitOpsDeploymentSyncRunList{Items: []v1.GitOpsDeploymentSyncRun{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "sync-1"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "sync-2", DeletionTimestamp: &deleted}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "joe", Name: "sync-1"}},
	}}
	beingDeleted := func(o metav1.Object) bool { return o.GetDeletionTimestamp() != nil }
	tests := []struct {
		name   string
		list   client.ObjectList
		filter func(metav1.Object) bool
		want   []reconcile.Request
	}{
		// Each item by its own namespace and name: the same name in two namespaces is two.
		{"every item, in list order", runs, nil, []reconcile.Request{request("jane", "sync-1"), request("jane", "sync-2"), request("joe", "sync-1")}},
		{"only what the filter passes", runs, beingDeleted, []reconcile.Request{request("jane", "sync-2")}},
		{"nothing passes", runs, func(metav1.Object) bool { return false }, []reconcile.Request{}},
		{"an empty list", &v1.GitOpsDeploymentList{}, nil, []reconcile.Request{}},
		// Any kind's list: the ManagedEnvironments using a Secret, core objects.
		{"managed environments", &v1.GitOpsDeploymentManagedEnvironmentList{Items: []v1.GitOpsDeploymentManagedEnvironment{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "prod"}}}}, nil, []reconcile.Request{request("jane", "prod")}},
		{"secrets", &corev1.SecretList{Items: []corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"}}}}, nil,
			[]reconcile.Request{request("a", "s")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Requests(tt.list, tt.filter)).To(Equal(tt.want))
		})
	}
}
