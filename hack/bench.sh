#!/usr/bin/env bash
# Scale benchmark: how long N new Databases take to become Running under the
# controller, the API requests it makes for them and in the steady state
# after, its reconcile latency, workqueue depth, RSS and Go heap; against the
# floor, the least API work that reaches the same state, measured in the
# same run on the same control plane. Writes a markdown report and a PNG
# chart beside it.
#
# It starts a local control plane of its own (hack/local-up.sh, on ports and
# a LOCAL_DIR apart from `make run-local` and the e2e suite), installs the
# CRD, runs hack/bench (a Go module of its own) against ./controller, and
# always stops the control plane at the end.
#
# Usage: hack/bench.sh            (or: make bench)
#
# Environment (defaults in brackets):
#   BENCH_N                 number of Databases [1000]
#   BENCH_OUT               the report; the chart is written beside it as .png
#                           [_output/bench/report.md]
#   BENCH_WORKERS           controller --workers, and the floor's goroutines [8, the
#                           controller's default]
#   BENCH_QPS               controller --kube-api-qps, and the floor's QPS [50]
#   BENCH_BURST             controller --kube-api-burst, and the floor's burst [100]
#   BENCH_RESYNC            controller --resync-period [not given: the controller's
#                           default, 10 min, as installed; 30s resyncs every Database
#                           twice in the steady state, to measure what resyncs cost]
#   BENCH_HOLD              how long the steady state is held [60s]
#   BENCH_TIMEOUT           how long each run may take to reach all Running [30m]
#   BENCH_NODES             fake nodes of 110 pods [enough for 2*BENCH_N pods]
#   BENCH_CONTROLLER        the controller binary [./controller, built if missing]
#                           (the comparison with a plain controller-runtime operator:
#                           make bench-operator && BENCH_CONTROLLER=_output/bench/croperator make bench)
#   BENCH_CONTROL_PLANE_QPS, BENCH_CONTROL_PLANE_BURST
#                           client QPS and burst of kube-controller-manager and
#                           kube-scheduler [1000 and 2000, so that neither sets the
#                           pace; set them empty for the components' own defaults,
#                           20/30 and 50/100, with which kube-controller-manager
#                           makes about 3.9 pods a second]
#   BENCH_VOLUMES           static: volumes made in advance, bound by kube-controller-manager;
#                           kwok: claims provisioned by kwok, one step at a time [static]
#   BENCH_FRESH_CONTROL_PLANE  1: the controller's run gets a control plane of its own,
#                           started afresh after the floor's run; 0: it runs on the
#                           floor's, with what the floor left there [1]
#   BENCH_APISERVER_PROFILE a duration such as 30s: a CPU profile of kube-apiserver
#                           that long is taken in each run from 5 s after its first
#                           create, into BENCH_DIR/apiserver-{floor,controller}.pprof;
#                           for a diagnosis, as it costs the API server CPU [none]
#   BENCH_CONTROLLER_PROFILE a duration such as 30s: a CPU profile of the controller
#                           that long is taken in its run from 5 s after its first
#                           create, into BENCH_DIR/controller-cpu.pprof, and the
#                           report shows its top functions [none]
#   BENCH_CONTROLLER_ENV    VAR=value ... set in the controller's environment, for
#                           experiments such as GOMEMLIMIT=80MiB [none]
#   BENCH_CONTROLLER_ARGS   more flags of the controller, words [--server-access=direct:
#                           what the controller installed in a cluster does, its
#                           production install; the benchmark runs it out of cluster,
#                           where the default `auto` would open a tunnel through the
#                           API server to each fake pod; set it to
#                           --server-access=auto to measure that]
#   BENCH_DIR               work directory: control plane state, logs [_output/bench]
#   BENCH_APISERVER_PORT, BENCH_ETCD_PORT, BENCH_ETCD_PEER_PORT, BENCH_KCM_PORT,
#   BENCH_SCHEDULER_PORT, BENCH_KWOK_PORT, BENCH_OBJECTSTORE_PORT
#                           [26443, 22379, 22380, 30257, 30259, 30247, 30070]
#   BENCH_SERVICE_CIDR      Service ClusterIP range [10.96.0.0/16: local-up's /24
#                           holds 254 ClusterIPs, and each Database takes one]
#   BENCH_POD_CIDR          range of the fake pods' IPs [10.244.0.0/16]
set -euo pipefail

