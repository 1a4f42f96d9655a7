package app_test

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// These tests create objects written with api.md's spellings (spec.revisionId, spec.url,
// kind GitOpsDeploymentRepositoryCredentials) as a client that does not ask for strict
// field validation does: client-go's dynamic client with empty CreateOptions, no
// fieldValidation parameter, like kubectl --validate=false. The API server drops the
// fields such a client sends that the CRD does not know; none of these may be dropped.

// createLenient posts manifest, a YAML object, to resource in the tenant namespace, with
// no fieldValidation parameter.
func (h *harness) createLenient(resource, manifest string) (*unstructured.Unstructured, error) {
	h.t.Helper()
	obj := &unstructured.Unstructured{}
	h.g.Expect(yaml.Unmarshal([]byte(manifest), &obj.Object)).To(Succeed())
	gvr := schema.GroupVersionResource{Group: v1.GroupVersion.Group, Version: v1.GroupVersion.Version, Resource: resource}
	return dynamic.NewForConfigOrDie(cp.Config).Resource(gvr).Namespace(h.tenant).Create(h.ctx, obj, metav1.CreateOptions{})
}

func TestSyncRunWithTheRevisionIdSpellingSyncsThatRevision(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	depl := h.newDeployment("jgwest-app", v1.GitOpsDeploymentSpecTypeManual, func(d *v1.GitOpsDeployment) { d.Spec.Source.TargetRevision = "main" })
	h.application(depl.UID)
	const sha = "3b8a9c2f1e0d4c5b6a79880d1e2f3a4b5c6d7e8f"

	// api.md's example, placeholders filled.
	created, err := h.createLenient("gitopsdeploymentsyncruns", `
apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentSyncRun
metadata:
  name: jgwest-app-sync
spec:
  gitopsDeploymentName: jgwest-app
  revisionId: `+sha+`
`)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(created.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("revisionId", sha)), "spec.revisionId is stored, not dropped")
	run := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Name: created.GetName(), Namespace: h.tenant, UID: created.GetUID()}}

	// The sync is requested for that revision, not the deployment's "main", and says so.
	h.g.Eventually(h.syncOperation(run), eventually, poll).Should(And(
		HaveField("ApplicationID", string(depl.UID)),
		HaveField("Revision", sha),
		HaveField("DesiredState", db.SyncRunning),
	))
	h.g.Expect(h.operations(db.OperationResourceSyncOperation, string(run.UID))).To(HaveLen(1))
	h.g.Eventually(h.syncRunRevision(run), eventually, poll).Should(Equal(sha))
	h.g.Eventually(func() []string { return h.events(run) }, eventually, poll).Should(
		ContainElement(`Normal SyncRequested Sync of GitOpsDeployment jgwest-app to "` + sha + `" requested`))

	// Both spellings naming different revisions: refused, naming spec.revisionID.
	_, err = h.createLenient("gitopsdeploymentsyncruns", `
apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentSyncRun
metadata:
  name: both-spellings
spec:
  gitopsDeploymentName: jgwest-app
  revisionID: main
  revisionId: `+sha+`
`)
	h.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not a validation error: %v", err)
	h.g.Expect(err.Error()).To(ContainSubstring("spec.revisionId is an older spelling of spec.revisionID and names another revision; set only spec.revisionID"))
}

func TestRepositoryCredentialWithTheURLSpellingIsRefused(t *testing.T) {
	t.Parallel()
	h := &harness{t: t, g: NewWithT(t), ctx: t.Context(), tenant: cp.NewNamespace(t, "tenant-")}

	// api.md's example with the singular kind and metadata.name: spec.url is refused, and the
	// message names spec.repository.
	_, err := h.createLenient("gitopsdeploymentrepositorycredentials", `
apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentRepositoryCredential
metadata:
  name: private-repo-creds
spec:
  url: https://github.com/jgwest/private-app
  secret: private-repo-creds-secret
`)
	h.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not a validation error: %v", err)
	h.g.Expect(err.Error()).To(And(
		ContainSubstring("spec.url: Forbidden: spec.url is the spelling of older documents: write the repository URL in spec.repository"),
		ContainSubstring("spec.repository: Required value"),
	))

	// Also next to spec.repository, where dropping it would have gone unnoticed.
	_, err = h.createLenient("gitopsdeploymentrepositorycredentials", `
apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentRepositoryCredential
metadata:
  name: private-repo-creds
spec:
  repository: https://github.com/jgwest/private-app
  url: https://github.com/jgwest/other-app
  secret: private-repo-creds-secret
`)
	h.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not a validation error: %v", err)
	h.g.Expect(err.Error()).To(ContainSubstring("write the repository URL in spec.repository"))

	// The plural kind is no API: a client that maps kinds to resources, as kubectl does,
	// finds no match, and a POST to the resource names the kind it must be.
	plural := &unstructured.Unstructured{}
	plural.SetAPIVersion(v1.GroupVersion.String())
	plural.SetKind("GitOpsDeploymentRepositoryCredentials")
	plural.SetName("private-repo-creds")
	plural.SetNamespace(h.tenant)
	h.g.Expect(meta.IsNoMatchError(cp.Client.Create(h.ctx, plural))).To(BeTrue())
	_, err = h.createLenient("gitopsdeploymentrepositorycredentials", `
apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentRepositoryCredentials
metadata:
  name: private-repo-creds
spec:
  repository: https://github.com/jgwest/private-app
  secret: private-repo-creds-secret
`)
	h.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not a validation error: %v", err)
	h.g.Expect(err.Error()).To(ContainSubstring(`kind: Invalid value: "GitOpsDeploymentRepositoryCredentials": must be GitOpsDeploymentRepositoryCredential`))
}
