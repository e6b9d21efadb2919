#!/usr/bin/env bash
# Fails when the generated code or the CRD differs from what
# hack/update-codegen.sh would produce now.
set -o errexit
set -o nounset
set -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${SCRIPT_ROOT}"

TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT

# Generate into a copy of the tree (less the build output and the git
# directory, which can be large), then compare the outputs with the committed ones.
tar -C "${SCRIPT_ROOT}" --exclude=./_output --exclude=./.git -cf - . | tar -C "${TMP}" -xf -
rm -rf "${TMP}/pkg/generated" "${TMP}"/artifacts/crd/dbcontroller.io_*.yaml
# kube_codegen.sh greps each output directory for its old files first: let
# it find them empty rather than complain that they do not exist.
mkdir -p "${TMP}"/pkg/generated/{applyconfiguration,clientset,listers,informers}
find "${TMP}/pkg/apis" -name 'zz_generated.*' -delete
(cd "${TMP}" && GOFLAGS="${GOFLAGS:-} -mod=mod" ./hack/update-codegen.sh >/dev/null)

status=0
for path in pkg/generated artifacts/crd; do
  if ! diff -Naupr "${SCRIPT_ROOT}/${path}" "${TMP}/${path}"; then status=1; fi
done
for f in $(cd "${TMP}" && find pkg/apis -name 'zz_generated.*'); do
  if ! diff -Naup "${SCRIPT_ROOT}/${f}" "${TMP}/${f}"; then status=1; fi
done
if [[ ${status} -ne 0 ]]; then
  echo "generated code or CRD is stale: run hack/update-codegen.sh" >&2
  exit 1
fi
echo "generated code and CRD are up to date"
