#!/usr/bin/env bash
# Builds helm from the Go module proxy and caches it in a versioned
# directory (hack/cache-lock.sh), like hack/control-plane-binaries.sh does
# for the control plane. Prints the path of the helm binary on stdout;
# progress goes to stderr. helm.sh/helm/v3 has no replace directives, so
# `go install` of its cmd works as it is.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-3.22.0}"
CACHE_ROOT="${ENI_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eni-operator}"

# shellcheck source=cache-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/cache-lock.sh"
go_install_cached helm "v${HELM_VERSION}" "helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}" \
  "-X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION}" version --short
