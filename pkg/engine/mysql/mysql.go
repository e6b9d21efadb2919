// Package mysql runs MySQL on the official mysql image, and MariaDB on the
// official mariadb image, which keeps the mysql image's contract
// (MYSQL_ROOT_PASSWORD and the rest). A release series is major.minor
// ("8.4", "11.8"); MariaDB's begin at 10, MySQL's end before.
package mysql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	// The series docker-library builds (8.4 and 9.7, the long-term
	// support ones) and 8.0, which it no longer does (EndOfLife).
	Catalog: engine.Catalog{Engine: Name, Repository: "mysql", Versions: []string{"8.0", "8.4", "9.7"}},
	Contract: engine.Runtime{
		Port:     3306,
		PortName: "mysql",
		Username: "root",
		SecretEnv: []engine.EnvFromSecret{
			{Name: "MYSQL_ROOT_PASSWORD", Key: engine.SecretKeyPassword},
			{Name: "MYSQL_DATABASE", Key: engine.SecretKeyDatabase},
		},
		FieldEnv:     []engine.EnvFromField{{Name: engine.PodIPEnv, FieldPath: "status.podIP"}},
		VersionEnv:   versionEnv,
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
		Exporter:    &exporter,
	},
}

// mariadbCatalog is MariaDB's long-term support series that the official
// mariadb image is built for, and 10.6, no longer maintained (EndOfLife).
var mariadbCatalog = engine.Catalog{Engine: "MariaDB", Repository: "mariadb", Versions: []string{"10.6", "10.11", "11.4", "11.8", "12.3"}}

// IsMariaDB tells whether version is one of MariaDB's release series
// (10.0 on) rather than MySQL's (up to 9.7 so far). Should MySQL reach a
// series 10, the family must come from the spec instead.
func IsMariaDB(version string) bool {
	major, err := strconv.Atoi(engine.Series(version, 1))
	return err == nil && major >= 10
}

// Versions lists MySQL's series, then MariaDB's, oldest first.
func (e Engine) Versions() []string {
	return append(e.Base.Versions(), mariadbCatalog.Versions...)
}

// Image returns the official image of version, from MySQL's catalog or
// MariaDB's, or override.
func (e Engine) Image(version, override string) (string, error) {
	if override != "" {
		return override, nil
	}
	c := base.Catalog
	if IsMariaDB(version) {
		c = mariadbCatalog
	}
	if slices.Contains(c.Versions, version) {
		return c.Image(version, "")
	}
	return "", fmt.Errorf("version %q of %s is not in the catalog (known: MySQL %s; MariaDB %s); use one of those or set spec.image",
		version, Name, strings.Join(base.Catalog.Versions, ", "), strings.Join(mariadbCatalog.Versions, ", "))
}

// versionEnv is the environment of MariaDB's servers: MARIADB_AUTO_UPGRADE
// has the official mariadb image's entrypoint upgrade the system tables
// (mariadb-upgrade, after a dump of them) at the first start of a new
// series on older data. MySQL's server does that itself.
func versionEnv(version string) []engine.EnvValue {
	if !IsMariaDB(version) {
		return nil
	}
	return []engine.EnvValue{{Name: "MARIADB_AUTO_UPGRADE", Value: "1"}}
}

// CheckVersionChange allows MySQL's upgrade to the next release series
// along 8.0 → 8.4 → 9.7 (since 8.0.16 the server upgrades its data
// dictionary and system tables in place at its first start; 8.4 to 9.7 is
// one long-term support series to the next), and MariaDB's upgrade to any
// newer series (MariaDB reads the data of every earlier one, and the
// image's entrypoint upgrades the system tables, versionEnv). It refuses a
// downgrade, a MySQL skip, and a move between MySQL and MariaDB, whose
// data directories differ.
func (Engine) CheckVersionChange(from engine.Running, desired string) error {
	running := from.Version
	if engine.Series(running, 2) != "" && engine.Series(desired, 2) != "" && IsMariaDB(running) != IsMariaDB(desired) {
		return &engine.VersionChangeError{Reason: engine.ReasonMajorUpgradeRefused, Message: fmt.Sprintf(
			"version %s is %s and the running version %s is %s: a move between MySQL and MariaDB is not an upgrade, their data directories differ. Set spec.version back to %s; to move, back up, restore into a new Database of version %s and check the application against it",
			desired, family(desired), running, family(running), running, desired)}
	}
	if IsMariaDB(desired) {
		return engine.RefuseDowngrade("MariaDB", 2, running, desired)
	}
	return engine.RefuseSeriesSkip(Name, base.Catalog.Versions, 2, running, desired)
}

func family(version string) string {
	if IsMariaDB(version) {
		return "MariaDB"
	}
	return "MySQL"
}

// FeatureCompatibilityVersion implements engine.Engine.
func (Engine) FeatureCompatibilityVersion(string) string { return "" }

// EndOfLife implements engine.Engine.
func (Engine) EndOfLife(version string) string {
	switch engine.Series(version, 2) {
	case "8.0":
		return "MySQL 8.0 is end of life: the mysql:8.0 image gets no more upstream rebuilds, security fixes included. It keeps running; move to 8.4 (spec.version: \"8.4\"), which upgrades the data in place and disables mysql_native_password by default"
	case "10.6":
		return "MariaDB 10.6 is end of life since July 2026: no more community releases, security fixes included. It keeps running; move to a newer series (spec.version: \"11.8\", with spec.image if you set it), which upgrades the data in place"
	}
	return ""
}

// CheckRestore implements engine.Engine: a dump restores into the same
// series or a newer one.
func (Engine) CheckRestore(from, to string) error {
	return engine.RefuseRestoreIntoOlder("MySQL", 2, from, to)
}
