# shellcheck shell=bash
# The real node of the local control plane (LOCAL_REAL_NODE=1): containerd
# with runc, a kubelet, kube-proxy and CoreDNS, joined to the API server that
# hack/local-up.sh starts, so that pods really run. Sourced by local-up.sh
# (node::up, which uses its start/wait_for/fail helpers) and local-down.sh
# (node::down). Needs root.
#
# Everything network-related lives in a network namespace of its own
# (dbc-<id>, <id> from LOCAL_DIR), joined to the host by one veth pair whose
# two addresses are private to it: the node's interfaces, its bridge, its
# iptables rules (kube-proxy's) and its forwarding sysctl never touch the
# host's. The API server keeps listening on the host's loopback only:
# netnsproxy listens on 127.0.0.1:<API server port> inside the namespace and
# forwards to it. The API server reaches the kubelet at the node's veth
# address. The host routes the pod range through the veth pair. Pods get
# routes to their own subnet, to the Service range and to the host's end of
# the veth pair, nothing else, and cluster DNS (CoreDNS on the bridge's gateway address)
# answers only the cluster domain, with no forwarding: no pod traffic leaves
# the machine.
#
# What the node changes outside $LOCAL_DIR/node, and how node::down undoes
# it:
#   - the network namespace and the veth pair: deleted;
#   - the cgroups /<controller>/dbc-<id>: emptied (every process killed) and
#     removed depth-first;
#   - the mounts under $LOCAL_DIR/node (overlays, volumes, pod namespaces):
#     unmounted;
#   - the sysctls the kubelet sets (vm.overcommit_memory, kernel.panic,
#     kernel.panic_on_oops) and the host paths the kubelet, containerd and
#     the CNI plugins create (/var/lib/kubelet, /var/log/containers,
#     /var/lib/cni, /run/containerd, ...): recorded in /run/dbc-real-node
#     before the first node of the machine starts, restored or removed
#     when the last one stops (a machine can run several, e.g. the e2e
#     suite's beside `make run-local`'s).
# Kernel modules that iptables and the bridge load (nf_conntrack, bridge,
# veth, ...) stay loaded.

# The binaries and packages the node needs.
NODE_BINARIES=(kubelet kube-proxy containerd containerd-shim-runc-v2 ctr coredns netnsproxy)
# shellcheck source=hack/lib/node-packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-packages.sh"
# The host paths that the node's programs create outside $LOCAL_DIR/node.
NODE_HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd
  /run/netns /var/run/cdi /etc/cdi /opt/containerd /usr/libexec/kubernetes)
NODE_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
NODE_REGISTRY=/run/dbc-real-node

node::vars() {
  NODE_DIR="$LOCAL_DIR/node"
  NODE_ID=$(printf '%s' "$LOCAL_DIR" | sha256sum | cut -c1-8)
  NODE_NETNS="dbc-$NODE_ID"
  NODE_NETNS_PATH="/run/netns/$NODE_NETNS"
  NODE_VETH_HOST="dbc${NODE_ID}h"
  NODE_VETH_NODE="dbc${NODE_ID}n"
  NODE_CGROUP="dbc-$NODE_ID"
  NODE_NAME=${LOCAL_REAL_NODE_NAME:-real-node}
  NODE_POD_CIDR=${LOCAL_REAL_NODE_POD_CIDR:-10.0.2.0/24}
  NODE_VOLUMES=${LOCAL_REAL_NODE_VOLUMES:-20}
  NODE_SOCK="$NODE_DIR/containerd/containerd.sock"
  NODE_STORAGE_CLASS=real-node-local
  IMAGES_DIR=${IMAGES_DIR:-$LOCAL_ROOT/_output/images}
  # shellcheck source=../images/names.sh
  source "$LOCAL_ROOT/hack/images/names.sh"
}

node::ctr() {
  "$LOCAL_BIN/ctr" --address "$NODE_SOCK" --namespace k8s.io "$@"
}

