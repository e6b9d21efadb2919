// Package mongodb runs MongoDB on the official mongo image. Its release
// series is major.minor ("7.0").
package mongodb

import (
	"fmt"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// Name is the engine's name in spec.engine.
const Name = "mongodb"

// Engine is MongoDB: its catalog and runtime contract (data, in
// engine.Base), and its rules.
type Engine struct {
	*engine.Base
}

var _ engine.Engine = New()

// New returns the engine.
func New() Engine { return Engine{Base: &base} }

var base = engine.Base{
	Catalog: engine.Catalog{Engine: Name, Repository: "mongo", Versions: []string{"6.0", "7.0", "8.0"}},
	Contract: engine.Runtime{
		Port:     27017,
		PortName: "mongodb",
		Username: "root",
		SecretEnv: []engine.EnvFromSecret{
			{Name: "MONGO_INITDB_ROOT_USERNAME", Key: engine.SecretKeyUsername},
			{Name: "MONGO_INITDB_ROOT_PASSWORD", Key: engine.SecretKeyPassword},
			{Name: "MONGO_INITDB_DATABASE", Key: engine.SecretKeyDatabase},
		},
		DataPath:     "/data/db",
		ScratchPaths: []string{"/data/configdb", "/tmp"},
		// Logs in as the root user. mongosh is a Node.js process that writes its
		// logs under $HOME, /data/db in the image: HOME=/tmp keeps them off
		// the data volume. With TLS it asks for it (requireTLS refuses
		// plain text), against the authorities, at an address no
		// certificate names.
		ReadinessCommand: []string{"sh", "-c",
			`tls=; [ ! -f ` + engine.TLSAuthorityFile + ` ] || tls="--tls --tlsCAFile ` + engine.TLSAuthorityFile + ` --tlsAllowInvalidHostnames"
HOME=/tmp exec mongosh --quiet --norc $tls -u "$MONGO_INITDB_ROOT_USERNAME" -p "$MONGO_INITDB_ROOT_PASSWORD" --authenticationDatabase admin --eval 'db.adminCommand({ping: 1}).ok' mongodb://127.0.0.1:27017/admin`},
		ProbeTimeoutSeconds: 10,
		StartupSeconds:      600,
		URIScheme:           "mongodb",
		URIQuery:            "?authSource=admin",
		UID:                 999,
		// One database, gzipped, renamed on restore to the new Database's.
		// The first init's temporary mongod listens on 127.0.0.1:27017. With
		// TLS the dump verifies the server, its certificate and name.
		Backup: engine.BackupTool{
			Extension: "archive.gz",
			Dump: `mongodump ${` + tlsAuthorityEnv + `:+--ssl --sslCAFile="$` + tlsAuthorityEnv + `"} --host="$HOST" --port="$PORT" --username="$USERNAME" --password="$PASSWORD" --authenticationDatabase=admin ` +
				`--db="$DATABASE" --archive="$OUT" --gzip`,
			Restore: `mongorestore --host=127.0.0.1 --port=27017 --username="$MONGO_INITDB_ROOT_USERNAME" --password="$MONGO_INITDB_ROOT_PASSWORD" ` +
				`--authenticationDatabase=admin --archive="$DBC_RESTORE_FILE" --gzip --nsFrom="$DBC_RESTORE_SOURCE_DATABASE.*" --nsTo="$MONGO_INITDB_DATABASE.*" 2>/tmp/dbc-restore.err || ` +
				engine.RestoreFailed("/tmp/dbc-restore.err"),
			DataDirectory: "/data/db",
			Initialised:   "[ -f /data/db/WiredTiger ]",
		},
		Parameters: &parameters,
		TLS:        &tls,
	},
}

// CheckVersionChange allows an upgrade to the next release series only
// (6.0 to 7.0 to 8.0), and only once the data's featureCompatibilityVersion
// is the running series: MongoDB refuses to start on data whose
// featureCompatibilityVersion is two series behind.
func (Engine) CheckVersionChange(from engine.Running, desired string) error {
	if err := engine.RefuseSeriesSkip(Name, base.Catalog.Versions, 2, from.Version, desired); err != nil {
		return err
	}
	have, want := engine.Series(from.Version, 2), engine.Series(desired, 2)
	if have == "" || want == "" || have == want || from.FeatureCompatibilityVersion == have {
		return nil
	}
	fcv := from.FeatureCompatibilityVersion
	if fcv == "" {
		fcv = "not known yet"
	}
	return &engine.VersionChangeError{Reason: engine.ReasonFeatureCompatibilityPending, Message: fmt.Sprintf(
		"the data's featureCompatibilityVersion is %s, not %s, and MongoDB %s will not start on it. The controller sets it to %s once every replica runs %s and is ready (status.featureCompatibilityVersion); until then set spec.version back to %s",
		fcv, have, want, have, have, from.Version)}
}

// FeatureCompatibilityVersion implements engine.Engine.
func (Engine) FeatureCompatibilityVersion(version string) string { return engine.Series(version, 2) }

// EndOfLife implements engine.Engine.
func (Engine) EndOfLife(version string) string {
	if engine.Series(version, 2) == "6.0" {
		return "MongoDB 6.0 is end of life: the mongo:6.0 image gets no more upstream rebuilds, security fixes included. It keeps running; move to 7.0 (spec.version: \"7.0\"), one series at a time"
	}
	return ""
}

// CheckRestore implements engine.Engine: a dump restores into the same
// series or a newer one.
func (Engine) CheckRestore(from, to string) error {
	return engine.RefuseRestoreIntoOlder("MongoDB", 2, from, to)
}
