# shellcheck shell=bash
# The build cache: what a build step made, kept outside the checkout by the
# stamp of its inputs (the same stamp that decides, in _output, whether the
# step runs again), so that another checkout of the same inputs (a clean
# clone, as CI makes) copies it instead of building it again: the control
# plane's binaries take minutes to link, and each of the node's images
# minutes to make out of Debian's packages. Each step keeps one entry, the
# last it made. Set DBC_BUILD_CACHE to another directory, or to nothing for no
# cache (every step runs; .ci/run's checks of a new machine do so).
DBC_BUILD_CACHE=${DBC_BUILD_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/database-controller}

# cache_get NAME STAMP DIR copies into DIR what the entry of NAME (say
# tools/kube) holds when it was made with STAMP; false, copying nothing,
# when there is no such entry.
cache_get() {
  local entry="$DBC_BUILD_CACHE/$1/$2" dir=$3 f
  [[ -n "$DBC_BUILD_CACHE" && -f "$entry/.complete" ]] || return 1
  for f in "$entry"/* "$entry"/.[!.]*; do
    [[ -e "$f" && "$(basename "$f")" != .complete ]] || continue
    rm -rf "${dir:?}/$(basename "$f")"
    cp -a "$f" "$dir/"
  done
}

# cache_put NAME STAMP DIR FILE... keeps the FILEs of DIR (those that
# exist) as the entry of NAME made with STAMP, in place of the one before.
cache_put() {
  [[ -n "$DBC_BUILD_CACHE" ]] || return 0
  local name=$1 stamp=$2 dir=$3 f tmp; shift 3
  mkdir -p "$DBC_BUILD_CACHE/$name"
  tmp=$(mktemp -d "$DBC_BUILD_CACHE/$name/.new.XXXXXX")
  for f in "$@"; do
    [[ -e "$dir/$f" ]] && cp -a "$dir/$f" "$tmp/"
  done
  touch "$tmp/.complete"
  find "$DBC_BUILD_CACHE/$name" -mindepth 1 -maxdepth 1 ! -path "$tmp" -exec rm -rf {} +
  mv "$tmp" "$DBC_BUILD_CACHE/$name/$stamp"
}
