#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and rule unit-test runner) from
# the Go module proxy and caches it in a versioned directory, like
# hack/helm-binary.sh does for helm. Prints the path of the promtool binary
# on stdout; progress goes to stderr.
#
# Why build: only the Go module proxy is reachable here, not the
# Prometheus release downloads. The version is the Go module version of
# github.com/prometheus/prometheus (v0.316.0 is Prometheus 3.16.0).
set -euo pipefail

PROMTOOL_VERSION="${PROMTOOL_VERSION:-0.316.0}"
CACHE_ROOT="${ENI_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eni-operator}"
DEST="$CACHE_ROOT/promtool/v${PROMTOOL_VERSION}"

if [[ -f "$DEST/.complete" ]]; then
  echo "$DEST/promtool"
  exit 0
fi

# shellcheck source=cache-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache-lock.sh"
cache_lock promtool "$DEST"
if [[ -f "$DEST/.complete" ]]; then
  echo "$DEST/promtool"
  exit 0
fi

log() { echo "promtool-binary: $*" >&2; }
log "building promtool v${PROMTOOL_VERSION} from the Go module proxy into $DEST (first time only; a few minutes cold)"

rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp"
# GOWORK=off: the project's settings must not leak into the tool's build.
# The version is stamped so `promtool --version` tells which one the tests
# used (the module version v0.3MM.P is Prometheus 3.MM.P).
GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN="$DEST.tmp" \
  go install -trimpath \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=module-v${PROMTOOL_VERSION}" \
  "github.com/prometheus/prometheus/cmd/promtool@v${PROMTOOL_VERSION}" >&2

"$DEST.tmp/promtool" --version 2>&1 | head -1 >&2

rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
touch "$DEST/.complete"
log "done"
echo "$DEST/promtool"
