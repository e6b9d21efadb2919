// Package postgresql runs PostgreSQL on the official postgres image. Its
// release series is the major version ("16").
package postgresql

import (
	"strconv"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// Name is the engine's name in spec.engine.
const Name = "postgresql"

// Engine is PostgreSQL: its catalog and runtime contract (data, in
// engine.Base), and its rules.
type Engine struct {
	*engine.Base
}

var _ engine.Engine = New()

// New returns the engine.
func New() Engine { return Engine{Base: &base} }

var base = engine.Base{
	Catalog: engine.Catalog{Engine: Name, Repository: "postgres", Versions: []string{"14", "15", "16", "17", "18"}},
	Contract: engine.Runtime{
		Port:     5432,
		PortName: "postgresql",
		Username: "postgres",
		SecretEnv: []engine.EnvFromSecret{
			{Name: "POSTGRES_USER", Key: engine.SecretKeyUsername},
			{Name: "POSTGRES_PASSWORD", Key: engine.SecretKeyPassword},
			{Name: "POSTGRES_DB", Key: engine.SecretKeyDatabase},
		},
		// A subdirectory, so initdb never meets the volume's lost+found.
		StaticEnv:    []engine.EnvValue{{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"}},
		FieldEnv:     []engine.EnvFromField{{Name: engine.PodIPEnv, FieldPath: "status.podIP"}},
		DataPath:     "/var/lib/postgresql/data",
		ScratchPaths: []string{"/var/run/postgresql", "/tmp"},
		// pg_isready would only say the server accepts connections: log in
		// and query the database. Through the pod's own address, as clients
		// of other pods do: the image's pg_hba.conf trusts 127.0.0.1 without
		// a password, and its "host all all all" line is the clients'. A
		// refused password is a server that serves (engine.Runtime); any
		// other failure, a pg_hba.conf that refuses the host among them, is
		// not.
		ReadinessCommand: []string{"sh", "-c",
			`out=$(PGPASSWORD="$POSTGRES_PASSWORD" PGCONNECT_TIMEOUT=3 psql -X -w -h "$POD_IP" -p 5432 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -tAc 'SELECT 1' 2>&1) && exit 0
case "$out" in *"password authentication failed"*) exit 0;; esac
echo "$out"; exit 1`},
		ProbeTimeoutSeconds: 5,
		StartupSeconds:      300,
		URIScheme:           "postgresql",
		UID:                 999,
		// The custom format is compressed and lets pg_restore load it into
		// a database of another name. Objects get the restoring user as
		// owner: the controller manages one role per Database, so roles are
		// not dumped.
		Backup: engine.BackupTool{
			Extension: "pgdump",
			Dump:      `PGPASSWORD="$PASSWORD" pg_dump --host="$HOST" --port="$PORT" --username="$USERNAME" --dbname="$DATABASE" --format=custom --no-owner --no-acl --file="$OUT"`,
			Restore: `pg_restore --no-owner --no-acl --exit-on-error --username="$POSTGRES_USER" --dbname="$POSTGRES_DB" "$DBC_RESTORE_FILE" 2>/tmp/dbc-restore.err || ` +
				engine.RestoreFailed("/tmp/dbc-restore.err"),
			DataDirectory: `"$PGDATA"`,
			Initialised:   `[ -s "$PGDATA/PG_VERSION" ]`,
		},
		Replication:  &replication,
		MajorUpgrade: &majorUpgrade,
		Parameters:   &parameters,
		TLS:          &tls,
		Exporter:     &exporter,
		// archive_mode=on: the primary archives; a replica does not, until
		// it is promoted, when it archives its new timeline's segments and
		// history file. The command runs in the data directory.
		Archiving: &engine.Archiving{
			Server:     "postgres",
			CommandArg: "%p",
			ServerArgs: func(command string, timeoutSeconds int32) []string {
				return []string{"-c", "archive_mode=on", "-c", "archive_command=" + command, "-c", "archive_timeout=" + strconv.Itoa(int(timeoutSeconds))}
			},
			// --wal-method=none: the archive holds the WAL, and
			// pg_basebackup returns only once the WAL up to the copy's
			// consistent point is archived. The manifest that ends the
			// stream names the WAL range (objectstore put-base-backup).
			BaseBackup: `PGPASSWORD="$PASSWORD" pg_basebackup --dbname="host=$HOST port=$PORT user=$USERNAME" --pgdata=- --format=tar --wal-method=none --checkpoint=fast --label="$DBC_BACKUP" --verbose`,
			InitScript: archivingInitScript,
			Restore:    restoreScript,
			Verify:     verifyScript,
		},
	},
}

// CheckRestore implements engine.Engine: a dump restores into the same
// major version or a newer one (the way to a new major).
func (Engine) CheckRestore(from, to string) error {
	return engine.RefuseRestoreIntoOlder("PostgreSQL", 1, from, to)
}

// CheckVersionChange refuses a lower major version. A change of minor
// version or tag within the major rolls out; a higher major version is
// upgraded in place (majorUpgrade).
func (Engine) CheckVersionChange(from engine.Running, desired string) error {
	return engine.RefuseDowngrade(Name, 1, from.Version, desired)
}

// FeatureCompatibilityVersion implements engine.Engine.
func (Engine) FeatureCompatibilityVersion(string) string { return "" }

// EndOfLife implements engine.Engine: every version in the catalog is supported.
func (Engine) EndOfLife(string) string { return "" }
