#!/usr/bin/env bash
# Installs what the e2e node takes from Debian's packages, when missing:
# containerd and runc (the container runtime), iptables (kube-proxy's
# rules) and iproute2 (the node's links). Needs root.
set -euo pipefail

missing=()
for cmd in containerd:containerd runc:runc ctr:containerd iptables:iptables iptables-restore:iptables ip:iproute2; do
  command -v "${cmd%%:*}" >/dev/null || missing+=("${cmd#*:}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "node-deps: the e2e node needs root; missing packages: ${missing[*]}" >&2
  exit 1
fi
echo "node-deps: apt-get install ${missing[*]}" >&2
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${missing[@]}" | sort -u) >&2
