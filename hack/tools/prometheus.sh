#!/usr/bin/env bash
# Puts promtool, the Prometheus project's rule checker and rule unit
# tester, at _output/bin/promtool: taken out of Debian's prometheus package
# (apt-get download, dpkg-deb -x), which is not installed, so that no
# Prometheus server is set up or started on the host. Done once; the
# package's version is kept beside it (_output/bin/.promtool.version).
#
# Usage: hack/tools/promtool.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN="${BIN_DIR:-$ROOT/_output/bin}"
[[ -x "$BIN/promtool" ]] && exit 0
mkdir -p "$BIN"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
if ! apt-get download -qq prometheus >/dev/null 2>&1; then
  # A new machine may have no package lists yet.
  if [[ $(id -u) -ne 0 ]]; then
    echo "promtool: apt-get download prometheus failed: run apt-get update as root, or put promtool at $BIN/promtool" >&2
    exit 1
  fi
  apt-get update -qq >&2
  apt-get download -qq prometheus >&2
fi
deb=$(ls prometheus_*.deb)
dpkg-deb -x "$deb" root
install -m 0755 root/usr/bin/promtool "$BIN/promtool"
echo "${deb%.deb}" > "$BIN/.promtool.version"
printf '[promtool %s] %s from %s\n' "$(date +%H:%M:%S)" "$BIN/promtool" "$deb" >&2
