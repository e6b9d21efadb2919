// Package registry finds an engine by its name in spec.engine.
package registry

import (
	"fmt"

	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/mongodb"
	"github.com/dbcontroller/database-controller/pkg/engine/mysql"
	"github.com/dbcontroller/database-controller/pkg/engine/postgresql"
)

var engines = map[string]engine.Engine{
	postgresql.Name: postgresql.New(),
	mysql.Name:      mysql.New(),
	mongodb.Name:    mongodb.New(),
}

// Lookup returns the engine named name.
func Lookup(name string) (engine.Engine, error) {
	e, ok := engines[name]
	if !ok {
		return nil, fmt.Errorf("unknown engine %q: must be one of postgresql, mysql, mongodb", name)
	}
	return e, nil
}
