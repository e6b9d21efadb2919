#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy into _output/bin:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and
# kwok, plus kwok's stage files (kwok-stage/), which local-up.sh reads, and
# versitygw, the S3-compatible object store local-up.sh starts beside it. The
# kubelet and kube-proxy of the optional real node come out of the same go
# build as the control plane. Each group carries a stamp of the pinned
# versions and of the Go toolchain, and is rebuilt only when that stamp
# changes.
#
# The rest of the real node (LOCAL_REAL_NODE=1 in hack/local-up.sh) is in
# groups of its own, built only when asked for (`node`, or `make node`):
#   containerd   containerd, containerd-shim-runc-v2 and ctr (containerd v2)
#   pause        the pause binary, compiled from the Kubernetes module's C source
#   coredns      CoreDNS with the kubernetes plugin (hack/tools/coredns)
#   node-tools   ociarchive and netnsproxy (hack/tools/node)
#   images       the node's images, built by hack/images/build.sh into _output/images
#
# Usage: hack/tools/build.sh [GROUP...]   (groups: etcd kube kwok kwok-stage
# versitygw, containerd pause coredns node-tools images, and `node` for the
# last five; the default is the control plane: etcd kube kwok kwok-stage
# versitygw)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TOOLS="$ROOT/hack/tools"
BIN="${BIN_DIR:-$ROOT/_output/bin}"
KUBE_VERSION=v1.37.1
KWOK_VERSION=v0.8.0
VERSITYGW_VERSION=v1.8.0
CONTAINERD_VERSION=v2.4.2
mkdir -p "$BIN"

log() { printf '[build-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck source=hack/lib/build-cache.sh
source "$ROOT/hack/lib/build-cache.sh"

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

GROUPS_WANTED=()
for g in "$@"; do
  case "$g" in
    etcd|kube|kwok|kwok-stage|versitygw|containerd|pause|coredns|node-tools|images) GROUPS_WANTED+=("$g") ;;
    node) GROUPS_WANTED+=(containerd pause coredns node-tools images) ;;
    *) echo "build-tools: unknown group '$g' (etcd kube kwok kwok-stage versitygw containerd pause coredns node-tools images node)" >&2; exit 2 ;;
  esac
