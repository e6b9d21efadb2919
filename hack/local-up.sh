#!/usr/bin/env bash
# Starts a local Kubernetes control plane without containers: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, and kwok simulating
# fake nodes (pods become Running/Ready, PVCs of the default StorageClass
# kwok-volume become Bound). Everything listens on 127.0.0.1.
#
# With LOCAL_REAL_NODE=1 it also starts a real node (hack/lib/node.sh, root
# only): containerd and runc, a kubelet, kube-proxy and CoreDNS, in a network
# namespace of their own, with local PersistentVolumes of the StorageClass
# real-node-local and the images localhost/dbc/{pause,postgresql,mariadb}
# (hack/images) imported. Alone (LOCAL_NODES=0, the default then) it runs
# every pod and real-node-local is the default StorageClass; beside kwok
# nodes (LOCAL_NODES=N) the scheduler places pods on either.
#
# Beside them, an S3-compatible object store (versitygw, over the directory
# $LOCAL_DIR/objectstore) with a bucket "backups" and root credentials of
# its own, made at each start: on 127.0.0.1, or with a real node on the
# host's end of the node's veth pair, which the node's pods reach and
# nothing outside this machine does. Its endpoint and credentials are in
# $LOCAL_DIR/objectstore.env.
#
# Usage: hack/local-up.sh [--foreground]
#   By default it starts everything in the background, prints the KUBECONFIG
#   to use and exits. With --foreground (or LOCAL_FOREGROUND=1) it stays in
#   the foreground and stops everything on Ctrl-C / SIGTERM.
#   A control plane already running from the same LOCAL_DIR is stopped first;
#   every start begins with fresh certificates and an empty etcd.
#   Stop a background control plane with hack/local-down.sh.
#
# Environment (defaults in brackets):
#   LOCAL_DIR                      state, logs, pids, kubeconfig [_output/local]
#   BIN_DIR                        binaries [_output/bin]
#   SKIP_BUILD=1                   do not run hack/tools/build.sh first
#   LOCAL_FOREGROUND=1             same as --foreground
#   LOCAL_ETCD_PORT                etcd client port [2379]
#   LOCAL_ETCD_PEER_PORT           etcd peer port [2380]
#   LOCAL_APISERVER_PORT           kube-apiserver secure port [6443]
#   LOCAL_CONTROLLER_MANAGER_PORT  kube-controller-manager secure port [10257]
#   LOCAL_SCHEDULER_PORT           kube-scheduler secure port [10259]
#   LOCAL_KWOK_PORT                kwok's server (fake kubelet) port [10247]
#   LOCAL_OBJECTSTORE_PORT         the object store's port [7070]
#   LOCAL_SERVICE_CIDR             Service ClusterIP range [10.0.0.0/24]
#   LOCAL_POD_CIDR                 range kwok gives pod IPs from [10.0.1.0/24]
#   LOCAL_NODE_IP                  InternalIP of the fake nodes [127.0.0.1]
#   LOCAL_NODES                    number of fake nodes kwok-node-N [1; 0 with
#                                  LOCAL_REAL_NODE=1: no kwok at all]
#   LOCAL_REAL_NODE=1              start the real node too
#   LOCAL_REAL_NODE_NAME           its name [real-node]
#   LOCAL_REAL_NODE_POD_CIDR       its pods' range, inside its namespace [10.0.2.0/24]
#   LOCAL_REAL_NODE_VOLUMES        local PersistentVolumes made for it [20]
#   LOCAL_APISERVER_ADVERTISE_ADDRESS  kube-apiserver --advertise-address [unset:
#                                  the API server picks the host's address]
#   LOCAL_VERBOSITY                klog -v of the kube components [2]
#   LOCAL_KCM_API_QPS, LOCAL_KCM_API_BURST
#                                  kube-controller-manager's client limits
#                                  [its defaults: 20 and 30]
#   LOCAL_SCHEDULER_API_QPS, LOCAL_SCHEDULER_API_BURST
#                                  kube-scheduler's client limits [its defaults: 50 and 100]
#   LOCAL_START_TIMEOUT            seconds each component may take to be healthy [120]
#   LOCAL_STOP_TIMEOUT             seconds between SIGTERM and SIGKILL on stop [20]
#   LOCAL_KWOK_STAGE_DIR           kwok's stage files [$BIN_DIR/kwok-stage, copied
#                                  there by hack/tools/build.sh]
set -euo pipefail

