#!/usr/bin/env bash
# Importing Argo CD's API types brings k8s.io/kubernetes into the module graph, which requires
# every Kubernetes staging module at v0.0.0. Each module that (transitively) imports them needs
# the same replace block as Argo CD's own go.mod. This script writes that block, taken from the
# pinned Argo CD version's go.mod in the module cache, into every such module.
#   hack/sync-replaces.sh          rewrite the blocks
#   hack/sync-replaces.sh --check  exit 1 if any block is stale
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
argocd_version=v3.2.11
modules=(backend-shared backend cluster-agent appstudio-controller tests-e2e)

modfile=$(cd "$root/backend-shared" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "github.com/argoproj/argo-cd/v3@$argocd_version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
block=$( {
  echo "// Kubernetes staging modules pinned as Argo CD $argocd_version pins them (hack/sync-replaces.sh)."
  echo "replace ("
  sed -n '/^replace (/,/^)/p' "$modfile" | grep -E '^\s+k8s\.io/' | sed 's/^\s*/\t/'
  echo ")"
} )

status=0
for m in "${modules[@]}"; do
  f="$root/$m/go.mod"
  [ -f "$f" ] || continue
  current=$(awk '/^\/\/ Kubernetes staging modules pinned/{p=1} p{print} p&&/^\)/{exit}' "$f")
  if [ "$current" == "$block" ]; then continue; fi
  if [ "${1:-}" == "--check" ]; then echo "stale replace block in $m/go.mod (run hack/sync-replaces.sh)" >&2; status=1; continue; fi
  # Drop the old block (if any), then append the new one.
  awk '/^\/\/ Kubernetes staging modules pinned/{skip=1} !skip{print} skip&&/^\)/{skip=0}' "$f" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$f.tmp"
  printf '\n%s\n' "$block" >> "$f.tmp"
  mv "$f.tmp" "$f"
  echo "updated $m/go.mod"
done
exit $status
