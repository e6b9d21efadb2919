#!/usr/bin/env bash
# Builds what the e2e suites need beyond the controller: the local control
# plane (hack/tools/build.sh's default groups) and the real node with its
# images (`node`), side by side. On a new machine the control plane is
# compiling (two cores, about ten minutes), and the images are mostly
# downloading and unpacking Debian packages: the images no longer wait for
# the compiler. The Debian packages are installed first, one apt at a time.
# Up to date, it takes a second, as build.sh does.
#
# Usage: hack/tools/build-e2e.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD="$ROOT/hack/tools/build.sh"
mkdir -p "$ROOT/_output"

# shellcheck source=hack/lib/node-packages.sh
source "$ROOT/hack/lib/node-packages.sh"
# (The node's, the images' builder's, and the pause binary's compiler.)
"$ROOT/hack/tools/debian-deps.sh" "${NODE_DEBIAN_PACKAGES[@]}" mmdebstrap:mmdebstrap gcc:gcc libc6-dev:/usr/include/stdio.h
# The real-node suite's Prometheus server (and promtool), out of Debian's package.
"$ROOT/hack/tools/prometheus.sh"

# The images need the node's helpers and the pause binary (its image).
log="$ROOT/_output/build-images.log"
"$BUILD" node-tools pause images > "$log" 2>&1 &
images=$!
# Stopped with this script, whichever way it ends.
trap 'kill "$images" 2>/dev/null || true' EXIT

rc=0
"$BUILD" etcd kube kwok kwok-stage versitygw containerd coredns || rc=$?
images_rc=0
wait "$images" || images_rc=$?
trap - EXIT
cat "$log" >&2
if ((images_rc != 0)); then
  echo "build-e2e: the images failed (exit $images_rc); their log is above and in $log" >&2
fi
exit $((rc != 0 ? rc : images_rc))