LOCAL_LOG_PREFIX=local-up
# shellcheck source-path=SCRIPTDIR source=lib/local.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local.sh"


FOREGROUND=${LOCAL_FOREGROUND:-0}
[[ "$FOREGROUND" == 1 || "$FOREGROUND" == true ]] && FOREGROUND=1 || FOREGROUND=0
for arg in "$@"; do
  case "$arg" in
    --foreground|-f) FOREGROUND=1 ;;
    -h|--help) local::usage "${BASH_SOURCE[0]}"; exit 0 ;;
    *) local::die "unknown argument: $arg (see --help)" ;;
  esac
done

ETCD_PORT=${LOCAL_ETCD_PORT:-2379}
ETCD_PEER_PORT=${LOCAL_ETCD_PEER_PORT:-2380}
APISERVER_PORT=${LOCAL_APISERVER_PORT:-6443}
KCM_PORT=${LOCAL_CONTROLLER_MANAGER_PORT:-10257}
SCHEDULER_PORT=${LOCAL_SCHEDULER_PORT:-10259}
KWOK_PORT=${LOCAL_KWOK_PORT:-10247}
OBJECTSTORE_PORT=${LOCAL_OBJECTSTORE_PORT:-7070}
SERVICE_CIDR=${LOCAL_SERVICE_CIDR:-10.0.0.0/24}
POD_CIDR=${LOCAL_POD_CIDR:-10.0.1.0/24}
NODE_IP=${LOCAL_NODE_IP:-127.0.0.1}
REAL_NODE=${LOCAL_REAL_NODE:-0}
[[ "$REAL_NODE" == 1 || "$REAL_NODE" == true ]] && REAL_NODE=1 || REAL_NODE=0
if ((REAL_NODE)); then
  NODES=${LOCAL_NODES:-0}
else
  NODES=${LOCAL_NODES:-1}
fi
VERBOSITY=${LOCAL_VERBOSITY:-2}
# Client limits of the control plane's own components, when given.
kcm_limits=() scheduler_limits=()
[[ -z "${LOCAL_KCM_API_QPS:-}" ]] || kcm_limits+=(--kube-api-qps="$LOCAL_KCM_API_QPS")
[[ -z "${LOCAL_KCM_API_BURST:-}" ]] || kcm_limits+=(--kube-api-burst="$LOCAL_KCM_API_BURST")
[[ -z "${LOCAL_SCHEDULER_API_QPS:-}" ]] || scheduler_limits+=(--kube-api-qps="$LOCAL_SCHEDULER_API_QPS")
[[ -z "${LOCAL_SCHEDULER_API_BURST:-}" ]] || scheduler_limits+=(--kube-api-burst="$LOCAL_SCHEDULER_API_BURST")
START_TIMEOUT=${LOCAL_START_TIMEOUT:-120}

for v in ETCD_PORT ETCD_PEER_PORT APISERVER_PORT KCM_PORT SCHEDULER_PORT KWOK_PORT OBJECTSTORE_PORT NODES VERBOSITY START_TIMEOUT LOCAL_STOP_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || local::die "$v must be a number, got '${!v}'"
done
((NODES >= 1 || REAL_NODE)) || local::die "LOCAL_NODES must be at least 1 (or set LOCAL_REAL_NODE=1)"

CERTS="$LOCAL_DIR/certs"
CONFIG="$LOCAL_DIR/config"
KUBECONFIG_PATH="$LOCAL_DIR/kubeconfig"
KUBECTL="$LOCAL_BIN/kubectl"
APISERVER_URL="https://127.0.0.1:$APISERVER_PORT"

# ---------------------------------------------------------------------------
# Lifecycle: whatever happens before the control plane is up (an error, a
# failed component, Ctrl-C) stops what was started. In the foreground the
# same happens on exit after it is up.

