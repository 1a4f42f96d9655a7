//go:build !crashpoints

package crashpoint

import "testing"

func TestAReleaseBuildIgnoresTheArmedPoint(t *testing.T) {
	// Release builds have no "crashpoints" tag: even with the variable set, as an operator
	// might copy it from a test setup, the process goes on.
	for _, p := range points {
		t.Run(p, func(t *testing.T) {
			t.Setenv(EnvVar, p)
			Hit(p)
		})
	}
}