# node::in_netns COMMAND... runs COMMAND in the node's network namespace
# (and in no other namespace of its: `ip netns exec` would also give it a
# mount namespace of its own, where the kubelet's mounts would be invisible
# to containerd).
node::in_netns() {
  nsenter --net="$NODE_NETNS_PATH" -- "$@"
}

# node::cgroup_dirs prints the node's cgroup directory in every mounted
# cgroup hierarchy.
node::cgroup_dirs() {
  local d
  for d in /sys/fs/cgroup/*/; do
    [[ -d "$d$NODE_CGROUP" ]] && printf '%s\n' "$d$NODE_CGROUP"
  done
  [[ -f /sys/fs/cgroup/cgroup.controllers && -d "/sys/fs/cgroup/$NODE_CGROUP" ]] &&
    printf '%s\n' "/sys/fs/cgroup/$NODE_CGROUP"
  return 0
}

# node::cgroup_pids prints every process in the node's cgroups.
node::cgroup_pids() {
  local d
  while read -r d; do
    find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
  done < <(node::cgroup_dirs) | sort -un
}

# node::registry_enter records, under a lock, that this node runs; the first
# node of the machine first records the sysctls and which host paths exist.
node::registry_enter() {
  (
    flock 7
    mkdir -p "$NODE_REGISTRY/nodes"
    # Forget nodes whose network namespace is gone (stopped without
    # local-down.sh, or before a reboot).
    local f
    for f in "$NODE_REGISTRY"/nodes/*; do
      [[ -e "$f" && ! -e "/run/netns/dbc-${f##*/}" ]] && rm -f "$f"
    done
    if [[ -z "$(ls -A "$NODE_REGISTRY/nodes")" ]]; then
      local s p
      : > "$NODE_REGISTRY/sysctls"
      for s in "${NODE_SYSCTLS[@]}"; do
        printf '%s=%s\n' "$s" "$(sysctl -n "$s")" >> "$NODE_REGISTRY/sysctls"
      done
      : > "$NODE_REGISTRY/absent-paths"
      for p in "${NODE_HOST_PATHS[@]}"; do
        [[ -e "$p" ]] || printf '%s\n' "$p" >> "$NODE_REGISTRY/absent-paths"
      done
    fi
    printf '%s\n' "$LOCAL_DIR" > "$NODE_REGISTRY/nodes/$NODE_ID"
  ) 7>"$NODE_REGISTRY.lock"
}

# node::registry_leave forgets this node; the last one restores the sysctls
# and removes the host paths that did not exist before the first started.
node::registry_leave() {
  [[ -d "$NODE_REGISTRY" ]] || return 0
  (
    flock 7
    rm -f "$NODE_REGISTRY/nodes/$NODE_ID"
    if [[ -z "$(ls -A "$NODE_REGISTRY/nodes" 2>/dev/null)" ]]; then
      local line p
      while read -r line; do
        [[ -n "$line" ]] && sysctl -q -w "$line" >/dev/null
      done < "$NODE_REGISTRY/sysctls"
      while read -r p; do
        [[ -n "$p" && -e "$p" ]] || continue
        # `ip netns add` makes /run/netns a mount of its own.
        if [[ "$p" == /run/netns && -z "$(ls -A "$p")" ]] && findmnt -rn -o TARGET | grep -qx "$p"; then
          umount "$p" || true
        fi
        if findmnt -rn -o TARGET | grep -q "^$p\(/\|$\)"; then
          local::log "real node: $p holds mounts; not removed"
          continue
        fi
        rm -rf --one-file-system "$p"
      done < "$NODE_REGISTRY/absent-paths"
      rm -rf "$NODE_REGISTRY"
      rm -f "$NODE_REGISTRY.lock"
    fi
  ) 7>"$NODE_REGISTRY.lock"
}

