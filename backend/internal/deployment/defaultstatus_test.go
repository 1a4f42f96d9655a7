package deployment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// defaultStatus is the status the API server gives a GitOpsDeployment the service has not
// written a status for: the default of the CRD the service installs.
func defaultStatus(t *testing.T) v1.GitOpsDeploymentStatus {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "manifests", "crd", "bases", "managed-gitops.redhat.com_gitopsdeployments.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(yaml.Unmarshal(data, crd)).To(Succeed())
	g.Expect(crd.Spec.Versions).To(HaveLen(1))
	def := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Default
	g.Expect(def).NotTo(BeNil(), "the CRD gives status a default")
	var status v1.GitOpsDeploymentStatus
	g.Expect(json.Unmarshal(def.Raw, &status)).To(Succeed())
	return status
}

// TestANewDeploymentNeedsNoStatusWrite: the first reconcile of a GitOpsDeployment finds
// nothing compared yet, and the status it would write is the CRD's default status that the
// object already reads as; a later change of Ready gets its transition time.
func TestANewDeploymentNeedsNoStatusWrite(t *testing.T) {
	g := NewWithT(t)
	depl := &v1.GitOpsDeployment{Status: defaultStatus(t)}
	now := metav1.Now()

	first := depl.Status.DeepCopy()
	outcome.Apply(outcome.GitOpsConditions{List: &first.Conditions}, progress(depl, nil, nil), now)
	g.Expect(equality.Semantic.DeepEqual(first, &depl.Status)).To(BeTrue(),
		"the first reconcile changes nothing: %+v", first.Conditions)

	// The same conditions on an object that had no status: the default is what a write
	// would have said.
	var written v1.GitOpsDeploymentStatus
	outcome.Apply(outcome.GitOpsConditions{List: &written.Conditions}, progress(depl, nil, nil), now)
	for i := range written.Conditions {
		written.Conditions[i].LastProbeTime, written.Conditions[i].LastTransitionTime = nil, nil
	}
	g.Expect(written.Conditions).To(Equal(depl.Status.Conditions))

	// Still not Ready, for another reason: the conditions keep their status and get the
	// times the default could not give them.
	later := depl.Status.DeepCopy()
	outcome.Apply(outcome.GitOpsConditions{List: &later.Conditions}, outcome.Working(ReasonOutOfSync, "Deploying revision 0123abcd", false), now)
	g.Expect(later.Conditions).To(HaveLen(2))
	for _, c := range later.Conditions {
		g.Expect(c.Reason).To(BeEquivalentTo(ReasonOutOfSync))
		g.Expect(c.LastTransitionTime).To(Equal(&now), "%s", c.Type)
		g.Expect(c.LastProbeTime).To(Equal(&now), "%s", c.Type)
	}
}
