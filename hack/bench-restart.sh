#!/usr/bin/env bash
# Measures what a controller restart over N settled Databases costs, on a
# local control plane of its own (kwok nodes, LOCAL_DIR=/tmp/rs-local, ports
# apart from make run-local's and make bench's): N Databases are created and
# converged with the first binary, then each binary is started in turn over
# them (ROUNDS times), and for each start it prints the time to ready, how
# long a Database created right after ready takes to be Running, when the
# first passes over every Database were done (the workqueue empty), the
# GETs it made by resource and its CPU.
#
# Usage: hack/bench-restart.sh N label=controller-binary [label=binary ...]
#   e.g. hack/bench-restart.sh 1000 before=/tmp/ctl-old after=./controller
# Needs make tools. Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:?usage: hack/bench-restart.sh N label=binary ...}; shift
ROUNDS=${ROUNDS:-2}
export LOCAL_DIR=/tmp/rs-local LOCAL_NODES=${LOCAL_NODES:-20} LOCAL_APISERVER_PORT=27443 LOCAL_ETCD_PORT=23790 LOCAL_ETCD_PEER_PORT=23800 \
  LOCAL_CONTROLLER_MANAGER_PORT=20257 LOCAL_SCHEDULER_PORT=20259 LOCAL_KWOK_PORT=20247 LOCAL_OBJECTSTORE_PORT=27070 LOCAL_SERVICE_CIDR=10.96.0.0/16 LOCAL_POD_CIDR=10.244.0.0/16
K=$PWD/_output/bin/kubectl
ctl_pid=""
cleanup() {
  if [[ -n $ctl_pid ]]; then kill "$ctl_pid" 2>/dev/null || true; wait "$ctl_pid" 2>/dev/null || true; fi
  ./hack/local-down.sh >/tmp/rs-down.log 2>&1 || true
}
trap cleanup EXIT
./hack/local-up.sh >/tmp/rs-up.log 2>&1
export KUBECONFIG=$LOCAL_DIR/kubeconfig
$K apply -k artifacts/crd >/dev/null
source hack/lib/local.sh
local::wait_established "$K" -- 60 databases.dbcontroller.io databasebackups.dbcontroller.io
$K create ns rs >/dev/null
since() { awk -v now="$(date +%s.%N)" -v t="$1" 'BEGIN { printf "%.1f", now - t }'; }
metrics() { curl -s http://127.0.0.1:18080/metrics; }
start() { # binary tag
  "$1" --kubeconfig "$KUBECONFIG" --server-access=direct --metrics-bind-address=127.0.0.1:18080 \
    --health-probe-bind-address=127.0.0.1:18081 >"/tmp/rs-$2.log" 2>&1 &
  ctl_pid=$!
}
stop() { kill "$ctl_pid"; wait "$ctl_pid" 2>/dev/null || true; ctl_pid=""; }
running() { $K -n rs get db -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$' || true; }
first=${1#*=}
start "$first" converge
for ((i = 0; i < N; i++)); do
  printf -- '---\napiVersion: dbcontroller.io/v1alpha1\nkind: Database\nmetadata: {name: db-%05d, namespace: rs}\nspec: {engine: postgresql, version: "16", storage: {size: 1Gi, storageClassName: kwok-volume}}\n' "$i"
done > /tmp/rs-dbs.yaml
t0=$(date +%s.%N)
$K apply -f /tmp/rs-dbs.yaml >/dev/null
while [[ $(running) -lt $N ]]; do sleep 2; done
echo "converged: $N Running after $(since $t0) s"
sleep 20
stop
for r in $(seq 1 "$ROUNDS"); do
  for lb in "$@"; do
    label=${lb%%=*}; bin=${lb#*=}
    want=$(( $($K -n rs get db --no-headers | wc -l) + 1 ))
    t0=$(date +%s.%N)
    start "$bin" "$label-$r"
    until curl -sf http://127.0.0.1:18081/readyz >/dev/null; do sleep 0.1; done
    tready=$(since $t0)
    $K -n rs apply -f - >/dev/null <<YAML
apiVersion: dbcontroller.io/v1alpha1
kind: Database
metadata: {name: probe-$label-$r, namespace: rs}
spec: {engine: postgresql, version: "16", storage: {size: 1Gi, storageClassName: kwok-volume}}
YAML
    tc=$(date +%s.%N)
    until [[ $($K -n rs get db "probe-$label-$r" -o jsonpath='{.status.phase}') == Running ]]; do sleep 0.2; done
    tprobe=$(since $tc)
    while :; do
      m=$(metrics)
      syncs=$(awk '/^database_controller_reconcile_duration_seconds_count/ {s+=$2} END {print s+0}' <<<"$m")
      depth=$(awk '/^workqueue_depth/ {s+=$2} END {print s+0}' <<<"$m")
      [[ ${syncs%.*} -ge $want && ${depth%.*} -eq 0 ]] && break
      sleep 0.2
    done
    tdrain=$(since $t0)
    # GETs by resource, e.g. "secrets 1000, statefulsets 0" (none: "none").
    gets=$(awk '/^rest_client_requests_by_resource_total/ && /verb="GET"/ { match($0, /resource="[^"]*"/); r = substr($0, RSTART + 10, RLENGTH - 11); s[r] += $2 }
      END { n = 0; for (r in s) { printf "%s%s %d", (n++ ? ", " : ""), r, s[r] }; if (!n) printf "none" }' <<<"$m")
    cpu=$(awk '/^process_cpu_seconds_total/ {print $2}' <<<"$m")
    echo "$label round $r: ready $tready s; new Database Running $tprobe s after its create; $syncs syncs drained $tdrain s after start; GETs: $gets; CPU $cpu s"
    sleep 5
    stop
    $K -n rs delete db "probe-$label-$r" --wait=false >/dev/null
  done
done
