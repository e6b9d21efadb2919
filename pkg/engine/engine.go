// Package engine is what the controller knows of a database engine, behind
// one interface: its catalog of versions and images, how its server runs in
// a pod (port, environment, paths, probes), and which version changes its
// data can take. Each engine has a package of its own below this one
// (postgresql, mysql, mongodb), and registry finds them by name. Nothing
// here imports the API types: an engine knows versions and images, not
// Databases.
package engine

import "strings"

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
	// DataPath is where the data volume is mounted.
	DataPath string
	// ScratchPaths get emptyDir volumes, so the root filesystem can be read-only.
	ScratchPaths []string
	// ReadinessCommand runs in the container to tell whether it serves
	// clients: it logs in with the credentials and runs a query. The
	// startup probe runs it too.
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
}

// EnvFromSecret is an environment variable read from the credentials Secret.
type EnvFromSecret struct {
	Name string
	Key  string
}

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
)

// DatabaseName is the name of the database created inside the server: the
// Database's name with dashes turned to underscores, which every engine accepts.
func DatabaseName(name string) string {
	return strings.ReplaceAll(name, "-", "_")
}
