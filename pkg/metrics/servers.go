package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbcontroller/database-controller/pkg/podnet"
)

// RegisterServerAccess exposes how the controller reaches the servers at
// their pods' addresses (package podnet): the --server-access flag's
// value and the access it practises (auto is direct in a cluster), the
// connections opened by path and result (ObserveDial), and the tunnels
// through the API server open at a scrape.
func (m *Metrics) RegisterServerAccess(access, effective podnet.Access, tunnelsOpen func() int) {
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "server_access_info",
		Help:        "How the controller reaches the servers at their pods' addresses: the --server-access flag (access) and what it practises (effective).",
		ConstLabels: prometheus.Labels{"access": string(access), "effective": string(effective)},
	})
	info.Set(1)
	m.serverDials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "server_dials_total",
		Help: "Connections the controller opened to the servers, by path (direct, port-forward: through the API server) and result (success, error).",
	}, []string{"path", "result"})
	m.Registry.MustRegister(info, m.serverDials, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "server_tunnels",
		Help: "Connections to pods' portforward subresources open, one per pod reached through the API server.",
	}, func() float64 { return float64(tunnelsOpen()) }))
}

// ObserveDial counts one connection to a server (podnet.Observer).
func (m *Metrics) ObserveDial(path podnet.Path, err error) {
	if m.serverDials == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
	}
	m.serverDials.WithLabelValues(string(path), result).Inc()
}
