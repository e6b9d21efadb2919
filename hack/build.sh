#!/usr/bin/env bash
# Builds the controller binary: static, reproducible paths, version stamped.
# `make build` and the Dockerfile both run this script, so they build alike.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
OUT=${OUT:-controller}
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o "${OUT}" .
