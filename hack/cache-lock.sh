# Sourced by the scripts that build and cache tools (control plane, helm).
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
