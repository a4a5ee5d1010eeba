#!/usr/bin/env bash
# Builds the previous release (the commit test/e2e/previous-release pins)
# once into a cache keyed by the commit, for make e2e's upgrade test:
# chart/ (that commit's charts/eni-operator) and its images, made by that
# commit's own hack/image from a git archive of it (no worktree: the
# checkout's state is left alone). Prints the directory on stdout;
# progress goes to stderr.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
commit="$(grep -v '^#' "$root/test/e2e/previous-release" | tr -d '[:space:]')"
CACHE_ROOT="${ENI_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eni-operator}"
DEST="$CACHE_ROOT/e2e-previous/$commit"

# shellcheck source=../cache-lock.sh
source "$root/hack/cache-lock.sh"
cache_hit_or_lock e2e-previous "$DEST"

log() { echo "previous-release: $*" >&2; }
log "building ${commit:0:12}'s chart and images into $DEST (first time only)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git -C "$root" archive "$commit" | tar -x -C "$work"
rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp"
cp -r "$work/charts/eni-operator" "$DEST.tmp/chart"
# The images' tag names the commit, so they sit beside make image's in
# containerd; the archive has no .git, so revision and time are passed.
# values: the chart values that pick these images (helm --set).
tag="e2e-previous-${commit:0:12}"
repo=ghcr.io/eni-operator/eni-operator
agent_repo=ghcr.io/eni-operator/eni-agent
(
  cd "$work"
  GOWORK=off SOURCE_DATE_EPOCH="$(git -C "$root" log -1 --format=%ct "$commit")" \
    go run ./hack/image --version "$tag" --revision "$commit" --repository "$repo" \
    --agent-repository "$agent_repo" --arch amd64 --out "$DEST.tmp" >&2
)
printf 'image.repository=%s\nimage.tag=%s\nagent.image.repository=%s\n' "$repo" "$tag" "$agent_repo" > "$DEST.tmp/values"
rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
touch "$DEST/.complete"
log "done"
echo "$DEST"
