package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbcontroller/database-controller/pkg/podnet"
)

// RegisterServerAccess exposes how the controller reaches the servers at
// their pods' addresses (package podnet): the --server-access flag's
// value and the access it practises (auto is direct in a cluster), the
// connections opened by path and result (ObserveDial), and of the tunnels
// through the API server, when it has any (tunnels not nil): how many are
// open, how many were made, and the bytes through them.
func (m *Metrics) RegisterServerAccess(access, effective podnet.Access, tunnels *podnet.Tunnels) {
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
	m.Registry.MustRegister(info, m.serverDials)
	if tunnels == nil {
		return
	}
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "server_tunnels",
		Help: "Connections to pods' portforward subresources open, one per pod reached through the API server.",
	}, func() float64 { return float64(tunnels.Open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "server_tunnel_connects_total",
			Help: "Connections made to pods' portforward subresources, one API request each (a tunnel carries every connection to its pod).",
		}, func() float64 { return float64(tunnels.Connects()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "server_tunnel_bytes_total",
			Help: "Bytes the controller's connections to the servers sent and received through the API server, counted as each connection ends.",
		}, func() float64 { return float64(tunnels.Bytes()) }))
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
