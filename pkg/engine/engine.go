// Package engine is what the controller knows of a database engine, behind
// one interface: its catalog of versions and images, how its server runs in
// a pod (port, environment, paths, probes), and which version changes its
// data can take. Each engine has a package of its own below this one
// (postgresql, mysql, mongodb), and registry finds them by name. Nothing
// here imports the API types: an engine knows versions and images, not
// Databases.
package engine

import (
	"regexp"
	"slices"
	"strings"
)

// Engine is one database engine.
type Engine interface {
	// Name is the engine's name in spec.engine, such as "postgresql".
	Name() string
	// Runtime says how the server runs in a pod. It is shared: read it, do
	// not change it.
	Runtime() *Runtime
	// Versions lists the catalog, oldest first.
	Versions() []string
	// Image returns the image of version, or override when one is set, or
	// an error a person can act on when the version is not in the catalog.
	Image(version, override string) (string, error)
	// CheckVersionChange returns nil when the data written at from may be
	// served by desired in place, and a *VersionChangeError that says why
	// not and what to do otherwise. An empty from.Version (nothing ran yet)
	// allows every version.
	CheckVersionChange(from Running, desired string) error
	// EndOfLife says, for a version whose image no longer gets upstream
	// rebuilds, what that means and where to go; "" for a supported version.
	EndOfLife(version string) string
	// FeatureCompatibilityVersion is the featureCompatibilityVersion of new
	// data written by version, or "" for an engine that has none.
	FeatureCompatibilityVersion(version string) string
	// CheckRestore returns nil when a backup taken at version from may be
	// restored into a new Database of version to, and a
	// *VersionChangeError that says why not otherwise.
	CheckRestore(from, to string) error
}

// Running is what a Database's data last ran on.
type Running struct {
	// Version is the version every replica last ran when all were ready.
	Version string
	// FeatureCompatibilityVersion is, for MongoDB, the release series whose
	// features the data may use; "" when unknown or not applicable.
	FeatureCompatibilityVersion string
}

// Runtime is how an engine's server runs in a pod, after the official
// image's contract.
type Runtime struct {
	// Port is the port the server listens on, and PortName its name.
	Port     int32
	PortName string
	// Username is the account written to the credentials Secret.
	Username string
	// SecretEnv maps environment variables to keys of the credentials Secret.
	SecretEnv []EnvFromSecret
	// StaticEnv holds environment variables with fixed values.
	StaticEnv []EnvValue
	// VersionEnv, when set, gives the environment variables of the servers
	// of a version (spec.version), such as those only one family of the
	// engine's images reads.
	VersionEnv func(version string) []EnvValue
	// FieldEnv holds environment variables read from the pod's own fields
	// (the downward API), such as its address.
	FieldEnv []EnvFromField
	// DataPath is where the data volume is mounted.
	DataPath string
	// ScratchPaths get emptyDir volumes, so the root filesystem can be read-only.
	ScratchPaths []string
	// ReadinessCommand runs in the container to tell whether it serves
	// clients: it logs in with the credentials and runs a query, the way a
	// client of another pod does where the engine lets it. The startup
	// probe runs it too. A server that answers and refuses the password is
	// serving: the clients that have the password it holds get answers,
	// and taking it out of its Services would cut them off. The controller
	// tells a refused password itself (package login), in the status.
	ReadinessCommand []string
	// ProbeTimeoutSeconds bounds one run of ReadinessCommand.
	ProbeTimeoutSeconds int32
	// StartupSeconds is how long a server may take to first serve: a first
	// init, or a first start after an upgrade. Liveness is not checked
	// before, so that it never kills a server in the middle of its init.
	StartupSeconds int32
	// URIScheme and URIQuery shape the connection URI in the Secret.
	URIScheme string
	URIQuery  string
	// UID is the non-root user the official image runs the server as.
	UID int64
	// Backup is how a backup is taken and restored with the image's own tools.
	Backup BackupTool
	// Replication is how the engine's servers replicate when a Database
	// has more than one replica; nil for an engine whose replicas are
	// still independent servers.
	Replication *Replication
	// Archiving is how the engine's primary archives its change log as it
	// writes it; nil for an engine that does not (yet).
	Archiving *Archiving
	// Parameters is how the engine's servers take spec.parameters; nil for
	// an engine that does not (yet).
	Parameters *Parameters
	// TLS is how the engine's servers take the certificates the
	// controller issues; nil for an engine that does not (yet).
	TLS *TLS
	// MajorUpgrade is how the engine's data moves in place to a version
	// whose server cannot read it as it is; nil for an engine whose
	// version changes all roll out (or are refused).
	MajorUpgrade *MajorUpgrade
	// Exporter is the Prometheus exporter run beside each server of a
	// Database with spec.monitoring; nil for an engine without one.
	Exporter *Exporter
}

