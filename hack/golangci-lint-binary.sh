#!/usr/bin/env bash
# Builds golangci-lint (v2) from the Go module proxy and caches it in a
# versioned directory (hack/cache-lock.sh), like hack/promtool-binary.sh
# does for promtool. Prints the path of the golangci-lint binary on stdout;
# progress goes to stderr. The Makefile's GOLANGCI_LINT_VERSION is the same
# as the default here (a test checks).
set -euo pipefail

GOLANGCI_LINT_VERSION="${GOLANGCI_LINT_VERSION:-2.15.0}"
CACHE_ROOT="${ENI_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eni-operator}"

# shellcheck source=cache-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache-lock.sh"
go_install_cached golangci-lint "v${GOLANGCI_LINT_VERSION}" \
  "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v${GOLANGCI_LINT_VERSION}" \
  "-X main.version=${GOLANGCI_LINT_VERSION}" --version
