#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from the Go module proxy and caches
# them in a versioned directory. Prints that directory (usable as
# KUBEBUILDER_ASSETS) on stdout; progress goes to stderr.
#
# Why build: setup-envtest cannot download release binaries here; only the Go
# module proxy is reachable. See docs/testing.md.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-3.7.0}"
CACHE_ROOT="${ENI_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eni-operator}"
DEST="$CACHE_ROOT/control-plane/k8s-v${K8S_VERSION}-etcd-v${ETCD_VERSION}"

# shellcheck source=cache-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache-lock.sh"
cache_hit_or_lock control-plane "$DEST"

log() { echo "control-plane-binaries: $*" >&2; }
log "building kube-apiserver v${K8S_VERSION}, kubectl and etcd v${ETCD_VERSION} from the Go module proxy into $DEST (first time only; ~10 min cold)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp"

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

# --- kube-apiserver + kubectl -------------------------------------------------
mkdir -p "$work/k8s"
cd "$work/k8s"
go mod init eni-operator.local/k8sbins >/dev/null 2>&1
go mod edit -go=1.26 -require="k8s.io/kubernetes@v${K8S_VERSION}"
modfile="$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
minor="${K8S_VERSION#*.}"
staging_version="v0.${minor}"
# Every staging replace of k8s.io/kubernetes' go.mod becomes the published module.
grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$modfile" | awk '{print $1}' | while read -r mod; do
  go mod edit -replace="${mod}=${mod}@${staging_version}"
done
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
log "resolving kubernetes modules"
go mod tidy >&2 2>&1 || go get k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl >&2
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=v${K8S_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor%%.*}"
done
log "compiling kube-apiserver"
go build -trimpath -ldflags "$ldflags" -o "$DEST.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
log "compiling kubectl"
go build -trimpath -ldflags "$ldflags" -o "$DEST.tmp/kubectl" k8s.io/kubernetes/cmd/kubectl

# --- etcd ---------------------------------------------------------------------
mkdir -p "$work/etcd"
cd "$work/etcd"
go mod init eni-operator.local/etcdbin >/dev/null 2>&1
go mod edit -go=1.26 -require="go.etcd.io/etcd/server/v3@v${ETCD_VERSION}"
cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
log "resolving etcd modules"
go mod tidy >&2 2>&1
log "compiling etcd"
go build -trimpath -ldflags "-s -w" -o "$DEST.tmp/etcd" .

"$DEST.tmp/kube-apiserver" --version >&2
"$DEST.tmp/etcd" --version >&2
"$DEST.tmp/kubectl" version --client >&2

rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
touch "$DEST/.complete"
log "done"
echo "$DEST"
