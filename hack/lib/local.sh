# shellcheck shell=bash
# Shared helpers for hack/local-up.sh and hack/local-down.sh: where things
# live, logging, and the bookkeeping of the local control plane's processes.
# Source this file; it does nothing on its own.
#
# Every component is started as the leader of a session of its own (setsid),
# with its pid recorded in $LOCAL_DIR/pids/<component>.pid. A recorded pid is
# trusted only while the process behind it is still the component (its argv[0]
# names the component and one of its arguments points into $LOCAL_DIR), so a
# stale pid file never gets an unrelated process killed.

LOCAL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Binaries: the same BIN_DIR override as hack/tools/build.sh.
# shellcheck disable=SC2034 # used by local-up.sh
LOCAL_BIN=${BIN_DIR:-$LOCAL_ROOT/_output/bin}

# State directory: certificates, kubeconfigs, etcd data, logs and pids.
LOCAL_DIR=${LOCAL_DIR:-$LOCAL_ROOT/_output/local}
if [[ "$LOCAL_DIR" != /* ]]; then
  LOCAL_DIR="$PWD/$LOCAL_DIR"
fi
LOCAL_DIR=${LOCAL_DIR%/}
export LOCAL_DIR

# Seconds to wait for processes to exit after SIGTERM before SIGKILL.
LOCAL_STOP_TIMEOUT=${LOCAL_STOP_TIMEOUT:-20}

# The components in start order. local-down stops them in reverse. The last
# ones belong to the real node (LOCAL_REAL_NODE=1, hack/lib/node.sh); the
# containerd shims are started by containerd, not by us.
LOCAL_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok versitygw
  netnsproxy containerd kubelet kube-proxy coredns containerd-shim-runc-v2)

LOCAL_LOG_PREFIX=${LOCAL_LOG_PREFIX:-local}

local::log() {
  printf '[%s %s] %s\n' "$LOCAL_LOG_PREFIX" "$(date +%H:%M:%S)" "$*" >&2
}

local::die() {
  local::log "ERROR: $*"
  exit 1
}

# local::now prints the time in seconds with a fractional part.
# local::usage SCRIPT prints the comment block at the top of SCRIPT, which
# is its --help.
local::usage() {
  sed -n '2,/^set -euo/p' "$1" | sed '$d' | sed 's/^# \{0,1\}//'
}

local::now() {
  printf '%s' "${EPOCHREALTIME:-$(date +%s.%N)}"
}

# local::since START prints the seconds elapsed since START (from local::now),
# with one decimal.
local::since() {
  awk -v a="$1" -v b="$(local::now)" 'BEGIN { printf "%.1f", b - a }'
}

local::pidfile() {
  printf '%s/pids/%s.pid' "$LOCAL_DIR" "$1"
}

local::logfile() {
  printf '%s/logs/%s.log' "$LOCAL_DIR" "$1"
}

# local::stat PID prints the fields of /proc/PID/stat that follow the command
# name (state ppid pgrp session ...), and fails when PID does not exist. The
# command name is in parentheses and may itself hold spaces or parentheses.
# (Processes can vanish at any moment: nothing here may fail under set -e
# because one did.)
local::stat() {
  local pid=$1 stat
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  { read -r stat < "/proc/$pid/stat"; } 2>/dev/null || return 1
  [[ -n "$stat" ]] || return 1
  printf '%s\n' "${stat##*) }"
}

# local::alive PID is true while PID exists and is not a zombie.
local::alive() {
  local fields
  fields=$(local::stat "$1") || return 1
  [[ "${fields%% *}" != Z ]]
}

# local::is_ours PID [NAME] is true when PID runs one of our components (NAME
# if given) and one of its arguments points into $LOCAL_DIR.
local::is_ours() {
  local pid=$1 want=${2:-} arg base wrapped=0
  local -a args=()
  local::alive "$pid" || return 1
  { mapfile -d '' -t args < "/proc/$pid/cmdline"; } 2>/dev/null || return 1
  # Just after a start the process may still be one of the wrappers that
  # local-up.sh runs it through (setsid nohup [env VAR=...]) before they exec.
  while ((${#args[@]} > 0)); do
    if [[ "${args[0]}" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then
      args=("${args[@]:1}")
      continue
    fi
    # The options of those wrappers (nsenter --net=PATH --).
    if ((wrapped)) && [[ "${args[0]}" == -* ]]; then
      args=("${args[@]:1}")
      continue
    fi
    case "$(basename -- "${args[0]}")" in
      setsid|nohup|env|nsenter) args=("${args[@]:1}") ;;
      *) break ;;
    esac
    wrapped=1
  done
  ((${#args[@]} > 0)) || return 1
  base=$(basename -- "${args[0]}")
  if [[ -n "$want" ]]; then
    [[ "$base" == "$want" ]] || return 1
  else
    local c found=0
    for c in "${LOCAL_COMPONENTS[@]}"; do
      [[ "$base" == "$c" ]] && found=1
    done
    ((found)) || return 1
  fi
  for arg in "${args[@]:1}"; do
    [[ "$arg" == *"$LOCAL_DIR/"* ]] && return 0
  done
  return 1
}

# local::component_pid NAME prints the pid of the running component NAME from
# its pid file, and fails when it is not running.
local::component_pid() {
  local name=$1 file pid
  file=$(local::pidfile "$name")
  [[ -f "$file" ]] || return 1
  pid=$(<"$file")
  local::is_ours "$pid" "$name" || return 1
  printf '%s\n' "$pid"
}

# local::session_members SID prints the pids of all live processes of session
# SID (the component and anything it started).
local::session_members() {
  local sid=$1 p s
  while read -r p s; do
    if [[ "$s" == "$sid" ]] && local::alive "$p"; then
      printf '%s\n' "$p"
    fi
  done < <(ps -e -o pid=,sid= 2>/dev/null)
}

# local::strays prints the pids of processes that run one of our components
# against $LOCAL_DIR, whether or not a pid file records them.
local::strays() {
  local d pid
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
    if local::is_ours "$pid"; then
      printf '%s\n' "$pid"
    fi
  done
}

# local::signal SIG PID sends SIG to the session PID leads (its process group
# and any other member), or to PID alone when it leads none.
local::signal() {
  local sig=$1 pid=$2 pgid="" m
  local -a f=()
  if read -r -a f < <(local::stat "$pid"); then
    pgid=${f[2]:-}
  fi
  if [[ "$pgid" == "$pid" ]]; then
    kill "-$sig" -- "-$pid" 2>/dev/null || true
  else
    kill "-$sig" "$pid" 2>/dev/null || true
  fi
  for m in $(local::session_members "$pid"); do
    kill "-$sig" "$m" 2>/dev/null || true
  done
}

# local::terminate LABEL PID... stops the given process trees: SIGTERM, wait
# up to LOCAL_STOP_TIMEOUT seconds, then SIGKILL whatever is left.
local::terminate() {
  local label=$1; shift
  (($# > 0)) || return 0
  local start pid deadline
  local -a left=()
  start=$(local::now)
  for pid in "$@"; do
    local::signal TERM "$pid"
  done
  deadline=$((SECONDS + LOCAL_STOP_TIMEOUT))
  while :; do
    left=()
    for pid in "$@"; do
      if local::alive "$pid" || [[ -n "$(local::session_members "$pid")" ]]; then
        left+=("$pid")
      fi
    done
    ((${#left[@]} == 0)) && break
    if ((SECONDS >= deadline)); then
      local::log "$label: still running after ${LOCAL_STOP_TIMEOUT}s (pids ${left[*]}); sending SIGKILL"
      for pid in "${left[@]}"; do
        local::signal KILL "$pid"
      done
      deadline=$((SECONDS + 10))
      while :; do
        left=()
        for pid in "$@"; do
          if local::alive "$pid" || [[ -n "$(local::session_members "$pid")" ]]; then
            left+=("$pid")
          fi
        done
        ((${#left[@]} == 0)) && break
        ((SECONDS >= deadline)) && { local::log "$label: pids ${left[*]} survived SIGKILL"; return 1; }
        sleep 0.1
      done
      break
    fi
    sleep 0.1
  done
  local::log "stopped $label in $(local::since "$start")s"
}

# local::await_reaped PID... waits up to 3 seconds for the dead processes to
# be reaped by their parent (init, usually, which on some machines takes a
# second or two), so that right after a stop no <defunct> entry is left to
# puzzle a `pgrep`. Zombies whose parent is the
# caller of this script (local-up.sh in the foreground, which reaps them once
# we return) are not waited for.
local::await_reaped() {
  local deadline=$((SECONDS + 3)) pid ppid pending
  local -a f=()
  while ((SECONDS < deadline)); do
    pending=0
    for pid in "$@"; do
      read -r -a f < <(local::stat "$pid") || continue
      ppid=${f[1]:-}
      if [[ -n "$ppid" && "$ppid" != "$PPID" ]]; then
        pending=1
      fi
    done
    ((pending)) || return 0
    sleep 0.05
  done
}

# local::wait_established KUBECTL... -- TIMEOUT CRD...: waits until each CRD is
# Established, asking every half second for at most TIMEOUT seconds. Not
# `kubectl wait`: it fails at once, rather than waiting, on a CRD whose
# status has no conditions yet (seen on a fresh machine: ".status.conditions
# accessor error: <nil> is of the type <nil>").
local::wait_established() {
  local kubectl=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do kubectl+=("$1"); shift; done
  shift
  local timeout=$1 crd status
  shift
  local deadline=$((SECONDS + timeout))
  for crd in "$@"; do
    until status=$("${kubectl[@]}" get crd "$crd" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) &&
      [[ "$status" == True ]]; do
      ((SECONDS < deadline)) || return 1
      sleep 0.5
    done
  done
}
