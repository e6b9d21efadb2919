#!/usr/bin/env bash
# Makes sure the Debian packages that the real node and its images need are
# installed. Each argument is PACKAGE:PATH, a package and a file it provides
# (a command name is looked up on PATH). Missing packages are installed with
# apt-get (one `apt-get update`, then `apt-get install -y`) when running as
# root on Debian; anywhere else it stops and says exactly what to install.
#
# Usage: hack/tools/debian-deps.sh runc:runc containernetworking-plugins:/usr/lib/cni/bridge ...
set -euo pipefail

missing=()
for spec in "$@"; do
  pkg=${spec%%:*} what=${spec#*:}
  if [[ "$what" == /* ]]; then
    [[ -e "$what" ]] && continue
  else
    command -v "$what" >/dev/null 2>&1 && continue
    # sbin is not on every PATH.
    [[ -x "/usr/sbin/$what" || -x "/sbin/$what" ]] && continue
  fi
  missing+=("$pkg")
done
((${#missing[@]} > 0)) || exit 0

if [[ $(id -u) -ne 0 || ! -f /etc/debian_version ]] || ! command -v apt-get >/dev/null; then
  {
    echo "debian-deps: missing packages: ${missing[*]}"
    echo "  on Debian or Ubuntu, as root: apt-get update && apt-get install -y ${missing[*]}"
    echo "  elsewhere, install your distribution's equivalents of: ${missing[*]}"
  } >&2
  exit 1
fi
printf '[debian-deps %s] installing %s\n' "$(date +%H:%M:%S)" "${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