// MonitoringUser is the server account an exporter logs in as: made by
// the controller, with the engine's monitoring privileges and no
// password, allowed to log in over the pod's loopback only.
const MonitoringUser = "dbcontroller_monitor"

// MetricsPortName names the exporter's port in the pods.
const MetricsPortName = "metrics"

// Exporter is the Prometheus exporter of an engine's servers: it runs in
// the server's pod, reaches the server over the pod's loopback as
// MonitoringUser, and serves /metrics on Port.
type Exporter struct {
	// Image is the exporter's image when spec.monitoring.image is empty.
	Image string
	// Port is where it serves /metrics.
	Port int32
	// Config is its arguments and environment for the servers of a
	// Database whose database is named database, of TLS mode tlsMode.
	Config func(database, tlsMode string) (args []string, env []EnvValue)
	// QueriesFlag is the argument that names a file of more queries to
	// run, its path appended ("--extend.query-path="); "" when the
	// exporter reads none.
	QueriesFlag string
}

// MajorUpgradeDir is where a major upgrade's Job keeps what it copied of
// the old version (an emptyDir both its containers mount).
const MajorUpgradeDir = "/dbc-upgrade"

// MajorUpgrade is how an engine upgrades its data in place, offline, with
// a Job: the servers stop, Copy runs in the old version's image and leaves
// its programs under MajorUpgradeDir, then Upgrade runs in the new
// version's image on the data volume (the first replica's), with the
// engine's environment and the credentials. Once the new version serves,
// After runs against it in a Job of its own (PostgreSQL's statistics).
type MajorUpgrade struct {
	// Needed reports whether moving the data of from to to needs the
	// upgrade, rather than a rollout; CheckVersionChange has allowed it.
	Needed func(from, to string) bool
	// Copy and Upgrade are shell scripts. Upgrade must leave the data as
	// it was when it fails, say why in the container's termination
	// message, and finish, or do nothing, when it is run again.
	Copy, Upgrade string
	// After is a shell script run with HOST, PORT, USERNAME, PASSWORD and
	// DATABASE of the client Service, and the engine's client TLS
	// environment; "" for none.
	After string
}

// TLSDir is where a server's TLS files are mounted (the Secret
// <name>-tls): TLSCertFile, TLSKeyFile and TLSAuthorityFile, and the
// engine's own files (TLS.Files).
const (
	TLSDir           = "/etc/dbc-tls"
	TLSCertFile      = TLSDir + "/tls.crt"
	TLSKeyFile       = TLSDir + "/tls.key"
	TLSAuthorityFile = TLSDir + "/ca.crt"
)

// TLS is how an engine's servers take TLS.
type TLS struct {
	// ServerArgs turn TLS on for mode (Enabled or Required), with the
	// files under TLSDir, and say which of the engine's files apply; they
	// follow the server's first argument, Server when it has none (none
	// at all when Server is "": the image's entrypoint puts its server
	// before arguments that begin with "-").
	Server     string
	ServerArgs func(mode string) []string
	// Files are the engine's own files beside the certificates in mode
	// (Enabled or Required), such as PostgreSQL's pg_hba.conf.
	Files func(mode string) map[string]string
	// ReplicationEnv is the environment of the replication's init
	// container with TLS: how it verifies the primary it clones or
	// rewinds from, and what its replication connection asks for.
	ReplicationEnv map[string]string
	// ClientEnv is the environment of a backup Job's tool with TLS: how it
	// verifies the server it dumps, against the authorities mounted at
	// ClientAuthorityFile.
	ClientEnv map[string]string
	// KeyWithCertificate, when set, is a file beside the certificate that
	// holds its key and then the certificate, as one PEM text: MongoDB's
	// tlsCertificateKeyFile.
	KeyWithCertificate string
	// RestartToRenew says the servers take a new certificate only when they
	// start: no client of the controller's asks them to read it again
	// (MongoDB's rotateCertificates needs a MongoDB client). The pods then
	// carry the certificate's serial number in their template, so that a
	// new certificate rolls them out, in the rollout's order.
	RestartToRenew bool
}

