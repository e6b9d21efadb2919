package mysql

import "github.com/dbcontroller/database-controller/pkg/engine"

// tlsAuthorityEnv names, in the replication's init container and a backup
// Job's tool, the authorities to verify the server against: set only when
// the Database's servers have TLS.
const tlsAuthorityEnv = "DBC_TLS_CA"

// tls turns on the server's TLS with the controller's certificate, the
// same options for MySQL and MariaDB; the files are read again on MySQL's
// ALTER INSTANCE RELOAD TLS and MariaDB's FLUSH SSL. Required refuses
// connections in plain text over TCP (a socket is secure to both).
var tls = engine.TLS{
	ServerArgs: func(mode string) []string {
		args := []string{
			"--ssl-ca=" + engine.TLSAuthorityFile,
			"--ssl-cert=" + engine.TLSCertFile,
			"--ssl-key=" + engine.TLSKeyFile,
		}
		if mode == "Required" {
			args = append(args, "--require-secure-transport=ON")
		}
		return args
	},
	// The init script's client, clone, seeding dump and replication
	// channel verify the primary's certificate and its name: they reach
	// it through the client Service, a name the certificate has. A
	// backup's dump verifies the server it reaches (a pod through the
	// headless Service, or the client Service).
	ReplicationEnv: map[string]string{tlsAuthorityEnv: engine.TLSAuthorityFile},
	ClientEnv:      map[string]string{tlsAuthorityEnv: engine.ClientAuthorityFile},
}

// clientTLS sets $tls to the options that have the image's client
// programs (mysql, mysqldump, or MariaDB's) verify the server's
// certificate against $DBC_TLS_CA and the name they reach it at, and
// $dialect to mysql or mariadb (by the image's server). Without
// $DBC_TLS_CA, $tls is empty: no TLS of the controller's.
const clientTLS = `dialect=mysql
if command -v mariadbd >/dev/null 2>&1; then dialect=mariadb; fi
tls=
if [ -n "${` + tlsAuthorityEnv + `:-}" ]; then
  if [ "$dialect" = mariadb ]; then tls="--ssl --ssl-verify-server-cert --ssl-ca=$` + tlsAuthorityEnv + `"
  else tls="--ssl-mode=VERIFY_IDENTITY --ssl-ca=$` + tlsAuthorityEnv + `"; fi
fi
`
