#!/usr/bin/env bash
# Regenerates everything derived from pkg/apis: deepcopy functions, the typed
# clientset, listers, informers and apply configurations (code-generator's
# kube_codegen.sh), and the CRD (controller-gen). Never edit their output.
set -o errexit
set -o nounset
set -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${SCRIPT_ROOT}"
MODULE=github.com/dbcontroller/database-controller
# OUTPUT_ROOT lets verify-codegen.sh generate into a scratch copy.
OUTPUT_ROOT=${OUTPUT_ROOT:-${SCRIPT_ROOT}}

# `go list -m` names a module's directory only once it is downloaded, and a
# fresh machine has an empty module cache: download it first, and stop with
# a clear message when there is still no directory.
if [[ -z "${CODEGEN_PKG:-}" ]]; then
  go mod download k8s.io/code-generator
  CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
fi
if [[ ! -f "${CODEGEN_PKG}/kube_codegen.sh" ]]; then
  echo "update-codegen: no kube_codegen.sh in '${CODEGEN_PKG}' (k8s.io/code-generator); set CODEGEN_PKG to its source" >&2
  exit 1
fi
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
    --boilerplate "${SCRIPT_ROOT}/hack/boilerplate.go.txt" \
    "${SCRIPT_ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --output-dir "${OUTPUT_ROOT}/pkg/generated" \
    --output-pkg "${MODULE}/pkg/generated" \
    --boilerplate "${SCRIPT_ROOT}/hack/boilerplate.go.txt" \
    "${SCRIPT_ROOT}/pkg/apis"

go tool controller-gen crd \
    paths=./pkg/apis/... \
    output:crd:dir="${OUTPUT_ROOT}/artifacts/crd"
