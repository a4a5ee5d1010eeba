#!/usr/bin/env bash
# Builds helm from the Go module proxy and caches it in a versioned
# directory, like hack/control-plane-binaries.sh does for the control
# plane. Prints the path of the helm binary on stdout; progress goes to
# stderr.
#
# Why build: only the Go module proxy is reachable here, not get.helm.sh.
# helm.sh/helm/v3 has no replace directives, so `go install` of its cmd
# works as it is.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-3.22.0}"
CACHE_ROOT="${ENI_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eni-operator}"
DEST="$CACHE_ROOT/helm/v${HELM_VERSION}"

if [[ -f "$DEST/.complete" ]]; then
  echo "$DEST/helm"
  exit 0
fi

# shellcheck source=cache-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache-lock.sh"
cache_lock helm "$DEST"
if [[ -f "$DEST/.complete" ]]; then
  echo "$DEST/helm"
  exit 0
fi

log() { echo "helm-binary: $*" >&2; }
log "building helm v${HELM_VERSION} from the Go module proxy into $DEST (first time only; a few minutes cold)"

rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp"
# GOWORK=off: the project's settings must not leak into the tool's build.
# The version is stamped so `helm version` tells which helm the tests used.
GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN="$DEST.tmp" \
  go install -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION}" \
  "helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}" >&2

"$DEST.tmp/helm" version --short >&2

rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
touch "$DEST/.complete"
log "done"
echo "$DEST/helm"
