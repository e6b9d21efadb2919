package postgresql

import (
	"github.com/dbcontroller/database-controller/pkg/engine"
)

// ExporterImage is postgres_exporter's image by default: the version the
// real node's image (Debian's prometheus-postgres-exporter) stands for.
const ExporterImage = "quay.io/prometheuscommunity/postgres-exporter:v0.17.1"

// exporter is postgres_exporter, with its default collectors. It logs in
// over the loopback, which the servers' pg_hba.conf trusts (hba), as
// engine.MonitoringUser, to the Database's own database, so that the
// per-table statistics are the user's tables'; TLS would buy nothing on
// the loopback, and the loopback takes plain text in every spec.tls.mode.
var exporter = engine.Exporter{
	Image: ExporterImage,
	Port:  9187,
	// Read when it first connects to the server (and when the server's
	// version changes), not when the file changes.
	QueriesFlag: "--extend.query-path=",
	Config: func(database, _ string) ([]string, []engine.EnvValue) {
		// database is engine.DatabaseName's: letters, digits and '_'.
		return []string{"--web.listen-address=:9187"}, []engine.EnvValue{
			{Name: "DATA_SOURCE_URI", Value: "127.0.0.1:5432/" + database + "?sslmode=disable"},
			{Name: "DATA_SOURCE_USER", Value: engine.MonitoringUser},
		}
	},
}
