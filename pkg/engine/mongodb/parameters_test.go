package mongodb

import (
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/crdtest"
)

// The CRD refuses, for MongoDB, the parameters the controller owns, and
// only those: its rules on the spec name them one by one.
func TestOwnedParametersAreTheCRDs(t *testing.T) {
	specRules := crdtest.Rules(t, "spec")
	rule := regexp.MustCompile(`^self\.engine != 'mongodb' \|\| !has\(self\.parameters\) \|\| !\('([A-Za-z_]+)' in self\.parameters\)$`)
	var refused []string
	for _, r := range specRules {
		if m := rule.FindStringSubmatch(r); m != nil {
			refused = append(refused, m[1])
		}
	}
	slices.Sort(refused)
	if want := slices.Sorted(slices.Values(owned)); !slices.Equal(refused, want) {
		t.Errorf("the CRD refuses %v\nthe controller owns %v", refused, want)
	}
}

// Every parameter is given at start, as --setParameter name=value, and
// read back from the server's arguments.
func TestParameters(t *testing.T) {
	args := append(parameters.Args("ttlMonitorSleepSecs", "120"), parameters.Args("logLevel", "1")...)
	if want := []string{"--setParameter", "ttlMonitorSleepSecs=120", "--setParameter", "logLevel=1"}; !slices.Equal(args, want) {
		t.Errorf("arguments %q, want %q", args, want)
	}
	if got, want := given(append(args, "--setParameter", "authenticationMechanisms=PLAIN")), map[string]string{"ttlMonitorSleepSecs": "120", "logLevel": "1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("given = %v, want %v", got, want)
	}
	for _, name := range []string{"ttlMonitorSleepSecs", "no_such"} {
		if !parameters.AtStart(name) {
			t.Errorf("%s is not read at start", name)
		}
	}
	for name, want := range map[string]bool{"ttlMonitorSleepSecs": true, "wiredTiger_x": true, "work_mem": true, "bad-name": false, "a.b": false, "1x": false} {
		if got := parameters.Name.MatchString(name); got != want {
			t.Errorf("name %q allowed = %v, want %v", name, got, want)
		}
	}
}
