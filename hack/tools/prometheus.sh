#!/usr/bin/env bash
# Puts the Prometheus server and promtool, its rule checker and rule unit
# tester, at _output/bin/prometheus and _output/bin/promtool: taken out of
# Debian's prometheus package (apt-get download, dpkg-deb -x), which is not
# installed, so that no Prometheus service is set up or started on the
# host. make test-monitoring runs promtool; the real-node suite runs the
# server (test/e2e/realnode, TestAlertsOnALiveCluster). Done once; the
# package's name and version are kept beside them
# (_output/bin/.prometheus.version).
#
# Usage: hack/tools/prometheus.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN="${BIN_DIR:-$ROOT/_output/bin}"
[[ -x "$BIN/promtool" && -x "$BIN/prometheus" ]] && exit 0
mkdir -p "$BIN"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
if ! apt-get download -qq prometheus >/dev/null 2>&1; then
  # A new machine may have no package lists yet.
  if [[ $(id -u) -ne 0 ]]; then
    echo "prometheus: apt-get download prometheus failed: run apt-get update as root, or put prometheus and promtool in $BIN" >&2
    exit 1
  fi
  apt-get update -qq >&2
  apt-get download -qq prometheus >&2
fi
deb=$(ls prometheus_*.deb)
dpkg-deb -x "$deb" root
install -m 0755 root/usr/bin/promtool root/usr/bin/prometheus "$BIN/"
echo "${deb%.deb}" > "$BIN/.prometheus.version"
printf '[prometheus %s] %s and %s from %s\n' "$(date +%H:%M:%S)" "$BIN/prometheus" "$BIN/promtool" "$deb" >&2
