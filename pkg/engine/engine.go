// Package engine describes how each database engine is run: its catalog of
// versions and images, its port, environment, probes and data directory, and
// how its versions compare. Everything here is pure data and pure functions.
package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// Profile is everything the builders need to know about one engine.
type Profile struct {
	// Engine is the engine this profile describes.
	Engine dbv1alpha1.Engine
	// Repository is the official image repository; the tag is the version.
	Repository string
	// Versions is the catalog: the versions the controller knows how to run.
	Versions []string
	// SeriesLength is how many leading version components name a release
	// series: 1 for PostgreSQL ("16"), 2 for MySQL ("8.4") and MongoDB ("7.0").
	// Moving to a lower series is a downgrade.
	SeriesLength int
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
	// ReadinessCommand runs in the container to tell whether it serves clients.
	ReadinessCommand []string
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

var profiles = map[dbv1alpha1.Engine]*Profile{
	dbv1alpha1.EnginePostgreSQL: {
		Engine:       dbv1alpha1.EnginePostgreSQL,
		Repository:   "postgres",
		Versions:     []string{"14", "15", "16", "17", "18"},
		SeriesLength: 1,
		Port:         5432,
		PortName:     "postgresql",
		Username:     "postgres",
		SecretEnv: []EnvFromSecret{
			{Name: "POSTGRES_USER", Key: SecretKeyUsername},
			{Name: "POSTGRES_PASSWORD", Key: SecretKeyPassword},
			{Name: "POSTGRES_DB", Key: SecretKeyDatabase},
		},
		// A subdirectory, so initdb never meets the volume's lost+found.
		StaticEnv:        []EnvValue{{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"}},
		DataPath:         "/var/lib/postgresql/data",
		ScratchPaths:     []string{"/var/run/postgresql", "/tmp"},
		ReadinessCommand: []string{"sh", "-c", `exec pg_isready -h 127.0.0.1 -p 5432 -U "$POSTGRES_USER" -d "$POSTGRES_DB"`},
		URIScheme:        "postgresql",
		UID:              999,
	},
	dbv1alpha1.EngineMySQL: {
		Engine:       dbv1alpha1.EngineMySQL,
		Repository:   "mysql",
		Versions:     []string{"8.0", "8.4"},
		SeriesLength: 2,
		Port:         3306,
		PortName:     "mysql",
		Username:     "root",
		SecretEnv: []EnvFromSecret{
			{Name: "MYSQL_ROOT_PASSWORD", Key: SecretKeyPassword},
			{Name: "MYSQL_DATABASE", Key: SecretKeyDatabase},
		},
		DataPath:         "/var/lib/mysql",
		ScratchPaths:     []string{"/var/run/mysqld", "/tmp"},
		ReadinessCommand: []string{"sh", "-c", `exec mysqladmin ping --silent -h 127.0.0.1 -P 3306 -uroot -p"$MYSQL_ROOT_PASSWORD"`},
		URIScheme:        "mysql",
		UID:              999,
	},
	dbv1alpha1.EngineMongoDB: {
		Engine:       dbv1alpha1.EngineMongoDB,
		Repository:   "mongo",
		Versions:     []string{"6.0", "7.0", "8.0"},
		SeriesLength: 2,
		Port:         27017,
		PortName:     "mongodb",
		Username:     "root",
		SecretEnv: []EnvFromSecret{
			{Name: "MONGO_INITDB_ROOT_USERNAME", Key: SecretKeyUsername},
			{Name: "MONGO_INITDB_ROOT_PASSWORD", Key: SecretKeyPassword},
			{Name: "MONGO_INITDB_DATABASE", Key: SecretKeyDatabase},
		},
		DataPath:         "/data/db",
		ScratchPaths:     []string{"/data/configdb", "/tmp"},
		ReadinessCommand: []string{"mongosh", "--quiet", "--eval", "db.adminCommand('ping').ok"},
		URIScheme:        "mongodb",
		URIQuery:         "?authSource=admin",
		UID:              999,
	},
}

// Lookup returns the profile of an engine.
func Lookup(e dbv1alpha1.Engine) (*Profile, error) {
	p, ok := profiles[e]
	if !ok {
		return nil, fmt.Errorf("unknown engine %q: must be one of postgresql, mysql, mongodb", e)
	}
	return p, nil
}

// Image returns the image for version, or an error a user can act on when
// the version is not in the catalog and no override is given.
func (p *Profile) Image(version, override string) (string, error) {
	if override != "" {
		return override, nil
	}
	if !slices.Contains(p.Versions, version) {
		return "", fmt.Errorf("version %q of %s is not in the catalog (known: %s); use one of those or set spec.image",
			version, p.Engine, strings.Join(p.Versions, ", "))
	}
	return p.Repository + ":" + version, nil
}

// IsDowngrade reports whether moving from the running version current to
// desired lowers the release series. An empty or unparsable version never
// counts as a downgrade; the schema rejects malformed versions.
func (p *Profile) IsDowngrade(current, desired string) bool {
	cur, err1 := parseVersion(current)
	des, err2 := parseVersion(desired)
	if err1 != nil || err2 != nil {
		return false
	}
	for i := range p.SeriesLength {
		c, d := component(cur, i), component(des, i)
		if d != c {
			return d < c
		}
	}
	return false
}

func component(v []int, i int) int {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func parseVersion(v string) ([]int, error) {
	if v == "" {
		return nil, fmt.Errorf("empty version")
	}
	parts := strings.Split(v, ".")
	out := make([]int, len(parts))
	for i, s := range parts {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("malformed version %q", v)
		}
		out[i] = n
	}
	return out, nil
}

// DatabaseName is the name of the database created inside the server: the
// Database's name with dashes turned to underscores, which every engine accepts.
func DatabaseName(name string) string {
	return strings.ReplaceAll(name, "-", "_")
}