OWNS=0     # set once this script holds LOCAL_DIR (what is running there is ours)
UP_DONE=0
STOPPING=0
STARTED_PIDS=()
declare -A PID_OF=()

stop_all() {
  ((STOPPING)) && return 0
  STOPPING=1
  LOCAL_AWAIT_REAPED=0 "$LOCAL_ROOT/hack/local-down.sh" || true
  # Reap the components that were our children (only the dead ones, so that
  # this can never hang).
  local pid
  for pid in "${STARTED_PIDS[@]}"; do
    local::alive "$pid" || wait "$pid" 2>/dev/null || true
  done
}

on_exit() {
  local rc=$?
  if ((OWNS && (!UP_DONE || FOREGROUND))); then
    stop_all
  fi
  exit "$rc"
}

on_signal() {
  local sig=$1 code=$2
  # Stopping must not be cut short by a second Ctrl-C (local-down.sh inherits
  # the ignored signals too).
  trap '' INT TERM HUP
  if ((UP_DONE)); then
    local::log "received SIG$sig: stopping the local control plane"
    exit 0
  fi
  local::log "received SIG$sig while starting: stopping what was started"
  exit "$code"
}

trap on_exit EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

# fail NAME MESSAGE reports a component that did not come up, with the tail of
# its log, stops everything and exits non-zero.
fail() {
  local name=$1 msg=$2 log
  log=$(local::logfile "$name")
  local::log "ERROR: $name $msg"
  if [[ -s "$log" ]]; then
    local::log "last lines of $log:"
    tail -n 30 "$log" | sed 's/^/    /' >&2
  fi
  local::log "full log: $log"
  stop_all
  exit 1
}

# start NAME COMMAND... runs COMMAND in a session of its own, immune to the
# terminal's hangup and not holding the lock, logging to logs/NAME.log.
start() {
  local name=$1; shift
  local log
  log=$(local::logfile "$name")
  : > "$log"
  setsid nohup "$@" </dev/null >>"$log" 2>&1 9>&- &
  echo "$!" > "$(local::pidfile "$name")"
  STARTED_PIDS+=("$!")
  PID_OF[$name]=$!
}

# running NAME is true while the component NAME that this script started is
# alive. (It is our child, so its pid cannot be reused before we reap it.)
running() {
  local::alive "${PID_OF[$1]:-}"
}

