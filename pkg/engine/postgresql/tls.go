package postgresql

import (
	"strings"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// hbaFile is the pg_hba.conf a server with TLS reads in place of its data
// directory's: the controller's, so that Required is its to enforce.
const hbaFile = engine.TLSDir + "/pg_hba.conf"

// tls turns on the server's TLS with the controller's certificate. ssl
// and the files are reloadable; hba_file is read at start, and its
// content on every reload.
var tls = engine.TLS{
	Server: "postgres",
	// The mode is pg_hba.conf's (Files), read again on every reload.
	ServerArgs: func(string) []string {
		return []string{
			"-c", "ssl=on",
			"-c", "ssl_cert_file=" + engine.TLSCertFile,
			"-c", "ssl_key_file=" + engine.TLSKeyFile,
			"-c", "hba_file=" + hbaFile,
		}
	},
	Files: func(mode string) map[string]string { return map[string]string{"pg_hba.conf": hba(mode)} },
	// The replication connection (the init script's conninfo, which
	// becomes primary_conninfo) and the script's own psql, pg_basebackup
	// and pg_rewind verify the primary's certificate and its name: they
	// reach it through the client Service, a name the certificate has.
	// A backup's pg_dump and pg_basebackup verify the server they reach
	// (a pod through the headless Service, or the client Service).
	ClientEnv: map[string]string{"PGSSLMODE": "verify-full", "PGSSLROOTCERT": engine.ClientAuthorityFile},
	ReplicationEnv: map[string]string{
		"DBC_REPLICATION_TLS": "sslmode=verify-full sslrootcert=" + engine.TLSAuthorityFile,
		"PGSSLMODE":           "verify-full",
		"PGSSLROOTCERT":       engine.TLSAuthorityFile,
	},
}

// hba is the pg_hba.conf of mode: the official image's rules (the
// server's own socket and loopback trusted, every other host with a
// password) and replication connections with a password from any host
// (replicas, pg_rewind, base backups). Required makes every rule for
// other hosts hostssl: a plain-text connection finds no rule and is
// refused.
func hba(mode string) string {
	host := "host"
	if mode == "Required" {
		host = "hostssl"
	}
	lines := []string{
		"# Written by database-controller (spec.tls.mode: " + mode + "); the data directory's pg_hba.conf is not read.",
		"local all all trust",
		"host all all 127.0.0.1/32 trust",
		"host all all ::1/128 trust",
		"local replication all trust",
		"host replication all 127.0.0.1/32 trust",
		"host replication all ::1/128 trust",
		host + " replication all all scram-sha-256",
		host + " all all all scram-sha-256",
	}
	return strings.Join(lines, "\n") + "\n"
}