# node::link_net prints the /30 of the veth pair: 10.250.N.0/30 for the
# first N from the node's id that no host address uses.
node::link_net() {
  local n=$((16#${NODE_ID:0:4} % 64)) i
  for ((i = 0; i < 64; i++)); do
    if ! ip -4 -o addr show | grep -q " 10\.250\.$(((n + i) % 64 * 4))\."; then
      printf '10.250.%d.0\n' $(((n + i) % 64 * 4))
      return 0
    fi
  done
  return 1
}

# node::gateway prints the bridge's address: the pod range's first.
node::gateway() {
  local ip=${NODE_POD_CIDR%/*}
  printf '%s.%d\n' "${ip%.*}" $((${ip##*.} + 1))
}

# node::write_configs NODE_IP HOST_IP writes containerd's, the CNI's, the
# kubelet's, kube-proxy's and CoreDNS's configuration.
node::write_configs() {
  local node_ip=$1 host_ip=$2 gw
  gw=$(node::gateway)
  mkdir -p "$NODE_DIR"/{containerd,cni/conf,cni/networks,runc,kubelet,pod-logs,volumes,config}
  cat > "$NODE_DIR/config/containerd.toml" <<EOF
version = 3
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.erofs",
  "io.containerd.snapshotter.v1.blockfile", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$NODE_SOCK"

[ttrpc]
  address = "$NODE_SOCK.ttrpc"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$DBC_PAUSE_IMAGE"

[plugins.'io.containerd.cri.v1.runtime']
  # This VM has no CAP_SYS_RESOURCE: without this every sandbox fails with
  # "nsexec: failed to update /proc/self/oom_score_adj: Permission denied".
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      SystemdCgroup = false
      Root = "$NODE_DIR/runc"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$NODE_DIR/cni/conf"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
  cat > "$NODE_DIR/cni/conf/10-$NODE_NETNS.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$NODE_NETNS",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$NODE_DIR/cni/networks",
        "ranges": [[{"subnet": "$NODE_POD_CIDR", "gateway": "$gw"}]],
        "routes": [{"dst": "$SERVICE_CIDR"}, {"dst": "$host_ip/32"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
  # The kubelet's own resolv.conf: no nameserver and no search domain of
  # the host's, so that no pod lookup reaches the host's resolver.
  printf '# the real node of %s: no host resolver\noptions ndots:5\n' "$LOCAL_DIR" > "$NODE_DIR/config/resolv.conf"
  cat > "$NODE_DIR/config/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$NODE_CGROUP
failSwapOn: false
address: $node_ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$CERTS/ca.crt"}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: ["$gw"]
resolvConf: "$NODE_DIR/config/resolv.conf"
containerRuntimeEndpoint: "unix://$NODE_SOCK"
podLogsDir: "$NODE_DIR/pod-logs"
volumePluginDir: "$NODE_DIR/kubelet/volume-plugins"
makeIPTablesUtilChains: false
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusReportFrequency: 10s
EOF
  cat > "$NODE_DIR/config/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$CONFIG/kube-proxy.kubeconfig"}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $NODE_POD_CIDR
# Service traffic is masqueraded to the bridge's address, so that replies
# between two pods of the bridge come back through the node's conntrack
# (no br_netfilter needed on the host).
iptables: {masqueradeAll: true, localhostNodePorts: false, syncPeriod: 30s, minSyncPeriod: 0s}
# Leave the host-wide conntrack settings alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
EOF
  cat > "$NODE_DIR/config/Corefile" <<EOF
# The cluster domain only, from the API server; no forwarding.
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind $gw
    ready 127.0.0.1:8181
    errors
    cache 5
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $CONFIG/coredns.kubeconfig local
        pods insecure
        ttl 5
    }
}
EOF
}

# node::certs signs the node's client certificates (local-up.sh's sign).
node::certs() {
  node::vars
  sign kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth || return 1
  sign kube-proxy "/CN=system:kube-proxy" clientAuth || return 1
  sign coredns "/CN=dbc:coredns" clientAuth || return 1
}

# node::preflight fails early, before anything starts, when the node
# cannot run here: not root, or a Debian package, a binary or an image
# missing.
node::preflight() {
  node::vars
  local b
  [[ $(id -u) -eq 0 ]] || local::die "LOCAL_REAL_NODE=1 needs root (containerd, runc, network namespaces)"
  [[ "$NODE_VOLUMES" =~ ^[0-9]+$ ]] || local::die "LOCAL_REAL_NODE_VOLUMES must be a number"
  "$LOCAL_ROOT/hack/tools/debian-deps.sh" "${NODE_DEBIAN_PACKAGES[@]}" ||
    local::die "the real node needs the Debian packages named above"
  for b in "${NODE_BINARIES[@]}"; do
    [[ -x "$LOCAL_BIN/$b" ]] || local::die "$LOCAL_BIN/$b is missing: run hack/tools/build.sh kube node"
  done
  for b in pause postgresql postgresql-slowinit mariadb mysql; do
    [[ -f "$IMAGES_DIR/$b.tar" ]] || local::die "$IMAGES_DIR/$b.tar is missing: run hack/tools/build.sh node"
  done
}

node::up() {
  node::preflight
  local start gw link host_ip node_ip
  start=$(local::now)
  if ip netns list | grep -qw "$NODE_NETNS"; then
    local::die "network namespace $NODE_NETNS exists: run LOCAL_DIR=$LOCAL_DIR hack/local-down.sh"
  fi

  begin "real node $NODE_NAME (network namespace $NODE_NETNS)"
  node::registry_enter
  rm -rf --one-file-system "$NODE_DIR"
  mkdir -p "$NODE_DIR"
  link=$(node::link_net) || fail kube-apiserver "found no free /30 in 10.250.0.0/16 for the node's veth pair"
  host_ip="${link%.0}.1" node_ip="${link%.0}.2" gw=$(node::gateway)
  printf 'NODE_IP=%s\nHOST_IP=%s\n' "$node_ip" "$host_ip" > "$NODE_DIR/node.env"

  # The network namespace, its veth pair and the pods' bridge, which exists
  # before the first pod so that CoreDNS can listen on its address.
  ip netns add "$NODE_NETNS"
  ip link add "$NODE_VETH_HOST" type veth peer name "$NODE_VETH_NODE" netns "$NODE_NETNS"
  ip addr add "$host_ip/30" dev "$NODE_VETH_HOST"
  ip link set "$NODE_VETH_HOST" up
  node::in_netns ip link set lo up
  node::in_netns ip addr add "$node_ip/30" dev "$NODE_VETH_NODE"
  node::in_netns ip link set "$NODE_VETH_NODE" up
  node::in_netns ip link add cni0 type bridge
  node::in_netns ip addr add "$gw/${NODE_POD_CIDR#*/}" dev cni0
  node::in_netns ip link set cni0 up
  # The host reaches the pods through the veth pair, as a cluster node's
  # host reaches its pod network: a controller run on the host talks to
  # its servers (PostgreSQL replication), and the pods route the replies
  # back through the bridge (the CNI's route to the host's end). The route
  # goes with the veth pair.
  # Another node of this machine with the same pod range has the route
  # already: then this node's pods are not reachable from the host.
  ip route add "$NODE_POD_CIDR" via "$node_ip" dev "$NODE_VETH_HOST" 2>/dev/null ||
    echo "[local-up] the pod range $NODE_POD_CIDR is routed to another node already: this node's pods are not reachable from the host (set LOCAL_REAL_NODE_POD_CIDR)" >&2

  # The kubelet's cgroup root, in every hierarchy (cpuset needs its cpus and
  # mems before a process can join).
  local d
  for d in /sys/fs/cgroup/*/; do
    [[ -f "$d/cgroup.procs" ]] || continue
    mkdir -p "$d$NODE_CGROUP"
    if [[ -f "$d/cpuset.cpus" ]]; then
      cat "$d/cpuset.cpus" > "$d$NODE_CGROUP/cpuset.cpus"
      cat "$d/cpuset.mems" > "$d$NODE_CGROUP/cpuset.mems"
    fi
  done

  node::write_configs "$node_ip" "$host_ip"
  done_step "real node network and cgroups" "ready"

  begin "containerd (real node)"
  start netnsproxy "$LOCAL_BIN/netnsproxy" --netns="$NODE_NETNS_PATH" \
    --listen="127.0.0.1:$APISERVER_PORT" --connect="127.0.0.1:$APISERVER_PORT" \
    --id="$NODE_DIR"
  start containerd nsenter --net="$NODE_NETNS_PATH" -- "$LOCAL_BIN/containerd" \
    --config="$NODE_DIR/config/containerd.toml"
  wait_for containerd "serving on $NODE_SOCK" node::ctr version
  for b in pause controller postgresql postgresql-slowinit postgresql17 mariadb mariadb118 mysql postgres-exporter mysqld-exporter; do
    node::ctr images import "$IMAGES_DIR/$b.tar" > /dev/null 2>>"$(local::logfile containerd)" ||
      fail containerd "could not import $IMAGES_DIR/$b.tar"
  done
  for b in "$DBC_PAUSE_IMAGE" "$DBC_CONTROLLER_IMAGE" "$DBC_POSTGRESQL_IMAGE" "$DBC_POSTGRESQL_SLOWINIT_IMAGE" "$DBC_POSTGRESQL17_IMAGE" "$DBC_MARIADB_IMAGE" "$DBC_MARIADB118_IMAGE" "$DBC_MYSQL_IMAGE" \
    "$DBC_POSTGRES_EXPORTER_IMAGE" "$DBC_MYSQLD_EXPORTER_IMAGE"; do
    node::ctr images label "$b" io.cri-containerd.pinned=pinned > /dev/null 2>>"$(local::logfile containerd)" ||
      fail containerd "could not pin $b"
  done
  done_step containerd "serving, images imported"

  begin "kubelet (real node)"
  write_kubeconfig "$CONFIG/kubelet.kubeconfig" kubelet
  write_kubeconfig "$CONFIG/kube-proxy.kubeconfig" kube-proxy
  write_kubeconfig "$CONFIG/coredns.kubeconfig" coredns
  start kubelet nsenter --net="$NODE_NETNS_PATH" -- "$LOCAL_BIN/kubelet" \
    --config="$NODE_DIR/config/kubelet.yaml" \
    --kubeconfig="$CONFIG/kubelet.kubeconfig" \
    --root-dir="$NODE_DIR/kubelet" \
    --cert-dir="$NODE_DIR/kubelet/pki" \
    --hostname-override="$NODE_NAME" \
    --node-ip="$node_ip" \
    --node-labels="dbcontroller.io/real-node=true" \
    --v="$VERBOSITY"
  node_ready() {
    [[ "$(kubectl_ get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" == True ]]
  }
  wait_for kubelet "registering node $NODE_NAME Ready" node_ready
  done_step kubelet "node $NODE_NAME Ready"

  begin "kube-proxy and CoreDNS (real node)"
  node::apply_objects || fail kube-apiserver "refused the real node's StorageClass, volumes or RBAC"
  start kube-proxy nsenter --net="$NODE_NETNS_PATH" -- "$LOCAL_BIN/kube-proxy" \
    --config="$NODE_DIR/config/kube-proxy.yaml" --v="$VERBOSITY"
  start coredns nsenter --net="$NODE_NETNS_PATH" -- "$LOCAL_BIN/coredns" \
    -conf "$NODE_DIR/config/Corefile"
  wait_for kube-proxy "healthy on 127.0.0.1:10256 in $NODE_NETNS" \
    node::in_netns curl -sf --noproxy '*' --max-time 2 http://127.0.0.1:10256/healthz
  wait_for coredns "ready on 127.0.0.1:8181 in $NODE_NETNS" \
    node::in_netns curl -sf --noproxy '*' --max-time 2 http://127.0.0.1:8181/ready
  done_step "kube-proxy and CoreDNS" "ready (cluster DNS $gw)"
  local::log "real node $NODE_NAME is up in $(local::since "$start")s"
}

# node::apply_objects creates the node's StorageClass and its local
# PersistentVolumes (directories under $LOCAL_DIR/node/volumes), and lets
# CoreDNS read Services, EndpointSlices, Namespaces and Pods.
node::apply_objects() {
  local i default=false
  ((NODES == 0)) && default=true
  {
    cat <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $NODE_STORAGE_CLASS
  annotations:
    storageclass.kubernetes.io/is-default-class: "$default"
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Retain
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: dbc:coredns
rules:
- apiGroups: [""]
  resources: [services, endpoints, namespaces, pods]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: dbc:coredns
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "dbc:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "dbc:coredns"}
EOF
    for ((i = 0; i < NODE_VOLUMES; i++)); do
      mkdir -p "$NODE_DIR/volumes/pv-$i"
      cat <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $NODE_NAME-pv-$i
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: $NODE_STORAGE_CLASS
  local: {path: "$NODE_DIR/volumes/pv-$i"}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: ["$NODE_NAME"]}
EOF
    done
  } | kubectl_ apply -f - > /dev/null
}

# node::down stops the node and undoes what it changed on the host. Safe to
# run when no node runs, and after a start that failed half-way.
node::down() {
  node::vars
  local start pids d tries m
  [[ -d "$NODE_DIR" || -e "$NODE_NETNS_PATH" || -n "$(node::cgroup_dirs)" ]] || return 0
  start=$(local::now)
  # The kubelet first, so that it restarts nothing; then every process of
  # the pods (all in the node's cgroups); then containerd and the rest.
  stop_components kubelet kube-proxy coredns
  # The CNI plugins cache a result per sandbox and interface under
  # /var/lib/cni/results, named <network>-<sandbox id>-<interface>.
  local -a ids=()
  if [[ -S "$NODE_SOCK" ]]; then
    mapfile -t ids < <(node::ctr containers list --quiet 2>/dev/null)
  fi
  tries=0
  while pids=$(node::cgroup_pids) && [[ -n "$pids" ]]; do
    # shellcheck disable=SC2086 # one pid per word
    kill -KILL $pids 2>/dev/null || true
    ((++tries < 100)) || { local::log "real node: processes $pids survive SIGKILL"; break; }
    sleep 0.1
  done
  stop_components containerd netnsproxy
  # The shims exit with their containers; any left over are strays, which
  # local-down.sh stops after this.
  local -a shims=()
  for m in $(local::strays); do
    if local::is_ours "$m" containerd-shim-runc-v2; then
      shims+=("$m")
    fi
  done
  ((${#shims[@]} == 0)) || local::terminate "containerd shims" "${shims[@]}"

  # Mounts (overlays, volumes, pod network namespaces), deepest first.
  if [[ -d "$NODE_DIR" ]]; then
    while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || local::log "real node: cannot unmount $m"
    done < <(findmnt -rn -o TARGET | awk -v p="$NODE_DIR/" 'index($0, p) == 1' | sort -r)
  fi
  if [[ -e "$NODE_NETNS_PATH" ]]; then
    ip netns delete "$NODE_NETNS" || local::log "real node: cannot delete network namespace $NODE_NETNS"
  fi
  # The veth pair goes with the namespace; a half-made one may not have.
  if ip link show "$NODE_VETH_HOST" > /dev/null 2>&1; then
    ip link delete "$NODE_VETH_HOST" || true
  fi
  while read -r d; do
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null ||
      local::log "real node: cannot remove cgroup $d"
  done < <(node::cgroup_dirs)
  for m in "${ids[@]}"; do
    [[ "$m" =~ ^[0-9a-f]{64}$ ]] && rm -f /var/lib/cni/results/*-"$m"-*
  done
  rm -f /var/lib/cni/results/"$NODE_NETNS"-* 2>/dev/null || true
  if [[ -z "$(findmnt -rn -o TARGET | awk -v p="$NODE_DIR/" 'index($0, p) == 1')" ]]; then
    rm -rf --one-file-system "$NODE_DIR"
  else
    local::log "real node: mounts remain under $NODE_DIR; left in place"
  fi
  node::registry_leave
  local::log "stopped real node $NODE_NAME in $(local::since "$start")s"
}
