#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and rule unit-test runner) from
# the Go module proxy and caches it in a versioned directory
# (hack/cache-lock.sh), like hack/helm-binary.sh does for helm. Prints the
# path of the promtool binary on stdout; progress goes to stderr. The
# version is the Go module version of github.com/prometheus/prometheus
# (v0.316.0 is Prometheus 3.16.0).
set -euo pipefail

PROMTOOL_VERSION="${PROMTOOL_VERSION:-0.316.0}"
CACHE_ROOT="${ENI_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eni-operator}"

# shellcheck source=cache-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache-lock.sh"
go_install_cached promtool "v${PROMTOOL_VERSION}" "github.com/prometheus/prometheus/cmd/promtool@v${PROMTOOL_VERSION}" \
  "-X github.com/prometheus/common/version.Version=module-v${PROMTOOL_VERSION}" --version