# wait_for NAME WHAT COMMAND... polls COMMAND every 0.2 seconds until it
# succeeds, failing when NAME exits or LOCAL_START_TIMEOUT passes.
wait_for() {
  local name=$1 what=$2; shift 2
  local deadline=$((SECONDS + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    running "$name" || fail "$name" "exited before it was $what"
    ((SECONDS < deadline)) || fail "$name" "was not $what after ${START_TIMEOUT}s"
    sleep 0.2
  done
}

# begin NAME / done_step NAME STATE: log a step and how long it took.
step_start=
begin() {
  step_start=$(local::now)
  local::log "starting $1"
}
done_step() {
  local::log "$1: $2 ($(local::since "$step_start")s)"
}

kubectl_() {
  "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=10s "$@"
}

# ---------------------------------------------------------------------------
# Preparation.

total_start=$(local::now)

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  if ((REAL_NODE)); then
    "$LOCAL_ROOT/hack/tools/build.sh" etcd kube kwok kwok-stage versitygw node
  else
    "$LOCAL_ROOT/hack/tools/build.sh"
  fi
fi
if ((REAL_NODE)); then
  # shellcheck source-path=SCRIPTDIR source=lib/node.sh
  source "$LOCAL_ROOT/hack/lib/node.sh"
  node::preflight
fi
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok versitygw; do
  [[ -x "$LOCAL_BIN/$b" ]] || local::die "$LOCAL_BIN/$b is missing: run hack/tools/build.sh"
done
for tool in openssl curl setsid nohup flock ps awk base64; do
  command -v "$tool" >/dev/null || local::die "$tool is required (openssl: apt-get install -y openssl)"
done

# kwok's stage configs, copied from its module source by hack/tools/build.sh.
STAGE_DIR=${LOCAL_KWOK_STAGE_DIR:-$LOCAL_BIN/kwok-stage}
[[ -d "$STAGE_DIR" ]] || local::die "kwok's stage files are missing from $STAGE_DIR: run hack/tools/build.sh"
STAGE_FILES=(
  node/fast/node-initialize.yaml
  node/heartbeat/node-heartbeat.yaml
  pod/fast/pod-ready.yaml
  pod/fast/pod-complete.yaml
  pod/fast/pod-delete.yaml
  volume/fast/pv-bind.yaml
  volume/fast/pv-delete.yaml
  volume/fast/pvc-provision.yaml
  volume/fast/pvc-delete.yaml
)
STORAGE_CLASS_FILE="$STAGE_DIR/volume/fast/storage-class.yaml"
for f in "${STAGE_FILES[@]}"; do
  [[ -f "$STAGE_DIR/$f" ]] || local::die "kwok stage $STAGE_DIR/$f is missing"
done
[[ -f "$STORAGE_CLASS_FILE" ]] || local::die "$STORAGE_CLASS_FILE is missing"

# One instance per LOCAL_DIR: a concurrent local-up fails here, a previous
# instance is stopped.
mkdir -p "$LOCAL_DIR"
exec 9>"$LOCAL_DIR/.lock"
flock -n 9 || local::die "another hack/local-up.sh is running with LOCAL_DIR=$LOCAL_DIR"
OWNS=1

if compgen -G "$LOCAL_DIR/pids/*.pid" >/dev/null || [[ -n "$(local::strays)" ]]; then
  local::log "a previous control plane from $LOCAL_DIR is running: stopping it"
  LOCAL_AWAIT_REAPED=0 "$LOCAL_ROOT/hack/local-down.sh"
fi

# Every port must be free before anything starts.
port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
declare -A PORT_VARS=(
  [LOCAL_ETCD_PORT]=$ETCD_PORT [LOCAL_ETCD_PEER_PORT]=$ETCD_PEER_PORT
  [LOCAL_APISERVER_PORT]=$APISERVER_PORT [LOCAL_CONTROLLER_MANAGER_PORT]=$KCM_PORT
  [LOCAL_SCHEDULER_PORT]=$SCHEDULER_PORT [LOCAL_KWOK_PORT]=$KWOK_PORT
)
declare -A SEEN_PORTS=()
for var in "${!PORT_VARS[@]}"; do
  port=${PORT_VARS[$var]}
  [[ -z "${SEEN_PORTS[$port]:-}" ]] || local::die "$var and ${SEEN_PORTS[$port]} are both $port"
  SEEN_PORTS[$port]=$var
  if port_in_use "$port"; then
    local::die "port $port ($var) on 127.0.0.1 is in use: $(ss -Hltnp "sport = :$port" 2>/dev/null | awk '{print $NF}' | head -1)"
  fi
done

# A fresh state, except the lock file and the previous run's logs, which are
# kept in logs.previous/.
rm -rf "$LOCAL_DIR/etcd" "$CERTS" "$CONFIG" "$LOCAL_DIR/pids" "$LOCAL_DIR/kwok-home" "$KUBECONFIG_PATH" "$LOCAL_DIR/logs.previous"
if [[ -d "$LOCAL_DIR/logs" ]]; then
  mv "$LOCAL_DIR/logs" "$LOCAL_DIR/logs.previous"
fi
mkdir -p "$CERTS" "$CONFIG" "$LOCAL_DIR/pids" "$LOCAL_DIR/logs" "$LOCAL_DIR/kwok-home"
chmod 700 "$CERTS" "$CONFIG"

# ---------------------------------------------------------------------------
# Certificates: a CA, the API server's serving certificate, a client
# certificate per user, and the service-account signing key pair.

# first_ip CIDR prints the first host address of an IPv4 CIDR (the API
# server's ClusterIP in the service range).
first_ip() {
  local ip=${1%/*} bits=${1#*/} a b c d n
  IFS=. read -r a b c d <<<"$ip"
  for n in "$a" "$b" "$c" "$d" "$bits"; do
    [[ "$n" =~ ^[0-9]+$ ]] || return 1
  done
  n=$(( (a << 24 | b << 16 | c << 8 | d) & (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF ))
  n=$((n + 1))
  printf '%d.%d.%d.%d\n' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255))
}

cat > "$CERTS/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = local
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
EOF

new_key() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"
}

