// Package mongodb runs MongoDB on the official mongo image. Its release
// series is major.minor ("7.0").
package mongodb

import (
	"slices"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// Name is the engine's name in spec.engine.
const Name = "mongodb"

// Engine is MongoDB.
type Engine struct{}

var _ engine.Engine = Engine{}

var catalog = engine.Catalog{Engine: Name, Repository: "mongo", Versions: []string{"6.0", "7.0", "8.0"}}

var runtime = engine.Runtime{
	Port:     27017,
	PortName: "mongodb",
	Username: "root",
	SecretEnv: []engine.EnvFromSecret{
		{Name: "MONGO_INITDB_ROOT_USERNAME", Key: engine.SecretKeyUsername},
		{Name: "MONGO_INITDB_ROOT_PASSWORD", Key: engine.SecretKeyPassword},
		{Name: "MONGO_INITDB_DATABASE", Key: engine.SecretKeyDatabase},
	},
	DataPath:         "/data/db",
	ScratchPaths:     []string{"/data/configdb", "/tmp"},
	ReadinessCommand: []string{"mongosh", "--quiet", "--eval", "db.adminCommand('ping').ok"},
	URIScheme:        "mongodb",
	URIQuery:         "?authSource=admin",
	UID:              999,
}

// Name implements engine.Engine.
func (Engine) Name() string { return Name }

// Runtime implements engine.Engine.
func (Engine) Runtime() *engine.Runtime { return &runtime }

// Versions implements engine.Engine.
func (Engine) Versions() []string { return slices.Clone(catalog.Versions) }

// Image implements engine.Engine.
func (Engine) Image(version, override string) (string, error) {
	return catalog.Image(version, override)
}

// CheckVersionChange refuses a lower release series (7.0 to 6.0).
func (Engine) CheckVersionChange(running, desired string) error {
	return engine.RefuseDowngrade(Name, 2, running, desired)
}
