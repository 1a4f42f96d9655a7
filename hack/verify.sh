#!/usr/bin/env bash
# Fails when generated files are stale, code is unformatted, go.mod files are untidy or
# lint fails. Regenerated files are left in place, so a failing run also fixes them.
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(api db-schema backend-shared backend cluster-agent appstudio-controller tests-e2e)
status=0
fail() { echo "verify: $*" >&2; status=1; }

generated() { find api backend-shared/argocd/v1alpha1 -name 'zz_generated*.go'; find manifests/crd manifests/webhook manifests/rbac manifests/argocd/upstream docs/api -type f; }
before=$(generated | sort | xargs sha256sum)
make -s generate manifests api-docs argocd-manifests
after=$(generated | sort | xargs sha256sum)
[ "$before" == "$after" ] || fail "generated files were stale (now regenerated): $(diff <(echo "$before") <(echo "$after") | grep '^>' | awk '{print $3}' | tr '\n' ' ')"

unformatted=$(gofmt -l "${modules[@]}" hack)
[ -z "$unformatted" ] || fail "gofmt wants changes in: $unformatted"

for m in "${modules[@]}" hack/tools hack/kube-binaries hack/etcd hack/images hack/coredns hack/argocd hack/promrules; do
  (cd "$m" && GOWORK=off go mod tidy -diff >/dev/null 2>&1) || fail "$m/go.mod is not tidy (run make tidy)"
done

make -s lint || fail "lint failed"
# govulncheck needs the vulnerability database, which is not on the package registries:
# verify runs it when GOVULNDB names a reachable copy (a URL or file:// mirror).
if [ -n "${GOVULNDB:-}" ]; then
  make -s vulncheck || fail "govulncheck found vulnerabilities"
else
  echo "verify: govulncheck not run (set GOVULNDB, e.g. https://vuln.go.dev, or run make vulncheck)"
fi
exit $status