# new_ca NAME COMMON_NAME makes a self-signed CA, NAME.key and NAME.crt.
new_ca() {
  new_key "$CERTS/$1.key" || return 1
  openssl req -x509 -new -config "$CERTS/openssl.cnf" -extensions ca -key "$CERTS/$1.key" \
    -subj "/CN=$2" -days 3650 -sha256 -out "$CERTS/$1.crt"
}

# sign NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES [CA]] makes NAME.key
# and NAME.crt signed by CA (default: ca).
sign() {
  local name=$1 subject=$2 eku=$3 sans=${4:-} ca=${5:-ca}
  new_key "$CERTS/$name.key" || return 1
  {
    echo "basicConstraints = critical, CA:FALSE"
    echo "keyUsage = critical, digitalSignature, keyEncipherment"
    echo "extendedKeyUsage = $eku"
    echo "authorityKeyIdentifier = keyid"
    [[ -z "$sans" ]] || echo "subjectAltName = $sans"
  } > "$CERTS/$name.ext"
  openssl req -new -config "$CERTS/openssl.cnf" -key "$CERTS/$name.key" -subj "$subject" \
    -out "$CERTS/$name.csr" || return 1
  openssl x509 -req -in "$CERTS/$name.csr" -CA "$CERTS/$ca.crt" -CAkey "$CERTS/$ca.key" \
    -CAcreateserial -CAserial "$CERTS/$ca.srl" -days 365 -sha256 \
    -extfile "$CERTS/$name.ext" -out "$CERTS/$name.crt" || return 1
  rm -f "$CERTS/$name.csr" "$CERTS/$name.ext"
}

gen_certs() {
  local sans svc_ip
  new_ca ca local-kubernetes-ca || return 1
  # The front proxy (request header) CA: the API server's aggregation layer
  # uses it, and the controller manager's and scheduler's delegated
  # authentication expect its bundle to be published.
  new_ca front-proxy-ca local-front-proxy-ca || return 1
  sign front-proxy-client "/CN=front-proxy-client" clientAuth "" front-proxy-ca || return 1
  sans="DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  sans+=",DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1"
  if svc_ip=$(first_ip "$SERVICE_CIDR"); then
    sans+=",IP:$svc_ip"
  fi
  if [[ -n "${LOCAL_APISERVER_ADVERTISE_ADDRESS:-}" ]]; then
    sans+=",IP:$LOCAL_APISERVER_ADVERTISE_ADDRESS"
  fi
  sign kube-apiserver "/CN=kube-apiserver" serverAuth "$sans" || return 1
  sign admin "/O=system:masters/CN=local-admin" clientAuth || return 1
  sign kube-controller-manager "/CN=system:kube-controller-manager" clientAuth || return 1
  sign kube-scheduler "/CN=system:kube-scheduler" clientAuth || return 1
  sign kwok "/O=system:masters/CN=kwok" clientAuth || return 1
  # The API server's identity towards kubelets (logs, exec, port-forward).
  sign kube-apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth || return 1
  if ((REAL_NODE)); then
    node::certs || return 1
  fi
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$CERTS/sa.key" || return 1
  openssl pkey -in "$CERTS/sa.key" -pubout -out "$CERTS/sa.pub" || return 1
}

begin "certificates (openssl)"
old_umask=$(umask)
umask 077
if ! gen_certs > "$CERTS/openssl.log" 2>&1; then
  tail -n 20 "$CERTS/openssl.log" | sed 's/^/    /' >&2
  local::die "generating certificates with openssl failed (log: $CERTS/openssl.log)"
fi
umask "$old_umask"