CALLER_PWD=$PWD
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

source "$ROOT/hack/lib/local.sh"

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi
[[ $# -eq 0 ]] || die "no arguments are taken; use the BENCH_* variables (see --help)"

abs() {
  if [[ "$1" == /* ]]; then printf '%s\n' "$1"; else printf '%s\n' "$CALLER_PWD/$1"; fi
}

N=${BENCH_N:-1000}
WORKERS=${BENCH_WORKERS:-8}
QPS=${BENCH_QPS:-50}
BURST=${BENCH_BURST:-100}
RESYNC=${BENCH_RESYNC:-0}
HOLD=${BENCH_HOLD:-60s}
VOLUMES=${BENCH_VOLUMES:-static}
FRESH=${BENCH_FRESH_CONTROL_PLANE:-1}
[[ "$FRESH" == 0 || "$FRESH" == 1 ]] || die "BENCH_FRESH_CONTROL_PLANE must be 0 or 1, got '$FRESH'"
TIMEOUT=${BENCH_TIMEOUT:-30m}
OUT=$(abs "${BENCH_OUT:-$ROOT/_output/bench/report.md}")
BENCH_DIR=$(abs "${BENCH_DIR:-$ROOT/_output/bench}")
CONTROLLER=$(abs "${BENCH_CONTROLLER:-$ROOT/controller}")
for v in N WORKERS BURST; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "BENCH_$v must be a positive integer, got '${!v}'"
done
[[ "$QPS" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "BENCH_QPS must be a number, got '$QPS'"
# Two runs of N Databases, one pod each, at most 100 pods a node (of 110).
NODES=${BENCH_NODES:-$(( (2 * N + 99) / 100 + 1 ))}
[[ "$NODES" =~ ^[1-9][0-9]*$ ]] || die "BENCH_NODES must be a positive integer, got '$NODES'"

export LOCAL_DIR="$BENCH_DIR/local"
export LOCAL_APISERVER_PORT=${BENCH_APISERVER_PORT:-26443}
export LOCAL_ETCD_PORT=${BENCH_ETCD_PORT:-22379}
export LOCAL_ETCD_PEER_PORT=${BENCH_ETCD_PEER_PORT:-22380}
export LOCAL_CONTROLLER_MANAGER_PORT=${BENCH_KCM_PORT:-30257}
export LOCAL_SCHEDULER_PORT=${BENCH_SCHEDULER_PORT:-30259}
export LOCAL_KWOK_PORT=${BENCH_KWOK_PORT:-30247}
export LOCAL_OBJECTSTORE_PORT=${BENCH_OBJECTSTORE_PORT:-30070}
export LOCAL_NODES=$NODES
export LOCAL_SERVICE_CIDR=${BENCH_SERVICE_CIDR:-10.96.0.0/16}
export LOCAL_POD_CIDR=${BENCH_POD_CIDR:-10.244.0.0/16}
CONTROL_PLANE_QPS=${BENCH_CONTROL_PLANE_QPS-1000}
CONTROL_PLANE_BURST=${BENCH_CONTROL_PLANE_BURST-2000}
if [[ -n "$CONTROL_PLANE_QPS" ]]; then
  export LOCAL_KCM_API_QPS=$CONTROL_PLANE_QPS LOCAL_SCHEDULER_API_QPS=$CONTROL_PLANE_QPS
fi
if [[ -n "$CONTROL_PLANE_BURST" ]]; then
  export LOCAL_KCM_API_BURST=$CONTROL_PLANE_BURST LOCAL_SCHEDULER_API_BURST=$CONTROL_PLANE_BURST
fi
KUBECONFIG_PATH="$LOCAL_DIR/kubeconfig"
KUBECTL="$ROOT/_output/bin/kubectl"

# The command line as it was given, for the report.
command="make bench"
[[ -n "${MAKELEVEL:-}" ]] || command="./hack/bench.sh"
for v in BENCH_N BENCH_OUT BENCH_WORKERS BENCH_QPS BENCH_BURST BENCH_RESYNC BENCH_HOLD BENCH_TIMEOUT BENCH_NODES BENCH_VOLUMES BENCH_FRESH_CONTROL_PLANE BENCH_CONTROLLER BENCH_CONTROLLER_ENV BENCH_CONTROLLER_ARGS \
  BENCH_CONTROL_PLANE_QPS BENCH_CONTROL_PLANE_BURST BENCH_APISERVER_PROFILE BENCH_CONTROLLER_PROFILE; do
  if [[ -n "${!v+set}" ]]; then
    value=${!v}
    [[ "$value" != *" "* ]] || value="'$value'"
    command="$v=$value $command"
  fi
done
controller_flags=()
for kv in ${BENCH_CONTROLLER_ENV:-}; do
  [[ "$kv" == *=* ]] || die "BENCH_CONTROLLER_ENV must be VAR=value words, got '$kv'"
  controller_flags+=("--controller-env=$kv")
done
for arg in ${BENCH_CONTROLLER_ARGS---server-access=direct}; do
  [[ "$arg" == --* ]] || die "BENCH_CONTROLLER_ARGS must be --flag words, got '$arg'"
  controller_flags+=("--controller-arg=$arg")
done

started=$SECONDS
mkdir -p "$BENCH_DIR"

if [[ ! -x "$CONTROLLER" ]]; then
  log "building the controller ($CONTROLLER)"
  OUT="$CONTROLLER" ./hack/build.sh
fi
log "building hack/bench"
(cd hack/bench && go build -o "$BENCH_DIR/bench" .)

cleanup() {
  local rc=$?
  trap '' INT TERM HUP
  log "stopping the control plane ($LOCAL_DIR)"
  ./hack/local-down.sh || true
  log "done in $((SECONDS - started))s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

log "starting the control plane: $NODES fake nodes, API server on 127.0.0.1:$LOCAL_APISERVER_PORT, state in $LOCAL_DIR"
./hack/local-up.sh >"$BENCH_DIR/local-up.log" 2>&1 || {
  tail -n 30 "$BENCH_DIR/local-up.log" >&2
  die "hack/local-up.sh failed (log: $BENCH_DIR/local-up.log)"
}

log "installing the CRDs"
"$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" apply -k artifacts/crd >/dev/null
local::wait_established "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" -- 60 databases.dbcontroller.io databasebackups.dbcontroller.io ||
  die "the CRDs were not Established after 60s"

# Run by hack/bench between the floor's run and the controller's, when
# BENCH_FRESH_CONTROL_PLANE=1: the same control plane, started afresh, with
# the CRDs installed.
restart=""
if [[ "$FRESH" == 1 ]]; then
  restart="./hack/local-down.sh >&2 && ./hack/local-up.sh >>'$BENCH_DIR/local-up.log' 2>&1"
  restart+=" && '$KUBECTL' --kubeconfig '$KUBECONFIG_PATH' apply -k artifacts/crd >/dev/null"
  restart+=" && source hack/lib/local.sh && local::wait_established '$KUBECTL' --kubeconfig '$KUBECONFIG_PATH' -- 60"
  restart+=" databases.dbcontroller.io databasebackups.dbcontroller.io"
fi

log "running the benchmark: $N Databases (report: $OUT)"
"$BENCH_DIR/bench" \
  --kubeconfig="$KUBECONFIG_PATH" \
  --controller="$CONTROLLER" \
  --bin-dir="$ROOT/_output/bin" \
  --local-dir="$LOCAL_DIR" \
  --kcm-port="$LOCAL_CONTROLLER_MANAGER_PORT" \
  --work-dir="$BENCH_DIR" \
  --report="$OUT" \
  --command="$command" \
  --n="$N" \
  --workers="$WORKERS" \
  --qps="$QPS" \
  --burst="$BURST" \
  --resync="$RESYNC" \
  --hold="$HOLD" \
  --volumes="$VOLUMES" \
  --restart="$restart" \
  --timeout="$TIMEOUT" \
  --apiserver-profile="${BENCH_APISERVER_PROFILE:-0}" \
  --controller-profile="${BENCH_CONTROLLER_PROFILE:-0}" \
  --nodes="$NODES" \
  --service-cidr="$LOCAL_SERVICE_CIDR" \
  --pod-cidr="$LOCAL_POD_CIDR" \
  --control-plane-limits="${CONTROL_PLANE_QPS:+QPS $CONTROL_PLANE_QPS}${CONTROL_PLANE_BURST:+ burst $CONTROL_PLANE_BURST}" \
  "${controller_flags[@]}"
