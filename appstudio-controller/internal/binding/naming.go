package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLength is the longest generated GitOpsDeployment name kept as is.
const MaxNameLength = 250

// DeploymentName is the name of the GitOpsDeployment generated for component of a binding:
// "<binding>-<application>-<environment>-<component>"; past MaxNameLength characters
// "<binding>-<component>"; past that the first 180 characters of the latter, "-", and the
// sha256 hex digest of the full four-part name (245 characters). A '-' or '.' at the end of
// the 180-character prefix is trimmed so that the name stays a valid DNS subdomain.
func DeploymentName(binding, application, environment, component string) string {
	full := binding + "-" + application + "-" + environment + "-" + component
	if len(full) <= MaxNameLength {
		return full
	}
	short := binding + "-" + component
	if len(short) <= MaxNameLength {
		return short
	}
	sum := sha256.Sum256([]byte(full))
	return strings.TrimRight(short[:180], "-.") + "-" + hex.EncodeToString(sum[:])
}