# write_kubeconfig FILE USER: a kubeconfig with the user's embedded client
# certificate.
write_kubeconfig() {
  local file=$1 user=$2
  (
    umask 077
    cat > "$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 < "$CERTS/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 < "$CERTS/$user.crt")
    client-key-data: $(base64 -w0 < "$CERTS/$user.key")
contexts:
- name: local
  context:
    cluster: local
    user: $user
current-context: local
EOF
  )
}
write_kubeconfig "$KUBECONFIG_PATH" admin
for c in kube-controller-manager kube-scheduler kwok; do
  write_kubeconfig "$CONFIG/$c.kubeconfig" "$c"
done
done_step "certificates and kubeconfigs" "written"

# ---------------------------------------------------------------------------
# The components, one after another, each healthy before the next.

begin etcd
start etcd "$LOCAL_BIN/etcd" \
  --name=local \
  --data-dir="$LOCAL_DIR/etcd" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster="local=http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster-state=new
etcd_healthy() {
  curl -sf --noproxy '*' --max-time 5 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'
}
wait_for etcd "healthy on http://127.0.0.1:$ETCD_PORT/health" etcd_healthy
done_step etcd healthy

begin kube-apiserver
apiserver_flags=(
  --bind-address=127.0.0.1
  --secure-port="$APISERVER_PORT"
  --etcd-servers="http://127.0.0.1:$ETCD_PORT"
  --tls-cert-file="$CERTS/kube-apiserver.crt"
  --tls-private-key-file="$CERTS/kube-apiserver.key"
  --client-ca-file="$CERTS/ca.crt"
  --requestheader-client-ca-file="$CERTS/front-proxy-ca.crt"
  --requestheader-allowed-names=front-proxy-client
  --requestheader-username-headers=X-Remote-User
  --requestheader-group-headers=X-Remote-Group
  --requestheader-extra-headers-prefix=X-Remote-Extra-
  --proxy-client-cert-file="$CERTS/front-proxy-client.crt"
  --proxy-client-key-file="$CERTS/front-proxy-client.key"
  --authorization-mode=Node,RBAC
  --kubelet-client-certificate="$CERTS/kube-apiserver-kubelet-client.crt"
  --kubelet-client-key="$CERTS/kube-apiserver-kubelet-client.key"
  --kubelet-preferred-address-types=InternalIP,Hostname
  --service-account-key-file="$CERTS/sa.pub"
  --service-account-signing-key-file="$CERTS/sa.key"
  --service-account-issuer=https://kubernetes.default.svc
  --service-cluster-ip-range="$SERVICE_CIDR"
  --allow-privileged=true
  --cert-dir="$CERTS/kube-apiserver"
  --v="$VERBOSITY"
)
if [[ -n "${LOCAL_APISERVER_ADVERTISE_ADDRESS:-}" ]]; then
  apiserver_flags+=(--advertise-address="$LOCAL_APISERVER_ADVERTISE_ADDRESS")
fi
start kube-apiserver "$LOCAL_BIN/kube-apiserver" "${apiserver_flags[@]}"
apiserver_ready() {
  curl -sf --noproxy '*' --max-time 5 --cacert "$CERTS/ca.crt" --cert "$CERTS/admin.crt" --key "$CERTS/admin.key" \
    "$APISERVER_URL/readyz" | grep -qx ok
}
wait_for kube-apiserver "ready on $APISERVER_URL/readyz" apiserver_ready
done_step kube-apiserver ready

# secure_healthz PORT: the /healthz of a component's self-signed secure port.
secure_healthz() {
  curl -skf --noproxy '*' --max-time 5 "https://127.0.0.1:$1/healthz" | grep -qx ok
}

begin kube-controller-manager
start kube-controller-manager "$LOCAL_BIN/kube-controller-manager" \
  --kubeconfig="$CONFIG/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="$CONFIG/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig="$CONFIG/kube-controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$KCM_PORT" \
  --cert-dir="$CERTS/kube-controller-manager" \
  --leader-elect=false \
  --controllers='*' \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$CERTS/sa.key" \
  --root-ca-file="$CERTS/ca.crt" \
  --cluster-signing-cert-file="$CERTS/ca.crt" \
  --cluster-signing-key-file="$CERTS/ca.key" \
  ${kcm_limits[@]+"${kcm_limits[@]}"} \
  --v="$VERBOSITY"
