#!/usr/bin/env bash
# Builds the parts of a real node that the control-plane cache lacks and
# caches them like hack/control-plane-binaries.sh does: kubelet, kube-proxy,
# kube-controller-manager and kube-scheduler from the Go module proxy at the
# control plane's Kubernetes version, and the CNI plugins (bridge,
# host-local, loopback, portmap) from github.com/containernetworking/plugins.
# Prints the directory on stdout (bin/ holds the Kubernetes binaries, cni/
# the plugins); progress goes to stderr. containerd and runc come from
# Debian's packages (hack/e2e/node-deps.sh).
#
# Why the same version as kube-apiserver (1.37): the skew policy allows it,
# and kubelet 1.37 still runs on cgroup v1 when its config says
# failCgroupV1: false (1.35 made refusing the default), and still falls
# back to its own cgroupDriver when the runtime lacks the RuntimeConfig CRI
# call (Debian's containerd 1.6; the fallback goes in 1.38).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.1}"
CNI_PLUGINS_VERSION="${CNI_PLUGINS_VERSION:-1.10.0}"
CACHE_ROOT="${ENI_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eni-operator}"
DEST="$CACHE_ROOT/node/k8s-v${K8S_VERSION}-cni-v${CNI_PLUGINS_VERSION}"

# shellcheck source=../cache-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cache-lock.sh"
cache_hit_or_lock node "$DEST"

log() { echo "node-binaries: $*" >&2; }
log "building kubelet, kube-proxy, kube-controller-manager, kube-scheduler v${K8S_VERSION} and CNI plugins v${CNI_PLUGINS_VERSION} into $DEST (first time only)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp/bin" "$DEST.tmp/cni"

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

# --- Kubernetes node and controller binaries ----------------------------------
# The same module set as hack/control-plane-binaries.sh: k8s.io/kubernetes
# with its staging replaces pointing at the published modules.
mkdir -p "$work/k8s"
cd "$work/k8s"
go mod init eni-operator.local/k8snode >/dev/null 2>&1
go mod edit -go=1.26 -require="k8s.io/kubernetes@v${K8S_VERSION}"
modfile="$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
minor="${K8S_VERSION#*.}"
grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$modfile" | awk '{print $1}' | while read -r mod; do
  go mod edit -replace="${mod}=${mod}@v0.${minor}"
done
cmds=(kubelet kube-proxy kube-controller-manager kube-scheduler)
{
  echo '//go:build tools'
  echo
  echo 'package tools'
  echo
  echo 'import ('
  for c in "${cmds[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
  echo ')'
} > tools.go
log "resolving kubernetes modules"
go mod tidy >&2 2>&1
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=v${K8S_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor%%.*}"
done
for c in "${cmds[@]}"; do
  log "compiling $c"
  go build -trimpath -ldflags "$ldflags" -o "$DEST.tmp/bin/$c" "k8s.io/kubernetes/cmd/$c"
done

# --- CNI plugins --------------------------------------------------------------
log "compiling CNI plugins"
GOBIN="$DEST.tmp/cni" go install -trimpath -ldflags "-s -w" \
  "github.com/containernetworking/plugins/plugins/main/bridge@v${CNI_PLUGINS_VERSION}" \
  "github.com/containernetworking/plugins/plugins/main/loopback@v${CNI_PLUGINS_VERSION}" \
  "github.com/containernetworking/plugins/plugins/ipam/host-local@v${CNI_PLUGINS_VERSION}" \
  "github.com/containernetworking/plugins/plugins/meta/portmap@v${CNI_PLUGINS_VERSION}" >&2

"$DEST.tmp/bin/kubelet" --version >&2

rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
touch "$DEST/.complete"
log "done"
echo "$DEST"
