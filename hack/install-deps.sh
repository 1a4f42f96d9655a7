#!/usr/bin/env bash
# Installs the system packages that tests and the local stack need, from Debian's packages,
# when they are missing: PostgreSQL (server + contrib for pg_stat_statements), git (the
# end-to-end Git server and Argo CD's repo server use it), Redis (Argo CD's cache), the files
# of the images' base (ca-certificates, tzdata), and what the one-node cluster (make cluster)
# runs: containerd, runc, the CNI plugins and iptables.
# Safe to run repeatedly; does nothing when everything is present.
set -euo pipefail

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql postgresql-contrib)
ls /usr/lib/postgresql/*/lib/pg_stat_statements.so >/dev/null 2>&1 || missing+=(postgresql-contrib)
command -v git >/dev/null 2>&1 || missing+=(git)
# Argo CD's repo server clones ssh:// repositories with the ssh client.
command -v ssh >/dev/null 2>&1 || missing+=(openssh-client)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ -f /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
[ -f /usr/share/zoneinfo/UTC ] || missing+=(tzdata)
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
# The install guide makes the webhook certificate with openssl.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "[install-deps] installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The Debian package starts a system-wide cluster; the project runs its own throwaway ones.
if command -v pg_lsclusters >/dev/null 2>&1; then
  $sudo pg_ctlcluster --force "$(pg_lsclusters -h | awk 'NR==1{print $1}')" main stop 2>/dev/null || true
fi
# Likewise Redis: the stack starts its own on a free port.
if command -v systemctl >/dev/null 2>&1; then $sudo systemctl stop redis-server 2>/dev/null || true; fi
if command -v service >/dev/null 2>&1; then $sudo service redis-server stop >/dev/null 2>&1 || true; fi
# And containerd: the one-node cluster runs its own, with its own state and socket.
if command -v systemctl >/dev/null 2>&1; then $sudo systemctl disable --now containerd 2>/dev/null || true; fi
if command -v service >/dev/null 2>&1; then $sudo service containerd stop >/dev/null 2>&1 || true; fi
