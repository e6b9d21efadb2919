#!/usr/bin/env bash
# The quickest way to see database-controller work: starts the local control
# plane (hack/local-up.sh), installs the Database CRD, runs ./controller
# against it in the background, creates the examples in artifacts/examples
# (orders, inventory, sessions) in the default namespace and waits until all
# three are Running. Then it prints how to use the cluster and how to stop it.
# `make run-local` builds everything first and runs this.
#
# Everything it starts keeps running after it exits; hack/local-down.sh (or
# `make local-down`) stops all of it, the controller included (its pid is in
# $LOCAL_DIR/pids/controller.pid). Running it again starts from scratch: a new
# control plane with an empty etcd, a new controller. When a step fails it
# says which, shows the end of the relevant log, stops what it started and
# exits non-zero.
#
# With LOCAL_REAL_NODE=1 (root only) the control plane gets a real node
# instead of kwok's (hack/local-up.sh), and the examples are those of
# artifacts/examples/real-node: a real PostgreSQL 15 server (orders) and a
# MariaDB server speaking MySQL's protocol (inventory), on the images that
# hack/images/build.sh makes.
#
# Usage: hack/run-local.sh
#
# Environment (defaults in brackets); hack/local-up.sh's variables (LOCAL_DIR,
# LOCAL_APISERVER_PORT, ...) are passed on to it:
#   LOCAL_DIR                    state, logs, pids, kubeconfig [_output/local]
#   SKIP_BUILD=1                 build neither the controller nor the control
#                                plane [1 when run by make, which built both]
#   RUN_LOCAL_METRICS_ADDRESS    controller --metrics-bind-address [127.0.0.1:8080]
#   RUN_LOCAL_HEALTH_ADDRESS     controller --health-probe-bind-address [127.0.0.1:8081]
#   RUN_LOCAL_CONTROLLER_ARGS    more controller flags, split on spaces (e.g. -v=2)
#   RUN_LOCAL_START_TIMEOUT      seconds for the CRD and the controller to be ready [120]
#   RUN_LOCAL_TIMEOUT            seconds for the examples to be Running [180]
#   LOCAL_REAL_NODE=1            a real node, real servers (see above)
set -euo pipefail

LOCAL_LOG_PREFIX=run-local
# shellcheck source-path=SCRIPTDIR source=lib/local.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local.sh"
# shellcheck source-path=SCRIPTDIR source=images/names.sh
source "$(dirname "${BASH_SOURCE[0]}")/images/names.sh"

case "${1:-}" in
  "") ;;
  -h|--help)
    local::usage "${BASH_SOURCE[0]}"
    exit 0 ;;
  *) local::die "unknown argument: $1 (see --help)" ;;
esac

# make has built the controller and the control plane already (the run-local
# target depends on build and tools); run directly, build them here.
if [[ -z "${SKIP_BUILD:-}" ]]; then
  [[ -n "${MAKELEVEL:-}" ]] && SKIP_BUILD=1 || SKIP_BUILD=0
fi

METRICS_ADDRESS=${RUN_LOCAL_METRICS_ADDRESS:-127.0.0.1:8080}
HEALTH_ADDRESS=${RUN_LOCAL_HEALTH_ADDRESS:-127.0.0.1:8081}
START_TIMEOUT=${RUN_LOCAL_START_TIMEOUT:-120}
RUN_TIMEOUT=${RUN_LOCAL_TIMEOUT:-180}
read -r -a EXTRA_ARGS <<<"${RUN_LOCAL_CONTROLLER_ARGS:-}"
for v in START_TIMEOUT RUN_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || local::die "RUN_LOCAL_${v/RUN_TIMEOUT/TIMEOUT} must be a number, got '${!v}'"
done

CONTROLLER="$LOCAL_ROOT/controller"
KUBECTL="$LOCAL_BIN/kubectl"
KUBECONFIG_PATH="$LOCAL_DIR/kubeconfig"
CONTROLLER_LOG=$(local::logfile controller)
CRD_DIR="$LOCAL_ROOT/artifacts/crd"
EXAMPLES_DIR="$LOCAL_ROOT/artifacts/examples"
EXAMPLE_FILES=(postgresql.yaml mysql.yaml mongodb.yaml)
EXAMPLE_NAMES=(orders inventory sessions)
REAL_NODE=0
if [[ "${LOCAL_REAL_NODE:-0}" == 1 || "${LOCAL_REAL_NODE:-0}" == true ]]; then
  REAL_NODE=1
  EXAMPLES_DIR="$LOCAL_ROOT/artifacts/examples/real-node"
  EXAMPLE_FILES=(postgresql.yaml mysql.yaml)
  EXAMPLE_NAMES=(orders inventory)
fi
NAMESPACE=default

# host_port ADDRESS prints "HOST PORT" to reach a bind address from here
# (":8080" and "0.0.0.0:8080" are reached on 127.0.0.1).
host_port() {
  local host=${1%:*} port=${1##*:}
  [[ "$1" == *:* && "$port" =~ ^[0-9]+$ ]] || return 1
  host=${host#[}
  host=${host%]}
  case "$host" in
    ""|0.0.0.0|::) host=127.0.0.1 ;;
  esac
  printf '%s %s\n' "$host" "$port"
}
[[ "$HEALTH_ADDRESS" != 0 ]] || local::die "RUN_LOCAL_HEALTH_ADDRESS=0 is not supported: this script waits for the controller's /readyz"
read -r HEALTH_HOST HEALTH_PORT < <(host_port "$HEALTH_ADDRESS") ||
  local::die "RUN_LOCAL_HEALTH_ADDRESS must be HOST:PORT, got '$HEALTH_ADDRESS'"
if [[ "$METRICS_ADDRESS" != 0 ]]; then
  read -r METRICS_HOST METRICS_PORT < <(host_port "$METRICS_ADDRESS") ||
    local::die "RUN_LOCAL_METRICS_ADDRESS must be HOST:PORT or 0, got '$METRICS_ADDRESS'"
fi
READYZ_URL="http://$HEALTH_HOST:$HEALTH_PORT/readyz"
if [[ "$METRICS_ADDRESS" != 0 ]]; then
  [[ "$METRICS_HOST:$METRICS_PORT" != "$HEALTH_HOST:$HEALTH_PORT" ]] ||
    local::die "the metrics and health addresses are both $METRICS_ADDRESS"
  METRICS_URL="http://$METRICS_HOST:$METRICS_PORT/metrics"
fi

for tool in curl setsid nohup flock; do
  command -v "$tool" >/dev/null || local::die "$tool is required"
done

kubectl_() {
  "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=10s --namespace "$NAMESPACE" "$@"
}

# ---------------------------------------------------------------------------
# Steps and failures. Whatever ends this script before it is done (a failed
# step, an unexpected error, Ctrl-C) reports the step, shows the end of its
# log and stops what was started.

STEPS=5
STEP_NUM=0
STEP_NAME="preparing"
STEP_LOG=""          # the log to show when the step fails
STEP_START=$(local::now)
TOTAL_START=$STEP_START
CLUSTER_UP=0         # local-up.sh succeeded: stop the cluster on failure
LOCAL_UP_PID=""      # local-up.sh while it runs
INTERRUPTED=""       # the signal that ended this script
DONE=0

step() {
  STEP_NUM=$1 STEP_NAME=$2 STEP_LOG=${3:-}
  STEP_START=$(local::now)
  local::log "step $STEP_NUM/$STEPS: $STEP_NAME"
}

step_done() {
  local::log "step $STEP_NUM/$STEPS: $1 ($(local::since "$STEP_START")s)"
}

# fail MESSAGE reports why the current step failed and exits; on_exit shows
# the log and cleans up.
fail() {
  local::log "ERROR: $*"
  exit 1
}

# show_log LOG shows LOG whole when it is short (a start-up failure), else
# its last 30 lines.
show_log() {
  local log=$1
  [[ -n "$log" ]] || return 0
  if [[ -s "$log" ]]; then
    if (($(wc -l < "$log") <= 80)); then
      local::log "$log:"
      sed 's/^/    /' "$log" >&2
    else
      local::log "last lines of $log:"
      tail -n 30 "$log" | sed 's/^/    /' >&2
    fi
  else
    local::log "$log is empty or missing"
  fi
}

KUBECTL_ERR=""
on_exit() {
  local rc=$?
  [[ -z "$KUBECTL_ERR" ]] || rm -f "$KUBECTL_ERR"
  ((DONE)) && exit "$rc"
  ((rc != 0)) || rc=1
  trap '' INT TERM HUP
  local what="FAILED"
  [[ -z "$INTERRUPTED" ]] || what="INTERRUPTED (SIG$INTERRUPTED)"
  if ((STEP_NUM > 0)); then
    local::log "$what at step $STEP_NUM/$STEPS: $STEP_NAME (after $(local::since "$STEP_START")s)"
  else
    local::log "$what while $STEP_NAME"
  fi
  [[ -n "$INTERRUPTED" ]] || show_log "$STEP_LOG"
  if [[ -n "$LOCAL_UP_PID" ]]; then
    # Interrupted while local-up.sh runs: it stops what it started on
    # SIGTERM, unless it was already done.
    local up_rc=0
    kill -TERM "$LOCAL_UP_PID" 2>/dev/null || true
    wait "$LOCAL_UP_PID" 2>/dev/null || up_rc=$?
    ((up_rc != 0)) || CLUSTER_UP=1
  fi
  if ((CLUSTER_UP)); then
    local::log "stopping the local control plane and the controller"
    "$LOCAL_ROOT/hack/local-down.sh" 8>&- || true
  fi
  exit "$rc"
}

on_signal() {
  trap '' INT TERM HUP
  INTERRUPTED=$1
  local::log "received SIG$1: stopping what was started"
  exit "$2"
}

trap on_exit EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

# ---------------------------------------------------------------------------
# Preparation: one run-local at a time per LOCAL_DIR (local-up.sh has a lock
# of its own, held only while it starts), the binaries, free ports.

mkdir -p "$LOCAL_DIR"
exec 8>"$LOCAL_DIR/.run-local.lock"
flock -n 8 || { DONE=1; local::die "another hack/run-local.sh is running with LOCAL_DIR=$LOCAL_DIR"; }

if [[ "$SKIP_BUILD" != 1 ]]; then
  STEP_NAME="building the controller (hack/build.sh)"
  local::log "building the controller (hack/build.sh)"
  "$LOCAL_ROOT/hack/build.sh" 8>&-
fi
STEP_NAME="preparing"
[[ -x "$CONTROLLER" ]] || fail "$CONTROLLER is missing: run make build (or hack/build.sh)"
for f in "$CRD_DIR/kustomization.yaml" "${EXAMPLE_FILES[@]/#/$EXAMPLES_DIR/}"; do
  [[ -f "$f" ]] || fail "$f is missing"
done

port_in_use() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# check_controller_ports fails when the controller's ports are taken (a
# controller from an earlier run of this script does not count before the
# control plane restarts: local-up.sh stops it).
check_controller_ports() {
  local what host port
  local -a checks=("health $HEALTH_HOST $HEALTH_PORT")
  [[ "$METRICS_ADDRESS" == 0 ]] || checks+=("metrics $METRICS_HOST $METRICS_PORT")
  for c in "${checks[@]}"; do
    read -r what host port <<<"$c"
    if port_in_use "$host" "$port"; then
      fail "the controller's $what port $host:$port is in use:" \
        "$(ss -Hltnp "sport = :$port" 2>/dev/null | awk '{print $NF}' | head -1)" \
        "(set RUN_LOCAL_${what^^}_ADDRESS)"
    fi
  done
}
if ! local::component_pid controller >/dev/null; then
  check_controller_ports
fi

# ---------------------------------------------------------------------------
step 1 "starting the local control plane (hack/local-up.sh)"
# local-up.sh shows its own logs when it fails, and stops what it started.
# Its closing instructions are replaced by ours. It runs in the background so
# that a signal reaches on_exit at once, which hands it on to local-up.sh.
SKIP_BUILD=$SKIP_BUILD "$LOCAL_ROOT/hack/local-up.sh" >/dev/null 8>&- &
LOCAL_UP_PID=$!
up_rc=0
wait "$LOCAL_UP_PID" || up_rc=$?
((up_rc != 0)) || CLUSTER_UP=1
LOCAL_UP_PID=""
((up_rc == 0)) || fail "hack/local-up.sh failed (exit status $up_rc); its messages are above"
step_done "control plane up"

# ---------------------------------------------------------------------------
step 2 "installing the CRDs and the deletion-protection policy" "$(local::logfile kube-apiserver)"
kubectl_ apply -k "$CRD_DIR" || fail "kubectl apply -k $CRD_DIR failed"
local::wait_established kubectl_ -- "$START_TIMEOUT" databases.dbcontroller.io databasebackups.dbcontroller.io ||
  fail "the CRDs were not Established after ${START_TIMEOUT}s"
step_done "CRD databases.dbcontroller.io Established"

# ---------------------------------------------------------------------------
step 3 "starting the controller" "$CONTROLLER_LOG"
check_controller_ports
# kwok's pods have addresses nothing has. local-up.sh routes them
# unreachable when it can (as root); otherwise the controller's direct dials
# would follow the default route off this machine, so it reaches them
# through the API server instead, which asks kwok, on this machine.
if ((!REAL_NODE)) && [[ ! -f "$LOCAL_DIR/unreachable-route" && " ${EXTRA_ARGS[*]} " != *" --server-access"* ]]; then
  local::log "kwok's pod addresses have no route of their own: the controller reaches them through the API server (--server-access=port-forward)"
  EXTRA_ARGS+=(--server-access=port-forward)
fi
: > "$CONTROLLER_LOG"
# A session of its own (local-down.sh stops the whole session), immune to the
# terminal's hangup, not holding our lock. Its --kubeconfig argument points
# into LOCAL_DIR, which is how local-down.sh recognizes it from the pid file.
setsid nohup "$CONTROLLER" \
  --kubeconfig "$KUBECONFIG_PATH" \
  --metrics-bind-address="$METRICS_ADDRESS" \
  --health-probe-bind-address="$HEALTH_ADDRESS" \
  --tools-image="$DBC_CONTROLLER_IMAGE" \
  "${EXTRA_ARGS[@]}" </dev/null >>"$CONTROLLER_LOG" 2>&1 8>&- &
CONTROLLER_PID=$!
echo "$CONTROLLER_PID" > "$(local::pidfile controller)"

# controller_exited WHEN fails, saying how the controller (our child; not
# waited for in a subshell, which could not) ended.
controller_exited() {
  local rc=0 how
  wait "$CONTROLLER_PID" 2>/dev/null || rc=$?
  how="exit status $rc"
  ((rc <= 128)) || how="killed by signal $((rc - 128))"
  fail "the controller exited ($how)$1"
}

controller_ready() {
  curl -sf --noproxy '*' --max-time 2 "$READYZ_URL" 2>/dev/null | grep -qx ok
}
deadline=$((SECONDS + START_TIMEOUT))
until controller_ready; do
  local::alive "$CONTROLLER_PID" || controller_exited " before it was ready"
  ((SECONDS < deadline)) || fail "the controller was not ready on $READYZ_URL after ${START_TIMEOUT}s"
  sleep 0.2
done
step_done "controller ready on $READYZ_URL (pid $CONTROLLER_PID)"

# ---------------------------------------------------------------------------
step 4 "creating the examples (${EXAMPLE_NAMES[*]})" "$CONTROLLER_LOG"
create_args=()
for f in "${EXAMPLE_FILES[@]}"; do
  create_args+=(-f "$EXAMPLES_DIR/$f")
done
kubectl_ create "${create_args[@]}" || fail "kubectl create ${create_args[*]} failed"
# The local object store's keys, as spec.backup.objectStore.credentialsSecret
# wants them (local-up.sh makes new ones at each start).
STORE_ENV="$LOCAL_DIR/objectstore.env"
if [[ -f "$STORE_ENV" ]]; then
  store_id=$(sed -n 's/^OBJECTSTORE_ACCESS_KEY_ID=//p' "$STORE_ENV")
  store_secret=$(sed -n 's/^OBJECTSTORE_SECRET_ACCESS_KEY=//p' "$STORE_ENV")
  STORE_ENDPOINT=$(sed -n 's/^OBJECTSTORE_ENDPOINT=//p' "$STORE_ENV")
  kubectl_ create secret generic local-objectstore --from-literal=accessKeyID="$store_id" --from-literal=secretAccessKey="$store_secret" \
    --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null || fail "creating the Secret local-objectstore failed"
fi
step_done "created"

# ---------------------------------------------------------------------------
step 5 "waiting for ${EXAMPLE_NAMES[*]} to be Running (up to ${RUN_TIMEOUT}s)" "$CONTROLLER_LOG"

# One `kubectl get db` per poll: the table shown is the one the phases are
# read from. Its columns are aligned under the header, so a cell starts at
# its header's offset (an empty cell is blank).
#
# phases TABLE prints "NAME PHASE" per row (PHASE empty while unset).
phases() {
  awk 'NR == 1 { p = index($0, "PHASE"); next }
       p > 0 { ph = substr($0, p); sub(/[[:space:]].*/, "", ph); print $1, ph }' <<<"$1"
}
# without_age TABLE prints TABLE without its last column, AGE, which changes
# every second.
without_age() {
  awk 'NR == 1 { a = ($0 ~ / AGE$/) ? length($0) - 2 : 0 }
       { print (a > 0 ? substr($0, 1, a - 1) : $0) }' <<<"$1"
}

show_conditions() {
  local name=$1
  local out
  out=$(kubectl_ get databases.dbcontroller.io "$name" -o \
    jsonpath='{range .status.conditions[*]}    {.type}={.status} {.reason}: {.message}{"\n"}{end}' 2>&1) || true
  printf '%s\n' "${out:-    (no conditions: the controller has not written a status)}" >&2
}

KUBECTL_ERR=$(mktemp)
deadline=$((SECONDS + RUN_TIMEOUT))
last_shown=""
last_error=""
while :; do
  local::alive "$CONTROLLER_PID" || controller_exited ""
  if table=$(kubectl_ get databases.dbcontroller.io 2>"$KUBECTL_ERR"); then
    last_error=""
    [[ -n "$table" ]] || table=$(<"$KUBECTL_ERR")   # "No resources found"
    # The table again only when something changed (AGE alone does not count).
    if [[ "$(without_age "$table")" != "$last_shown" ]]; then
      printf '\n--- %s (+%ss)\n%s\n' "$(date +%H:%M:%S)" "$(local::since "$STEP_START")" "$table"
      last_shown=$(without_age "$table")
    fi
    declare -A phase_of=()
    while read -r name phase; do
      [[ -n "$name" ]] && phase_of[$name]=$phase
    done < <(phases "$table")
    running=0
    for name in "${EXAMPLE_NAMES[@]}"; do
      case "${phase_of[$name]:-}" in
        Running) running=$((running + 1)) ;;
        Failed)
          echo >&2
          local::log "Database $name is Failed; its conditions:"
          show_conditions "$name"
          fail "Database $name is Failed" ;;
      esac
    done
    unset phase_of
    ((running == ${#EXAMPLE_NAMES[@]})) && break
  else
    last_error=$(<"$KUBECTL_ERR")
  fi
  if ((SECONDS >= deadline)); then
    echo >&2
    [[ -z "$last_error" ]] || local::log "kubectl get failed: $last_error"
    for name in "${EXAMPLE_NAMES[@]}"; do
      local::log "conditions of $name:"
      show_conditions "$name"
    done
    kubectl_ get statefulsets,pods,pvc >&2 || true
    fail "not all of ${EXAMPLE_NAMES[*]} were Running after ${RUN_TIMEOUT}s"
  fi
  sleep 0.5
done
echo
step_done "all Running"

echo
kubectl_ get databases.dbcontroller.io -o wide
echo
kubectl_ get statefulsets,services,secrets,pvc,pods

# ---------------------------------------------------------------------------
DONE=1

server_version=$(kubectl_ get --raw /version 2>/dev/null |
  sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' | head -1) || true
down_cmd="make local-down   (or hack/local-down.sh)"
if [[ "$LOCAL_DIR" != "$LOCAL_ROOT/_output/local" ]]; then
  down_cmd="LOCAL_DIR=$LOCAL_DIR hack/local-down.sh"
fi
metrics_line="disabled (RUN_LOCAL_METRICS_ADDRESS=0)"
[[ "$METRICS_ADDRESS" == 0 ]] || metrics_line=$METRICS_URL

local::log "done in $(local::since "$TOTAL_START")s"
cat <<EOF

database-controller is running on a local control plane${server_version:+ (Kubernetes $server_version)},
with the Databases ${EXAMPLE_NAMES[*]} in the namespace $NAMESPACE.

  Point kubectl at the cluster (use $LOCAL_BIN/kubectl:
  it is the same version as the API server):
    export KUBECONFIG=$KUBECONFIG_PATH
    export PATH=$LOCAL_BIN:\$PATH
    kubectl get db

  Credentials of a Database (keys username, password, database, host, port, uri), e.g. orders:
    kubectl get secret orders-credentials -o jsonpath='{.data.uri}' | base64 -d

EOF
if ((REAL_NODE)); then
  cat <<'EOF'
  The servers are real (LOCAL_REAL_NODE=1). Connect with psql using the
  Secret's uri, unchanged, from a pod (the image has psql):
    uri=$(kubectl get secret orders-credentials -o jsonpath='{.data.uri}' | base64 -d)
    kubectl run psql --rm -it --restart=Never --image=localhost/dbc/postgresql:15 \
      --command -- psql "$uri"
  or from this machine (psql installed) through a port-forward, with the
  uri's host and port replaced by the forwarded ones:
    kubectl port-forward svc/orders 15432:5432 &
    psql "$(echo "$uri" | sed 's#@[^/]*/#@127.0.0.1:15432/#')"

EOF
  if [[ -n "${STORE_ENDPOINT:-}" ]]; then
    cat <<EOF
  Backups to the local object store (versitygw, bucket backups; its keys are
  in the Secret local-objectstore):
    kubectl patch db orders --type=merge -p '{"spec":{"backup":{"objectStore":{"endpoint":"$STORE_ENDPOINT","bucket":"backups","credentialsSecret":{"name":"local-objectstore"}}}}}'
    kubectl create -f - <<<'{"apiVersion":"dbcontroller.io/v1alpha1","kind":"DatabaseBackup","metadata":{"name":"orders-1"},"spec":{"database":"orders"}}'
    kubectl get dbbackup orders-1 -o wide
  and orders' WAL, archived as it is written (the server restarts once):
    kubectl patch db orders --type=merge -p '{"spec":{"backup":{"continuous":{"archiveTimeoutSeconds":60}}}}'
    kubectl get db orders -o jsonpath='{.status.archive}'
  then a base backup (what a Database that archives backs up by default),
  what a restore can reach, and a restore into a new Database of the latest
  point the archive holds (add "targetTime":"2026-11-26T10:00:00Z" to
  restore to a time, or "targetLSN"):
    kubectl create -f - <<<'{"apiVersion":"dbcontroller.io/v1alpha1","kind":"DatabaseBackup","metadata":{"name":"orders-base-1"},"spec":{"database":"orders"}}'
    kubectl get db orders -o jsonpath='{.status.archive.firstRecoverableTime} {.status.archive.lastRecoverableTime}{"\n"}'
    kubectl create -f - <<<'{"apiVersion":"dbcontroller.io/v1alpha1","kind":"Database","metadata":{"name":"orders-copy"},"spec":{"engine":"postgresql","version":"15","image":"localhost/dbc/postgresql:15","storage":{"size":"1Gi"},"restore":{"database":"orders"}}}'
    kubectl get db orders-copy -o jsonpath='{.status.restore}'

EOF
  fi
fi
cat <<EOF
  Controller log:   $CONTROLLER_LOG
  Other logs:       $LOCAL_DIR/logs/<component>.log
  Metrics:          $metrics_line
  Health:           $READYZ_URL
  Stop everything:  $down_cmd

EOF
