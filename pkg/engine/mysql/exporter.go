package mysql

import (
	"github.com/dbcontroller/database-controller/pkg/engine"
)

// ExporterImage is mysqld_exporter's image by default: the version the
// real node's image (Debian's prometheus-mysqld-exporter) stands for.
const ExporterImage = "quay.io/prometheus/mysqld-exporter:v0.17.2"

// exporter is mysqld_exporter, with its default collectors, for MySQL and
// MariaDB. It logs in over the loopback as engine.MonitoringUser, which
// has no password. The servers of spec.tls.mode Required refuse plain
// text over TCP, the loopback's too (require_secure_transport), so that
// with TLS on it connects with TLS, unverified: the loopback does not
// leave the pod.
var exporter = engine.Exporter{
	Image: ExporterImage,
	Port:  9104,
	Config: func(_, tlsMode string) ([]string, []engine.EnvValue) {
		args := []string{"--mysqld.address=127.0.0.1:3306", "--mysqld.username=" + engine.MonitoringUser, "--web.listen-address=:9104"}
		if tlsMode != "" && tlsMode != "Disabled" {
			args = append(args, "--tls.insecure-skip-verify")
		}
		return args, nil
	},
}
