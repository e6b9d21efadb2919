# shellcheck shell=bash
# The Debian packages the real node needs, as PACKAGE:PATH for
# hack/tools/debian-deps.sh. Sourced by hack/lib/node.sh, which checks them
# at start, and by hack/tools/build.sh, which installs them when it builds
# the node: so that they are there before anything compares the host with
# itself around a node's life (the real-node suite), not installed by the
# node's first start. (nftables: the real-node suite's dead tunnels, a
# table of the host's for the time of one test.)
NODE_DEBIAN_PACKAGES=(runc:runc containernetworking-plugins:/usr/lib/cni/bridge iptables:iptables
  conntrack:conntrack iproute2:ip util-linux:nsenter nftables:nft)
