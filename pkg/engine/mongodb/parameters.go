package mongodb

import (
	"regexp"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// parameters are spec.parameters on MongoDB: mongod's server parameters,
// all given at start as --setParameter name=value (the entrypoint puts
// mongod before arguments that begin with "-"). The controller has no
// MongoDB client to set one live (setParameter) or to check a value: a
// change restarts the pods, and a value mongod refuses stops the first
// server that restarts with it.
var parameters = engine.Parameters{
	Args: func(name, value string) []string {
		return []string{"--setParameter", name + "=" + value}
	},
	Given:    given,
	AtStart:  func(string) bool { return true },
	Owned:    owned,
	Name:     regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`),
	NameRule: "MongoDB's parameters are named as mongod names them: letters, digits and '_', starting with a letter (ttlMonitorSleepSecs)",
}

// owned are the server parameters the controller depends on: it logs in
// with SCRAM (the readiness probe, backups, the featureCompatibilityVersion
// Job).
var owned = []string{"authenticationMechanisms"}

// given reads the --setParameter name=value pairs of a server's arguments.
func given(args []string) map[string]string { return engine.GivenAfter("--setParameter", args, owned) }