wait_for kube-controller-manager "healthy on https://127.0.0.1:$KCM_PORT/healthz" secure_healthz "$KCM_PORT"
# Its controllers are running once the ServiceAccount controller has made the
# default namespace's ServiceAccount (pods need one in their namespace).
wait_for kube-controller-manager "making the ServiceAccount default/default" \
  kubectl_ get serviceaccount default --namespace default
done_step kube-controller-manager "healthy, controllers running"

begin kube-scheduler
start kube-scheduler "$LOCAL_BIN/kube-scheduler" \
  --kubeconfig="$CONFIG/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig="$CONFIG/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig="$CONFIG/kube-scheduler.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$SCHEDULER_PORT" \
  --cert-dir="$CERTS/kube-scheduler" \
  --leader-elect=false \
  ${scheduler_limits[@]+"${scheduler_limits[@]}"} \
  --v="$VERBOSITY"
wait_for kube-scheduler "healthy on https://127.0.0.1:$SCHEDULER_PORT/healthz" secure_healthz "$SCHEDULER_PORT"
done_step kube-scheduler healthy

if ((NODES > 0)); then
begin kwok
# kwok gives its pods addresses of POD_CIDR that nothing has, and the
# controller dials them (replication, TLS, the credentials check): without a
# route of their own they would go to the default route, off this machine.
# An unreachable route refuses them here at once; local-down.sh removes it.
# It needs root; a route to the range already there is left alone.
if ((EUID == 0)); then
  if [[ -z "$(ip route show "$POD_CIDR")" ]]; then
    ip route add unreachable "$POD_CIDR"
    printf '%s\n' "$POD_CIDR" > "$LOCAL_DIR/unreachable-route"
  fi
else
  echo "[local-up] not root: kwok's pod addresses ($POD_CIDR) have no route of their own; run the controller with --server-access=port-forward (make run-local does), or its connections to them go to the default route, off this machine" >&2
fi
# kwok provisions claims of the class kwok-volume only; the provision stage
# also takes kwok-expandable, a second class that allows volume expansion.
for f in "${STAGE_FILES[@]}"; do
  echo "---"
  echo "# $STAGE_DIR/$f"
  sed "s/self.spec.storageClassName == 'kwok-volume'/self.spec.storageClassName in ['kwok-volume', 'kwok-expandable']/" "$STAGE_DIR/$f"
done > "$CONFIG/kwok-stages.yaml"
grep -q "kwok-expandable" "$CONFIG/kwok-stages.yaml" ||
  local::die "kwok's pvc-provision stage no longer matches kwok-volume as expected; update local-up.sh"
# HOME points into LOCAL_DIR so that a ~/.kwok/kwok.yaml of the user's is
# not loaded on top of these stages.
start kwok env HOME="$LOCAL_DIR/kwok-home" "$LOCAL_BIN/kwok" \
  --kubeconfig="$CONFIG/kwok.kubeconfig" \
  --config="$CONFIG/kwok-stages.yaml" \
  --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --cidr="$POD_CIDR" \
  --node-ip="$NODE_IP" \
  --node-port="$KWOK_PORT" \
  --server-address="127.0.0.1:$KWOK_PORT"
kwok_healthy() {
  curl -sf --noproxy '*' --max-time 5 "http://127.0.0.1:$KWOK_PORT/healthz"
}
wait_for kwok "healthy on http://127.0.0.1:$KWOK_PORT/healthz" kwok_healthy

kubectl_ apply -f "$STORAGE_CLASS_FILE" >/dev/null ||
  fail kube-apiserver "refused the StorageClass from $STORAGE_CLASS_FILE"
kubectl_ apply -f - >/dev/null <<'YAML' || fail kube-apiserver "refused the StorageClass kwok-expandable"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: kwok-expandable
provisioner: kwok.x-k8s.io/volume
reclaimPolicy: Delete
volumeBindingMode: Immediate
allowVolumeExpansion: true
YAML
node_names=()
for ((i = 0; i < NODES; i++)); do
  node_names+=("kwok-node-$i")
