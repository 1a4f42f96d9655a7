package sandbox

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/provisioner"
)

func claim(name, uid string) *appstudio.DeploymentTargetClaim {
	return &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID(uid)}}
}

func TestNamesOfTheSpaceRequestAndTarget(t *testing.T) {
	tests := []struct {
		name   string
		claim  *appstudio.DeploymentTargetClaim
		prefix string
	}{
		{"short claim", claim("prod-dtc", "uid-1"), "prod-dtc"},
		// Cut to 200 characters, so that the names stay object names (253).
		{"long claim", claim(strings.Repeat("c", 253), "uid-1"), strings.Repeat("c", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sr, dt := Names(tt.claim)
			h := provisioner.ClaimHash(tt.claim)
			g.Expect(sr).To(Equal(tt.prefix + "-sr-" + h))
			g.Expect(dt).To(Equal(tt.prefix + "-dt-" + h))
			g.Expect(validation.IsDNS1123Subdomain(sr)).To(BeEmpty())
			g.Expect(validation.IsDNS1123Subdomain(dt)).To(BeEmpty())
		})
	}
}

// The names follow the claim's UID: a claim created again under the same name never adopts
// the SpaceRequest or DeploymentTarget retained from the earlier one.
func TestNamesFollowTheClaimUID(t *testing.T) {
	g := NewWithT(t)
	sr1, dt1 := Names(claim("prod-dtc", "uid-1"))
	sr2, dt2 := Names(claim("prod-dtc", "uid-2"))
	g.Expect(sr1).NotTo(Equal(sr2))
	g.Expect(dt1).NotTo(Equal(dt2))
	// The SpaceRequest and the target of one claim never share a name.
	g.Expect(sr1).NotTo(Equal(dt1))
}

func TestProvisionerNameIsTheDevsandboxOne(t *testing.T) {
	g := NewWithT(t)
	// api.md: the only supported provisioner is "appstudio.redhat.com/devsandbox".
	g.Expect(Name).To(Equal("appstudio.redhat.com/devsandbox"))
	g.Expect(Name).NotTo(Equal(provisioner.Name), "each provisioner handles the claims marked for it only")
	// The claim-name label must stay a valid label key.
	g.Expect(validation.IsQualifiedName(LabelClaimName)).To(BeEmpty())
	g.Expect(validation.IsQualifiedName(LabelClaimUID)).To(BeEmpty())
}
