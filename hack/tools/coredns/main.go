// Command coredns is CoreDNS with only the plugins the real node's cluster
// DNS uses (hack/lib/node.sh writes its Corefile): it answers the cluster
// domain from the API server and nothing else. Building CoreDNS whole would
// pull in every cloud provider's SDK for plugins this never loads.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The same relative order as CoreDNS's own plugin.cfg.
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes"}
}

func main() {
	coremain.Run()
}