done
((${#GROUPS_WANTED[@]} > 0)) || GROUPS_WANTED=(etcd kube kwok kwok-stage versitygw)
wanted() {
  local g
  for g in "${GROUPS_WANTED[@]}"; do [[ "$g" == "$1" ]] && return 0; done
  return 1
}

# build_group NAME STAMP COMMAND OUTPUT... runs COMMAND unless every OUTPUT
# (a binary, or a directory) in $BIN is there with the same stamp.
build_group() {
  local name=$1 stamp=$2 cmd=$3; shift 3
  wanted "$name" || return 0
  if up_to_date "$name" "$stamp" "$@"; then
    log "$name: up to date ($*)"
    return
  fi
  rm -f "$BIN/.$name.stamp"
  local start=$SECONDS
  if cache_get "tools/$name" "$stamp" "$BIN"; then
    echo "$stamp" > "$BIN/.$name.stamp"
    if up_to_date "$name" "$stamp" "$@"; then
      log "$name: copied from the build cache ($DBC_BUILD_CACHE) in $((SECONDS - start))s"
      return
    fi
    rm -f "$BIN/.$name.stamp"
  fi
  log "$name: building $*"
  eval "$cmd"
  echo "$stamp" > "$BIN/.$name.stamp"
  cache_put "tools/$name" "$stamp" "$BIN" "$@"
  log "$name: built in $((SECONDS - start))s"
}

# etcd: a small main around etcdmain, pinned in hack/tools/etcd/go.mod.
build_group etcd "$(stamp_of "$TOOLS/etcd/go.mod" "$TOOLS/etcd/go.sum" "$TOOLS/etcd/main.go")" \
  '(cd "$TOOLS/etcd" && go build -ldflags "-s -w" -o "$BIN/etcd" .)' etcd

# Kubernetes: one go build for the control plane and the real node's kubelet
# and kube-proxy, so they share compiled packages.
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean"
done
build_group kube "$(stamp_of "$TOOLS/kube/go.mod" "$TOOLS/kube/go.sum" <(echo "$kube_ldflags"))" \
  '(cd "$TOOLS/kube" && go build -ldflags "$kube_ldflags" -o "$BIN/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
      k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)' \
  kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy

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

# versitygw (Apache-2.0): an S3-compatible gateway over a directory (its
# posix backend), the object store of the local cluster's backups. Static,
# at a pinned version; its own go.mod pins its dependencies.
build_group versitygw "$(stamp_of <(echo "$VERSITYGW_VERSION"))" \
  '(cd "$TOOLS" && CGO_ENABLED=0 GOBIN="$BIN" go install -ldflags "-s -w" "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION")' versitygw

# ---------------------------------------------------------------------------
# The real node.

# containerd v2 from the Go module proxy, without the btrfs and devmapper
# snapshotters (the node uses overlayfs; they would need C headers).
build_group containerd "$(stamp_of <(echo "$CONTAINERD_VERSION no_btrfs no_devmapper"))" \
  '(cd "$TOOLS" && GOBIN="$BIN" go install -ldflags "-s -w" -tags "no_btrfs no_devmapper" \
      "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION")' \
  containerd containerd-shim-runc-v2 ctr

# The pause binary, the sandbox image's only file: compiled statically from
# the C source in the pinned Kubernetes module (build/pause/linux/pause.c).
build_pause() {
  local dir
  "$ROOT/hack/tools/debian-deps.sh" gcc:gcc libc6-dev:/usr/include/stdio.h
  # go list -m names no directory for a module not yet downloaded: on a
  # fresh machine with the kube group not built first, download it.
  (cd "$TOOLS/kube" && go mod download k8s.io/kubernetes)
  dir=$(cd "$TOOLS/kube" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
  [[ -f "$dir/build/pause/linux/pause.c" ]] || { echo "build-tools: no build/pause/linux/pause.c in $dir" >&2; return 1; }
  gcc -Os -static -Wall -Werror -DVERSION="$PAUSE_VERSION" -o "$BIN/pause" "$dir/build/pause/linux/pause.c"
  strip "$BIN/pause"
}
PAUSE_VERSION=v3.10.2
build_group pause "$(stamp_of "$TOOLS/kube/go.sum" <(echo "$PAUSE_VERSION"; gcc --version 2>/dev/null | head -1))" build_pause pause

# CoreDNS, for the node's cluster DNS: a main of our own with only the
# plugins it uses (hack/tools/coredns).
build_group coredns "$(stamp_of "$TOOLS/coredns/go.mod" "$TOOLS/coredns/go.sum" "$TOOLS/coredns/main.go")" \
  '(cd "$TOOLS/coredns" && go build -ldflags "-s -w" -o "$BIN/coredns" .)' coredns

# ociarchive (writes the node's OCI image archives) and netnsproxy (lets
# the node, in a network namespace of its own, reach the API server).
build_group node-tools "$(stamp_of "$TOOLS/node/go.mod" "$TOOLS/node/go.sum" "$TOOLS"/node/*/*.go)" \
  '(cd "$TOOLS/node" && go build -ldflags "-s -w" -o "$BIN/" ./ociarchive ./netnsproxy)' ociarchive netnsproxy

# The node's Debian packages (runc, the CNI plugins, iptables, ...),
# installed with the node rather than at its first start.
if wanted containerd; then
  # shellcheck source=hack/lib/node-packages.sh
  source "$ROOT/hack/lib/node-packages.sh"
  "$ROOT/hack/tools/debian-deps.sh" "${NODE_DEBIAN_PACKAGES[@]}"
fi

# The node's images: hack/images/build.sh keeps stamps of its own, per image.
if wanted images; then
  "$ROOT/hack/images/build.sh"
fi
log "done: the binaries are in $BIN"
