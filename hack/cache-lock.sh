# Sourced by the scripts that build and cache tools (control plane, node
# binaries, helm, promtool, golangci-lint).
#
# cache_lock NAME DEST takes an exclusive lock on NAME under $CACHE_ROOT,
# held until the script exits: concurrent runs (test packages started at
# once on a fresh machine) wait for the one that builds DEST instead of
# building into the same directory. The caller checks again whether DEST
# is complete once it holds the lock.
cache_lock() {
  mkdir -p "$CACHE_ROOT"
  exec 9>"$CACHE_ROOT/$1.lock"
  if ! flock -n 9; then
    echo "$1: waiting for another build of $2" >&2
    flock 9
  fi
}

# cache_hit_or_lock NAME DEST [SHOWN] prints SHOWN (DEST by default) and
# ends the calling script when DEST is complete; otherwise it takes NAME's
# lock and checks again, so one run builds DEST while the others wait and
# then find it.
cache_hit_or_lock() {
  local shown="${3:-$2}"
  if [[ -f "$2/.complete" ]]; then
    echo "$shown"
    exit 0
  fi
  cache_lock "$1" "$2"
  if [[ -f "$2/.complete" ]]; then
    echo "$shown"
    exit 0
  fi
}

# go_install_cached NAME VERSION PACKAGE LDFLAGS VERSION-ARGS... builds a Go
# command from the Go module proxy once into $CACHE_ROOT/NAME/VERSION and
# prints the binary's path on stdout (progress on stderr); the calling
# script's last step, as a cache hit ends it. Only the module
# proxy is reachable where this project is built, not the tools' release
# downloads. LDFLAGS stamp the version so the binary tells which one the
# tests used; VERSION-ARGS make it print that version into the build log.
go_install_cached() {
  local name="$1" version="$2" pkg="$3" ldflags="$4"
  shift 4
  local dest="$CACHE_ROOT/$name/$version"
  cache_hit_or_lock "$name" "$dest" "$dest/$name"
  echo "$name: building $version from the Go module proxy into $dest (first time only; a few minutes cold)" >&2
  rm -rf "$dest.tmp"
  mkdir -p "$dest.tmp"
  # GOWORK=off: the project's settings must not leak into the tool's build.
  GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN="$dest.tmp" \
    go install -trimpath -ldflags "-s -w $ldflags" "$pkg" >&2
  "$dest.tmp/$name" "$@" 2>&1 | head -1 >&2
  rm -rf "$dest"
  mv "$dest.tmp" "$dest"
  touch "$dest/.complete"
  echo "$name: done" >&2
  echo "$dest/$name"
}
