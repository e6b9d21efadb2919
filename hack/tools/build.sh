#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy into _output/bin:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and
# kwok, plus kwok's stage files (kwok-stage/), which local-up.sh reads. Each
# group carries a stamp of the pinned versions and of the Go toolchain, and
# is rebuilt only when that stamp changes.
#
# Usage: hack/tools/build.sh [GROUP...]   (groups: etcd kube kwok kwok-stage;
# the default is all of them)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TOOLS="$ROOT/hack/tools"
BIN="${BIN_DIR:-$ROOT/_output/bin}"
KUBE_VERSION=v1.37.1
KWOK_VERSION=v0.8.0
mkdir -p "$BIN"

log() { printf '[build-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# stamp_of NAME INPUT... prints a digest of the inputs plus the Go version.
stamp_of() {
  { go version; cat "$@"; } | sha256sum | cut -d' ' -f1
}

# up_to_date NAME STAMP BINARIES... is true when every binary exists and the
# stamp recorded with them matches.
up_to_date() {
  local name=$1 stamp=$2; shift 2
  [[ -f "$BIN/.$name.stamp" && "$(cat "$BIN/.$name.stamp")" == "$stamp" ]] || return 1
  for b in "$@"; do [[ -x "$BIN/$b" ]] || return 1; done
}

GROUPS_WANTED=("$@")
wanted() {
  [[ ${#GROUPS_WANTED[@]} -eq 0 ]] && return 0
  local g
  for g in "${GROUPS_WANTED[@]}"; do [[ "$g" == "$1" ]] && return 0; done
  return 1
}
for g in "${GROUPS_WANTED[@]}"; do
  case "$g" in etcd|kube|kwok|kwok-stage) ;; *) echo "build-tools: unknown group '$g' (etcd kube kwok kwok-stage)" >&2; exit 2 ;; esac
done

# build_group NAME STAMP COMMAND OUTPUT... runs COMMAND unless every OUTPUT
# (a binary, or a directory) in $BIN is there with the same stamp.
build_group() {
  local name=$1 stamp=$2 cmd=$3; shift 3
  wanted "$name" || return 0
  if up_to_date "$name" "$stamp" "$@"; then
    log "$name: up to date ($*)"
    return
  fi
  log "$name: building $*"
  local start=$SECONDS
  rm -f "$BIN/.$name.stamp"
  eval "$cmd"
  echo "$stamp" > "$BIN/.$name.stamp"
  log "$name: built in $((SECONDS - start))s"
}

# etcd: a small main around etcdmain, pinned in hack/tools/etcd/go.mod.
build_group etcd "$(stamp_of "$TOOLS/etcd/go.mod" "$TOOLS/etcd/go.sum" "$TOOLS/etcd/main.go")" \
  '(cd "$TOOLS/etcd" && go build -ldflags "-s -w" -o "$BIN/etcd" .)' etcd

# Kubernetes: one go build for all four commands, so they share compiled packages.
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean"
done
build_group kube "$(stamp_of "$TOOLS/kube/go.mod" "$TOOLS/kube/go.sum" <(echo "$kube_ldflags"))" \
  '(cd "$TOOLS/kube" && go build -ldflags "$kube_ldflags" -o "$BIN/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)' \
  kube-apiserver kube-controller-manager kube-scheduler kubectl

# kwok: installed at a pinned version; its own go.mod pins its dependencies.
build_group kwok "$(stamp_of <(echo "$KWOK_VERSION"))" \
  '(cd "$TOOLS" && GOBIN="$BIN" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")' kwok

# kwok's stage configs ship in its module source, not in its binary. They are
# copied next to it, so that local-up.sh reads neither the module cache (empty
# on a new machine) nor the network. `go mod download` runs outside any
# module, so that no go.mod or go.sum is touched.
copy_kwok_stages() {
  local dir
  dir=$(cd / && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [[ -z "$dir" || ! -d "$dir/kustomize/stage" ]]; then
    echo "build-tools: kwok $KWOK_VERSION has no kustomize/stage in its module source ('$dir')" >&2
    return 1
  fi
  rm -rf "$BIN/kwok-stage"
  cp -R "$dir/kustomize/stage" "$BIN/kwok-stage"
  chmod -R u+w "$BIN/kwok-stage"
}
build_group kwok-stage "$(stamp_of <(echo "$KWOK_VERSION"))" copy_kwok_stages kwok-stage
log "done: the control-plane binaries are in $BIN"
