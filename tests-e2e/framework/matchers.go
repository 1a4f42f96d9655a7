package framework

import (
	"context"
	"fmt"

	"github.com/onsi/gomega"
	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// Object returns a function for Eventually that reads obj afresh and returns it.
func Object[T client.Object](ctx context.Context, c client.Client, obj T) func() (T, error) {
	return func() (T, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return obj, err
	}
}

// Gone returns a function for Eventually that reports whether obj no longer exists.
func Gone(ctx context.Context, c client.Client, obj client.Object) func() (bool, error) {
	return func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

// BeSyncedAndHealthy matches a GitOpsDeployment whose status is Synced and Healthy.
func BeSyncedAndHealthy() types.GomegaMatcher {
	return HaveSyncAndHealth(v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy)
}

// HaveSyncAndHealth matches a GitOpsDeployment with this sync and health status.
func HaveSyncAndHealth(sync v1.SyncStatusCode, health v1.HealthStatusCode) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(d *v1.GitOpsDeployment) (bool, error) {
		return d.Status.Sync.Status == sync && d.Status.Health.Status == health, nil
	}).WithTemplate(fmt.Sprintf("Expected GitOpsDeployment {{.Actual.Namespace}}/{{.Actual.Name}} to be %s/%s, but its status is\n{{format .Actual.Status 1}}", sync, health))
}

// HaveRevision matches a GitOpsDeployment whose status reports this commit.
func HaveRevision(commit string) types.GomegaMatcher {
	return gomega.HaveField("Status.Sync.Revision", commit)
}

// HaveCondition matches a GitOpsDeployment with a condition of this type and status.
func HaveCondition(conditionType v1.GitOpsDeploymentConditionType, status v1.GitOpsConditionStatus) types.GomegaMatcher {
	return gomega.HaveField("Status.Conditions", gomega.ContainElement(gomega.And(
		gomega.HaveField("Type", conditionType), gomega.HaveField("Status", status))))
}

// HaveResource matches a GitOpsDeployment whose status lists a resource of this kind and name.
func HaveResource(kind, name string) types.GomegaMatcher {
	return gomega.HaveField("Status.Resources", gomega.ContainElement(gomega.And(
		gomega.HaveField("Kind", kind), gomega.HaveField("Name", name))))
}

// absentKey is the one key of ConfigMapData's result for a ConfigMap that does not exist,
// and errorKey for one that could not be read.
const absentKey, errorKey = "<absent>", "<error>"

// ConfigMapData returns a function for Eventually reading a ConfigMap's data; BeAbsent
// matches its result when the ConfigMap does not exist (not when it could not be read).
func ConfigMapData(ctx context.Context, c client.Client, namespace, name string) func() map[string]string {
	return func() map[string]string {
		cm := &corev1.ConfigMap{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm)
		switch {
		case apierrors.IsNotFound(err):
			return map[string]string{absentKey: err.Error()}
		case err != nil:
			return map[string]string{errorKey: err.Error()}
		}
		return cm.Data
	}
}

// BeAbsent matches ConfigMapData's result for a ConfigMap that does not exist.
func BeAbsent() types.GomegaMatcher { return gomega.HaveKey(absentKey) }

// HaveReady matches a GitOpsDeployment whose Ready condition has this status and reason.
func HaveReady(status v1.GitOpsConditionStatus, reason string) types.GomegaMatcher {
	return gomega.HaveField("Status.Conditions", gomega.ContainElement(gomega.And(
		gomega.HaveField("Type", v1.GitOpsDeploymentConditionType("Ready")), gomega.HaveField("Status", status),
		gomega.HaveField("Reason", v1.GitOpsDeploymentReasonType(reason)))))
}
