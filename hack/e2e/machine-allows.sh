#!/usr/bin/env bash
# Says whether this machine can run `make e2e` (a real one-node cluster):
# exit 0 when it can, else 1 with what is missing on stderr. .ci/run asks
# it before running the suite; test/e2e/cluster.Check is the full check.
set -uo pipefail

missing=()
[[ $(id -u) -eq 0 ]] || missing+=("root (the kubelet, containerd and the CNI plugins change cgroups, mounts, links and iptables)")
for c in memory cpu cpuset pids devices freezer; do
  [[ -e /sys/fs/cgroup/$c/cgroup.procs ]] || missing+=("the cgroup v1 controller $c at /sys/fs/cgroup/$c (the node is set up for cgroup v1)")
done
have_all=1
for cmd in containerd runc ctr iptables ip; do command -v "$cmd" >/dev/null || have_all=0; done
if [[ $have_all -eq 0 ]] && ! command -v apt-get >/dev/null; then
  missing+=("containerd, runc, iptables and iproute2, or apt-get to install them (hack/e2e/node-deps.sh)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  printf 'this machine cannot run make e2e; it needs:\n' >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi
