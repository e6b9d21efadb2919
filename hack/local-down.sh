#!/usr/bin/env bash
# Stops the local control plane started by hack/local-up.sh: the real node
# if one runs (its pods, processes, mounts, network namespace, cgroups and
# the host settings it changed: hack/lib/node.sh), every process recorded in
# $LOCAL_DIR/pids (and anything it started), then any leftover
# etcd/kube-*/kwok process still running against $LOCAL_DIR. SIGTERM first,
# SIGKILL after LOCAL_STOP_TIMEOUT seconds. Safe to run when nothing runs.
#
# Environment: LOCAL_DIR (default _output/local under the repo root),
# LOCAL_STOP_TIMEOUT (seconds, default 20), LOCAL_AWAIT_REAPED=0 (do not wait
# up to 3 s for init to reap the stopped processes; local-up.sh sets it).
set -euo pipefail

LOCAL_LOG_PREFIX=local-down
# shellcheck source-path=SCRIPTDIR source=lib/local.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local.sh"

case "${1:-}" in
  "") ;;
  -h|--help)
    local::usage "${BASH_SOURCE[0]}"
    exit 0 ;;
  *) local::die "unknown argument: $1 (see --help)" ;;
esac

pids_dir="$LOCAL_DIR/pids"
stopped_any=0
all_stopped=()

# stop_components NAME... stops the listed components together.
stop_components() {
  local name file pid
  local -a names=() pids=()
  for name in "$@"; do
    file=$(local::pidfile "$name")
    [[ -f "$file" ]] || continue
    if pid=$(local::component_pid "$name"); then
      names+=("$name($pid)")
      pids+=("$pid")
    else
      local::log "$name: not running (stale pid file removed)"
      rm -f "$file"
    fi
  done
  ((${#pids[@]} > 0)) || return 0
  stopped_any=1
  all_stopped+=("${pids[@]}")
  local::terminate "${names[*]}" "${pids[@]}"
  for name in "$@"; do
    rm -f "$(local::pidfile "$name")"
  done
}

# The real node first (LOCAL_REAL_NODE=1): its pods, its processes, and
# what it changed on the host.
# shellcheck source-path=SCRIPTDIR source=lib/node.sh
source "$LOCAL_ROOT/hack/lib/node.sh"
node::down

if [[ -d "$pids_dir" ]]; then
  # The clients first (the controller that hack/run-local.sh starts among
  # them), then the API server, then etcd, so that nothing logs
  # a storm of errors about a server that went away under it.
  stop_components controller kwok kube-scheduler kube-controller-manager
  stop_components kube-apiserver
  stop_components etcd
  # Anything else somebody recorded here.
  for file in "$pids_dir"/*.pid; do
    [[ -e "$file" ]] || continue
    name=$(basename "$file" .pid)
    stop_components "$name"
    rm -f "$file"
  done
fi

# Processes no pid file knows about (a pid file removed by hand, a start that
# was killed between starting a process and recording it).
mapfile -t strays < <(local::strays)
if ((${#strays[@]} > 0)); then
  stopped_any=1
  all_stopped+=("${strays[@]}")
  local::log "stopping unrecorded processes using $LOCAL_DIR: ${strays[*]}"
  local::terminate "unrecorded processes" "${strays[@]}"
fi

mapfile -t strays < <(local::strays)
if ((${#strays[@]} > 0)); then
  local::die "processes still running against $LOCAL_DIR: ${strays[*]}"
fi

# The route that kept kwok's pod addresses on this machine (local-up.sh).
if [[ -f "$LOCAL_DIR/unreachable-route" ]]; then
  ip route del unreachable "$(cat "$LOCAL_DIR/unreachable-route")" 2>/dev/null || true
  rm -f "$LOCAL_DIR/unreachable-route"
fi

if ((stopped_any)); then
  # local-up.sh, restarting or cleaning up, does not need to wait for this.
  if [[ "${LOCAL_AWAIT_REAPED:-1}" == 1 ]]; then
    local::await_reaped "${all_stopped[@]}"
  fi
  local::log "local control plane stopped ($LOCAL_DIR)"
else
  local::log "nothing was running ($LOCAL_DIR)"
fi
