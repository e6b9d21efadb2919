// Package mysql runs MySQL on the official mysql image. Its release series
// is major.minor ("8.4").
package mysql

import (
	"github.com/dbcontroller/database-controller/pkg/engine"
)

// Name is the engine's name in spec.engine.
const Name = "mysql"

// Engine is MySQL: its catalog and runtime contract (data, in
// engine.Base), and its rules.
type Engine struct {
	*engine.Base
}

var _ engine.Engine = New()

// New returns the engine.
func New() Engine { return Engine{Base: &base} }

var base = engine.Base{
	Catalog: engine.Catalog{Engine: Name, Repository: "mysql", Versions: []string{"8.0", "8.4"}},
	Contract: engine.Runtime{
		Port:     3306,
		PortName: "mysql",
		Username: "root",
		SecretEnv: []engine.EnvFromSecret{
			{Name: "MYSQL_ROOT_PASSWORD", Key: engine.SecretKeyPassword},
			{Name: "MYSQL_DATABASE", Key: engine.SecretKeyDatabase},
		},
		FieldEnv:     []engine.EnvFromField{{Name: engine.PodIPEnv, FieldPath: "status.podIP"}},
		DataPath:     "/var/lib/mysql",
		ScratchPaths: []string{"/var/run/mysqld", "/tmp"},
		// mysqladmin ping succeeds even when the login fails: log in and
		// query the database, through the pod's own address, so that the
		// account is the one clients of other pods log in to (root@'%', not
		// root@localhost). A refused password (error 1045) is a server that
		// serves (engine.Runtime). The client is mysql in the mysql images,
		// and may be only mariadb in MariaDB's.
		// With TLS, MariaDB's client is asked for it (MySQL's uses it when
		// the server has it), with no verification of the pod's address,
		// which no certificate names: Required refuses plain text.
		ReadinessCommand: []string{"sh", "-c",
			`tls=
if [ -f ` + engine.TLSCertFile + ` ] && command -v mariadbd >/dev/null 2>&1; then tls="--ssl --skip-ssl-verify-server-cert"; fi
out=$(MYSQL_PWD="$MYSQL_ROOT_PASSWORD" "$(command -v mysql || command -v mariadb)" --protocol=TCP -h "$POD_IP" -P 3306 -uroot $tls --connect-timeout=3 -D "$MYSQL_DATABASE" -Nse 'SELECT 1' 2>&1) && exit 0
case "$out" in *"ERROR 1045 "*) exit 0;; esac
echo "$out"; exit 1`},
		ProbeTimeoutSeconds: 5,
		// The first start after 8.0 to 8.4 upgrades the data dictionary.
		StartupSeconds: 900,
		URIScheme:      "mysql",
		UID:            999,
		// No --databases: the dump loads into a database of another name.
		// The client programs are mysqldump and mysql in the mysql images,
		// and may be only mariadb-dump and mariadb in MariaDB's. $SOCKET is
		// the temporary server's socket in the entrypoint's first init.
		// With TLS the dump verifies the server (clientTLS).
		Backup: engine.BackupTool{
			Extension: "sql",
			Dump: clientTLS + `MYSQL_PWD="$PASSWORD" "$(command -v mysqldump || command -v mariadb-dump)" $tls --host="$HOST" --port="$PORT" --user="$USERNAME" ` +
				`--single-transaction --no-tablespaces --routines --triggers --events --result-file="$OUT" "$DATABASE"`,
			Restore: `MYSQL_PWD="$MYSQL_ROOT_PASSWORD" "$(command -v mysql || command -v mariadb)" --protocol=socket --socket="$SOCKET" -uroot "$MYSQL_DATABASE" < "$DBC_RESTORE_FILE" 2>/tmp/dbc-restore.err || ` +
				engine.RestoreFailed("/tmp/dbc-restore.err"),
			DataDirectory: "/var/lib/mysql",
			Initialised:   "[ -d /var/lib/mysql/mysql ]",
		},
		Replication: &replication,
		Parameters:  &parameters,
		TLS:         &tls,
	},
}

// CheckVersionChange allows an upgrade to the next release series (8.0 to
// 8.4: the server upgrades its data dictionary in place at its first start)
// and refuses a downgrade or a skip.
func (Engine) CheckVersionChange(from engine.Running, desired string) error {
	return engine.RefuseSeriesSkip(Name, base.Catalog.Versions, 2, from.Version, desired)
}

// FeatureCompatibilityVersion implements engine.Engine.
func (Engine) FeatureCompatibilityVersion(string) string { return "" }

// EndOfLife implements engine.Engine.
func (Engine) EndOfLife(version string) string {
	if engine.Series(version, 2) == "8.0" {
		return "MySQL 8.0 is end of life: the mysql:8.0 image gets no more upstream rebuilds, security fixes included. It keeps running; move to 8.4 (spec.version: \"8.4\"), which upgrades the data in place and disables mysql_native_password by default"
	}
	return ""
}

// CheckRestore implements engine.Engine: a dump restores into the same
// series or a newer one.
func (Engine) CheckRestore(from, to string) error {
	return engine.RefuseRestoreIntoOlder("MySQL", 2, from, to)
}