done
for name in "${node_names[@]}"; do
  cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
spec: {}
status:
  capacity:
    cpu: "32"
    memory: 256Gi
    pods: "110"
  allocatable:
    cpu: "32"
    memory: 256Gi
    pods: "110"
EOF
done > "$CONFIG/nodes.yaml"
kubectl_ create -f "$CONFIG/nodes.yaml" >/dev/null ||
  fail kube-apiserver "refused the fake nodes in $CONFIG/nodes.yaml"
nodes_ready() {
  local name
  for name in "${node_names[@]}"; do
    [[ "$(kubectl_ get node "$name" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" == True ]] || return 1
  done
}
wait_for kwok "making the fake node(s) ${node_names[*]} Ready" nodes_ready
done_step kwok "ready, node(s) ${node_names[*]} Ready"
fi

if ((REAL_NODE)); then
  node::up
fi

# The object store. Its root account's secret is new at each start, as the
# certificates are; the bucket is a directory of the posix backend.
begin "object store (versitygw)"
store_ip=127.0.0.1
if ((REAL_NODE)); then
  store_ip=$(sed -n 's/^HOST_IP=//p' "$LOCAL_DIR/node/node.env")
fi
rm -rf --one-file-system "$LOCAL_DIR/objectstore"
mkdir -p "$LOCAL_DIR/objectstore/backups"
store_secret=$(openssl rand -hex 24)
cat > "$LOCAL_DIR/objectstore.env" <<EOF
OBJECTSTORE_ENDPOINT=http://$store_ip:$OBJECTSTORE_PORT
OBJECTSTORE_BUCKET=backups
OBJECTSTORE_REGION=us-east-1
OBJECTSTORE_ACCESS_KEY_ID=dbc-local
OBJECTSTORE_SECRET_ACCESS_KEY=$store_secret
EOF
chmod 600 "$LOCAL_DIR/objectstore.env"
start versitygw env ROOT_ACCESS_KEY_ID=dbc-local ROOT_SECRET_ACCESS_KEY="$store_secret" "$LOCAL_BIN/versitygw" \
  --port "$store_ip:$OBJECTSTORE_PORT" --region us-east-1 posix "$LOCAL_DIR/objectstore"
store_answers() {
  # Any HTTP answer (403 to an unsigned request) means it serves.
  curl -s -o /dev/null --noproxy '*' --max-time 2 "http://$store_ip:$OBJECTSTORE_PORT/"
}
wait_for versitygw "answering on http://$store_ip:$OBJECTSTORE_PORT" store_answers
done_step versitygw "serving http://$store_ip:$OBJECTSTORE_PORT, bucket backups (credentials: $LOCAL_DIR/objectstore.env)"

UP_DONE=1
local::log "local control plane is up in $(local::since "$total_start")s (state: $LOCAL_DIR)"

down_cmd="hack/local-down.sh"
if [[ "$LOCAL_DIR" != "$LOCAL_ROOT/_output/local" ]]; then
  down_cmd="LOCAL_DIR=$LOCAL_DIR $down_cmd"
fi

if ((!FOREGROUND)); then
  cat <<EOF

  export KUBECONFIG=$KUBECONFIG_PATH

  logs: $LOCAL_DIR/logs/<component>.log
  object store: $LOCAL_DIR/objectstore.env
  stop: $down_cmd

EOF
  exit 0
fi

cat <<EOF

  export KUBECONFIG=$KUBECONFIG_PATH

  logs: $LOCAL_DIR/logs/<component>.log
  object store: $LOCAL_DIR/objectstore.env
  Running in the foreground: Ctrl-C stops everything.

EOF
# Watch the components; one that dies takes the others down with it.
while :; do
  for name in "${!PID_OF[@]}"; do
    if ! running "$name"; then
      UP_DONE=0
      fail "$name" "exited unexpectedly"
    fi
  done
  sleep 2 &
  wait $! || true
done
