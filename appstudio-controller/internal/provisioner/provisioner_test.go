package provisioner

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func claim(namespace, name, uid string) *appstudio.DeploymentTargetClaim {
	return &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid)}}
}

func uidHash(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return hex.EncodeToString(sum[:])[:10]
}

func TestNamesOfTheProvisionedObjects(t *testing.T) {
	const uid = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	h := uidHash(uid)
	tests := []struct {
		name          string
		claim         *appstudio.DeploymentTargetClaim
		wantNamespace string
		wantTarget    string
	}{
		{"short names", claim("team-a", "prod-dtc", uid), "team-a-dt-" + h, "prod-dtc-dt-" + h},
		// The namespace name must be a DNS label (63 characters): the claim's namespace is cut to 40.
		{"a long namespace", claim(strings.Repeat("n", 63), "prod-dtc", uid), strings.Repeat("n", 40) + "-dt-" + h, "prod-dtc-dt-" + h},
		// The target name must fit an object name (253): the claim's name is cut to 200.
		{"a long claim", claim("team-a", strings.Repeat("c", 253), uid), "team-a-dt-" + h, strings.Repeat("c", 200) + "-dt-" + h},
		// A cut that ends in a dot would put a label starting with a hyphen into the name.
		{"a long claim cut at a dot", claim("team-a", strings.Repeat("c", 199)+".d", uid), "team-a-dt-" + h, strings.Repeat("c", 199) + "-dt-" + h},
		{"a long namespace cut at a hyphen", claim(strings.Repeat("n", 39)+"-x", "prod-dtc", uid), strings.Repeat("n", 39) + "-dt-" + h, "prod-dtc-dt-" + h},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns, dt := Names(tt.claim)
			g.Expect(ns).To(Equal(tt.wantNamespace))
			g.Expect(dt).To(Equal(tt.wantTarget))
			g.Expect(validation.IsDNS1123Label(ns)).To(BeEmpty(), "a namespace name")
			g.Expect(validation.IsDNS1123Subdomain(dt)).To(BeEmpty(), "an object name")
		})
	}
}

// A claim deleted and created again with the same name gets new objects: the names follow
// the claim's UID, so the old claim's retained namespace is never taken over.
func TestNamesDifferForARecreatedClaim(t *testing.T) {
	g := NewWithT(t)
	ns1, dt1 := Names(claim("team-a", "prod-dtc", "uid-1"))
	ns2, dt2 := Names(claim("team-a", "prod-dtc", "uid-2"))
	g.Expect(ns1).NotTo(Equal(ns2))
	g.Expect(dt1).NotTo(Equal(dt2))
	again1, againDT1 := Names(claim("team-a", "prod-dtc", "uid-1"))
	g.Expect([]string{again1, againDT1}).To(Equal([]string{ns1, dt1}), "deterministic")
}

func TestClaimHashAndName(t *testing.T) {
	g := NewWithT(t)
	c := claim("team-a", "prod-dtc", "uid-1")
	g.Expect(ClaimHash(c)).To(Equal(uidHash("uid-1")))
	g.Expect(ClaimHash(c)).To(MatchRegexp(`^[0-9a-f]{10}$`))
	g.Expect(ClaimName(c)).To(Equal("prod-dtc"))
	g.Expect(ClaimName(claim("team-a", strings.Repeat("c", 201), "u"))).To(HaveLen(200))
}

func TestKubeconfigOfTheProvisionedServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	out, err := Kubeconfig("https://127.0.0.1:6443", "team-a-dt-0123456789", ca, []byte("sa-token"))
	g.Expect(err).NotTo(HaveOccurred())

	cfg, err := clientcmd.Load(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.CurrentContext).NotTo(BeEmpty())
	ctx := cfg.Contexts[cfg.CurrentContext]
	g.Expect(ctx).NotTo(BeNil())
	// Defaults to the provisioned namespace: the ServiceAccount has rights there only.
	g.Expect(ctx.Namespace).To(Equal("team-a-dt-0123456789"))
	cluster := cfg.Clusters[ctx.Cluster]
	g.Expect(cluster).NotTo(BeNil())
	// The managed environment checks that a cluster's server equals the target's apiURL.
	g.Expect(cluster.Server).To(Equal("https://127.0.0.1:6443"))
	g.Expect(cluster.CertificateAuthorityData).To(Equal(ca))
	g.Expect(cluster.InsecureSkipTLSVerify).To(BeFalse())
	user := cfg.AuthInfos[ctx.AuthInfo]
	g.Expect(user).NotTo(BeNil())
	g.Expect(user.Token).To(Equal("sa-token"))
	// No exec plugin or client certificate: the token is the only credential.
	g.Expect(user.Exec).To(BeNil())
	g.Expect(user.ClientCertificateData).To(BeEmpty())

	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rest.Host).To(Equal("https://127.0.0.1:6443"))
	g.Expect(rest.BearerToken).To(Equal("sa-token"))
}

// The ServiceAccount gets DeployerRole in its own namespace only (a RoleBinding, not a
// ClusterRoleBinding), and not the built-in admin role.
func TestDeployerBindingGrantsTheDeployerRoleInItsNamespace(t *testing.T) {
	g := NewWithT(t)
	rb := deployerBinding("team-a-dt-0123456789")
	g.Expect(rb.Namespace).To(Equal("team-a-dt-0123456789"))
	g.Expect(rb.Name).To(Equal(RoleBindingName))
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "gitops-service-namespace-deployer"}))
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "team-a-dt-0123456789", Name: ServiceAccountName}}))
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcde", 5, "abcde"},
		{"abcdef", 5, "abcde"},
		{"", 3, ""},
		{"abcd.efg", 5, "abcd"},
		{"ab-.-fg", 5, "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			NewWithT(t).Expect(truncate(tt.in, tt.n)).To(Equal(tt.want))
		})
	}
}