// ClientAuthorityFile is where a backup Job finds the credentials
// Secret's ca.crt.
const ClientAuthorityFile = "/etc/dbc-server-ca/ca.crt"

// Parameters is how an engine's servers take the parameters of
// spec.parameters: those read only at start on the command line, the
// others on the running servers (the engine's client, package pgsql or
// mysqlsql).
type Parameters struct {
	// Server is the first argument of the server container, the server's
	// command, before the parameters given at start; none when the image's
	// entrypoint puts its server before arguments that begin with "-".
	Server string
	// Args are the command-line arguments that set name to value at start;
	// Given reads back, from a server container's arguments, the
	// parameters of spec.parameters they set (those Owned left out).
	Args  func(name, value string) []string
	Given func(args []string) map[string]string
	// AtStart reports whether the server reads name only at start, as far
	// as the controller knows before a server says (the server's own
	// answer is recorded in status.parameters once it ran).
	AtStart func(name string) bool
	// Owned are the parameters the controller sets itself; the CRD refuses
	// them (a test in each engine's package keeps the two lists one).
	Owned []string
	// Name is how the servers name their parameters, and NameRule says it
	// in words: the CRD's rule for the engine, which a ConfigMap's keys
	// are held to by the controller.
	Name     *regexp.Regexp
	NameRule string
}

// GivenAfter reads the name=value arguments that each follow flag in args
// (PostgreSQL's -c, MongoDB's --setParameter), but those of owned: the
// parameters a server's arguments set (Parameters.Given).
func GivenAfter(flag string, args, owned []string) map[string]string {
	var out map[string]string
	for k := 0; k+1 < len(args); k++ {
		if args[k] != flag {
			continue
		}
		name, value, ok := strings.Cut(args[k+1], "=")
		if !ok || slices.Contains(owned, name) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = value
		k++
	}
	return out
}

// LowerCaseName is PostgreSQL's and MySQL's parameters' names, in lower
// case, so that no parameter is given twice: letters, digits and '_',
// with one '.' (PostgreSQL's extension's, MySQL's component's).
var LowerCaseName = regexp.MustCompile(`^[a-z_][a-z0-9_]*([.][a-z_][a-z0-9_]*)?$`)

// LowerCaseNameRule says LowerCaseName in words.
const LowerCaseNameRule = "parameters are named as the server names them, in lower case: letters, digits and '_', with one '.' for an extension's"

// Archiving is how a server archives each completed file of its change
// log by running a command.
type Archiving struct {
	// Server is the server container's first argument, when the
	// container has no arguments of its own.
	Server string
	// ServerArgs are the settings that archive each completed file with
	// command (the file's path in it as the server spells it), and
	// complete a file early after timeoutSeconds with writes.
	ServerArgs func(command string, timeoutSeconds int32) []string
	// CommandArg is how command names the file to archive.
	CommandArg string
	// BaseBackup writes a base backup of the primary at $HOST:$PORT, a
	// copy of its data taken while it writes, as a tar stream to its
	// standard output, connecting as $USERNAME with $PASSWORD and
	// labelling it $DBC_BACKUP. It returns once the WAL that makes the
	// copy consistent is archived.
	BaseBackup string
	// InitScript runs in an init container before every start of a server
	// that is not replicated (Replication.InitScript does it for one that
	// is), with the server's environment: it lets BaseBackup's connection
	// in, in the data when it is there, or else with a first-init script
	// it writes into $DBC_INITDB_DIR.
	InitScript string
	// Restore runs in an init container of the first pod of a new
	// Database that restores a base backup, before every start until it
	// completes, with the server's environment, and the store's, whose
	// prefix is the directory of the archive: it checks that the archive
	// holds the WAL from the segment $DBC_RESTORE_FROM on, fetches the
	// backup's key $DBC_RESTORE_KEY into the data directory, recovers it
	// with the archive's WAL to the target the server options
	// $DBC_RESTORE_TARGET set ($DBC_RESTORE_TARGET_TEXT in words), with
	// the binary $DBC_TOOLS, and gives it the Database's own credentials
	// and database name (the data's is $DBC_RESTORE_SOURCE_DATABASE). No
	// server serves until it has. It exits non-zero, with why in
	// /dev/termination-log, when any of that fails.
	Restore string
	// Verify runs in a Job that proves a base backup restorable, with the
	// Database's credentials ($USERNAME) and the environment Restore has,
	// but no target: it recovers the backup into $PGDATA, a directory of
	// its own, to the point the copy became consistent, with the
	// archive's WAL, starts the server on a socket in /tmp, asks it one
	// question, stops it, and says what it reached in
	// /dev/termination-log; it exits non-zero, with why there, when any
	// of that fails.
	Verify string
}

