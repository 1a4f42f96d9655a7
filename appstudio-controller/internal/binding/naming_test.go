package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDeploymentName(t *testing.T) {
	g := NewWithT(t)
	s := func(n int) string { return strings.Repeat("a", n) }
	hash := func(in string) string { h := sha256.Sum256([]byte(in)); return hex.EncodeToString(h[:]) }

	// binding(b) + app + env + comp + 3 dashes.
	full250 := []string{s(100), "app", "env", s(250 - 100 - 3 - 3 - 3)}
	full251 := []string{s(100), "app", "env", s(251 - 100 - 3 - 3 - 3)}
	short250 := []string{s(120), s(200), "env", s(250 - 120 - 1)}
	short251 := []string{s(120), s(200), "env", s(251 - 120 - 1)}

	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"short", []string{"b", "app", "env", "comp"}, "b-app-env-comp"},
		{"full name of exactly 250 is kept", full250, strings.Join(full250, "-")},
		{"full name of 251 drops application and environment", full251, full251[0] + "-" + full251[3]},
		{"short name of exactly 250 is kept", short250, short250[0] + "-" + short250[3]},
		{"short name of 251 is hashed", short251, (short251[0] + "-" + short251[3])[:180] + "-" + hash(strings.Join(short251, "-"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DeploymentName(tt.in[0], tt.in[1], tt.in[2], tt.in[3])
			NewWithT(t).Expect(got).To(Equal(tt.want))
			NewWithT(t).Expect(len(got)).To(BeNumerically("<=", MaxNameLength))
		})
	}
	g.Expect(len(strings.Join(full250, "-"))).To(Equal(250))
	g.Expect(len(strings.Join(full251, "-"))).To(Equal(251))
	g.Expect(len(short250[0] + "-" + short250[3])).To(Equal(250))
	g.Expect(len(short251[0] + "-" + short251[3])).To(Equal(251))
	g.Expect(len(DeploymentName(short251[0], short251[1], short251[2], short251[3]))).To(Equal(245))
	// A '-' at the cut is trimmed.
	g.Expect(DeploymentName(s(179)+"-x", "a", "e", s(200))).To(HavePrefix(s(179) + "-" + hash(s(179) + "-x-a-e-" + s(200))[:4]))
}
