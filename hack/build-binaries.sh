#!/usr/bin/env bash
# Builds the third-party binaries that tests and the local stack run (kube-apiserver,
# kube-controller-manager, etcd, Argo CD) from Go modules, one at a time, and caches
# them in a directory keyed by the wrapper module's go.sum and the Go version. A cached
# build is reused as is; delete the cache directory to force a rebuild.
#
# Usage: hack/build-binaries.sh [kube|etcd|argocd|coredns|all]   (default: all)
#        hack/build-binaries.sh --assets-dir               print the envtest assets directory
#        hack/build-binaries.sh --argocd-dir               print the Argo CD directory
#        hack/build-binaries.sh --kube-dir                 print the Kubernetes binaries' directory
#        hack/build-binaries.sh --coredns                  print the CoreDNS binary's path
# Progress goes to stderr. After building, $cache/envtest-assets holds links to kube-apiserver,
# kube-controller-manager and etcd: point KUBEBUILDER_ASSETS at it (the Makefile does), and
# $cache/argocd holds the Argo CD binary under each of its role names (ARGOCD_BIN_DIR).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache_root=${GITOPS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gitops-service}

kube_version=1.37.1

log() { printf '[build-binaries] %s\n' "$*" >&2; }

# cache_dir NAME WRAPPER_DIR: the cache directory for a wrapper module's build.
cache_dir() {
  local key
  key=$( (cat "$root/$2/go.mod" "$root/$2/go.sum"; find "$root/$2" -name '*.go' -print0 | sort -z | xargs -0 cat; go env GOVERSION) | sha256sum | cut -c1-16)
  printf '%s/bin/%s-%s\n' "$cache_root" "$1" "$key"
}

# build NAME WRAPPER_DIR LDFLAGS PACKAGES...: builds into the cache unless already there.
build() {
  local name=$1 dir=$2 ldflags=$3; shift 3
  local out; out=$(cache_dir "$name" "$dir")
  if [ -f "$out/.complete" ]; then
    log "$name: cached in $out"
    return
  fi
  log "$name: building into $out (cold builds take minutes; progress is Go's own output)"
  local tmp="$out.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  local start=$SECONDS
  (cd "$root/$dir" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "$@")
  touch "$tmp/.complete"
  rm -rf "$out"; mv "$tmp" "$out"
  log "$name: built in $((SECONDS - start))s"
}

kube_ldflags() {
  local major=${kube_version%%.*} minor; minor=${kube_version#*.}; minor=${minor%%.*}
  local x
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $pkg.gitVersion=v$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  printf -- '-s -w%s' "$x"
}

# One build for the test control plane and the one-node cluster (make cluster): kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy, the kubelet and kubectl.
build_kube() { build kube hack/kube-binaries "$(kube_ldflags)" ./cmd/...; }
build_etcd() { build etcd hack/etcd "-s -w" . ; }
# The one-node cluster's DNS (make cluster).
build_coredns() { build coredns hack/coredns "-s -w" . ; }
build_argocd() { build argocd hack/argocd "-s -w" . ; }

# link_assets points the envtest assets directory at the current builds.
link_assets() {
  local assets="$cache_root/envtest-assets" kube etcd
  kube=$(cache_dir kube hack/kube-binaries); etcd=$(cache_dir etcd hack/etcd)
  mkdir -p "$assets"
  [ -f "$kube/.complete" ] && ln -sfn "$kube/kube-apiserver" "$assets/kube-apiserver" && ln -sfn "$kube/kube-controller-manager" "$assets/kube-controller-manager"
  [ -f "$etcd/.complete" ] && ln -sfn "$etcd/etcd" "$assets/etcd"
  local argocd; argocd=$(cache_dir argocd hack/argocd)
  if [ -f "$argocd/.complete" ]; then
    # The repo server runs `argocd` as Git's credential helper; the other names pick the role.
    mkdir -p "$cache_root/argocd"
    for name in argocd argocd-application-controller argocd-repo-server argocd-git-ask-pass; do
      ln -sfn "$argocd/argocd" "$cache_root/argocd/$name"
    done
  fi
  return 0
}

case "${1:-all}" in
  --assets-dir) echo "$cache_root/envtest-assets" ;;
  --argocd-dir) echo "$cache_root/argocd" ;;
  --kube-dir) cache_dir kube hack/kube-binaries ;;
  --coredns) printf '%s/coredns\n' "$(cache_dir coredns hack/coredns)" ;;
  kube) build_kube; link_assets ;;
  etcd) build_etcd; link_assets ;;
  argocd) build_argocd; link_assets ;;
  coredns) build_coredns ;;
  all) build_etcd; build_kube; build_argocd; build_coredns; link_assets ;;
  *) echo "usage: $0 [kube|etcd|argocd|coredns|all] | --assets-dir | --argocd-dir | --kube-dir | --coredns" >&2; exit 2 ;;
esac