// Replication is how an engine runs one primary and replicas that stream
// from it, with the image's own tools. The controller decides the roles;
// the pods learn theirs by asking the client Service, which routes only to
// the pod labelled primary.
type Replication struct {
	// ServerArgs are the server container's arguments: the settings
	// replication needs.
	ServerArgs []string
	// ServerCommand, when set, is the server container's command, which
	// gets ServerArgs as its own and starts the image's entrypoint with
	// them: what decides, at every start of the container, the kubelet's
	// restarts too, what the data's files ask for.
	ServerCommand []string
	// InitScript runs in an init container before every start of the
	// server, with the server's environment, POD_NAME and DBC_PRIMARY_HOST
	// (the client Service): it clones an empty data directory from the
	// primary, or rejoins a former primary as a replica, or leaves the data
	// as it is. It writes FirstInitScript into $DBC_INITDB_DIR.
	InitScript string
	// PreStop, when set, runs in the server container before the kubelet
	// stops it: what makes its shutdown quicker. A primary's shutdown is
	// what a failover after its pod's deletion waits for.
	PreStop []string
	// ShutdownSendsAll says a primary's clean shutdown sends every change
	// it wrote to the replicas that stream from it before it ends
	// (PostgreSQL's walsenders do): a primary whose pod is being deleted
	// then hands over at once to such a replica, losing nothing
	// (ha.Observation.ShutdownSendsAll).
	ShutdownSendsAll bool
}

// BackupTool is how an engine's image dumps one database to a file and
// restores it into a new server. The scripts are POSIX sh.
type BackupTool struct {
	// Extension ends the file's name, after the backup's name.
	Extension string
	// Dump writes the dump of database $DATABASE to the file $OUT,
	// connecting to $HOST:$PORT as $USERNAME with $PASSWORD. Its last
	// stderr line, when it fails, is what the backup reports.
	Dump string
	// Restore runs in the image's first-init hook (sourced from
	// /docker-entrypoint-initdb.d, against the temporary server, with the
	// server's environment): it loads $DBC_RESTORE_FILE into the new
	// database, a dump of the database $DBC_RESTORE_SOURCE_DATABASE, and
	// exits non-zero, with its error's last line in /dev/termination-log,
	// when that fails.
	Restore string
	// DataDirectory is the directory that holds the data, as a shell word:
	// the restore marks it with RestoredMarker when it completes.
	DataDirectory string
	// Initialised is a shell test that is true once the server has
	// initialised the data directory.
	Initialised string
}

// RestoredMarker is the file a restore leaves in the data directory when
// it completes. Before each start of a restoring pod, a data directory
// that is initialised but has no marker stops it: the restore failed part
// way, and the image's entrypoint would serve that data as it is.
const RestoredMarker = "dbcontroller-restored"

// RestoreFailed ends a restore script's failure: the last line of what
// it wrote to file becomes the termination message, all of it the log.
func RestoreFailed(file string) string {
	return `{ tail -n 1 ` + file + ` > /dev/termination-log; cat ` + file + ` >&2; exit 1; }`
}

// EnvFromSecret is an environment variable read from the credentials Secret.
type EnvFromSecret struct {
	Name string
	Key  string
}

// EnvFromField is an environment variable read from a field of the pod,
// such as status.podIP.
type EnvFromField struct {
	Name      string
	FieldPath string
}

// PodIPEnv is the variable that holds the pod's own address.
const PodIPEnv = "POD_IP"

// EnvValue is an environment variable with a literal value.
type EnvValue struct {
	Name  string
	Value string
}

// Keys of the credentials Secret.
const (
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
	SecretKeyDatabase = "database"
	SecretKeyHost     = "host"
	SecretKeyPort     = "port"
	SecretKeyURI      = "uri"
	// SecretKeyReadOnlyHost and SecretKeyReadOnlyURI reach the read-only
	// Service of an engine that replicates: the replicas, once there are.
	SecretKeyReadOnlyHost = "ro-host"
	SecretKeyReadOnlyURI  = "ro-uri"
)

// DatabaseName is the name of the database created inside the server: the
// Database's name with dashes turned to underscores, which every engine accepts.
func DatabaseName(name string) string {
	return strings.ReplaceAll(name, "-", "_")
}
