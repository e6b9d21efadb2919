package mysql

import (
	"maps"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/crdtest"
)

// The CRD refuses, for MySQL, the parameters the controller owns, and only
// those: its rules on the spec name them one by one, but those that
// spec.parameters' own rules refuse for every engine.
func TestOwnedParametersAreTheCRDs(t *testing.T) {
	specRules, parametersRules := crdtest.Rules(t, "spec"), crdtest.Rules(t, "spec.parameters")
	everyEngine := map[string]bool{}
	for _, r := range parametersRules {
		if m := regexp.MustCompile(`^!\('([a-z_]+)' in self\)$`).FindStringSubmatch(r); m != nil {
			everyEngine[m[1]] = true
		}
	}
	rule := regexp.MustCompile(`^self\.engine != 'mysql' \|\| !has\(self\.parameters\) \|\| !\('([a-z_]+)' in self\.parameters\)$`)
	var refused []string
	for _, r := range specRules {
		if m := rule.FindStringSubmatch(r); m != nil {
			if everyEngine[m[1]] {
				t.Errorf("%s is refused twice, for MySQL and for every engine", m[1])
			}
			refused = append(refused, m[1])
		}
	}
	for _, name := range owned {
		if everyEngine[name] {
			refused = append(refused, name)
		}
	}
	slices.Sort(refused)
	if want := slices.Sorted(slices.Values(owned)); !slices.Equal(refused, want) {
		t.Errorf("the CRD refuses %v\nthe controller owns %v", refused, want)
	}
}

func TestAtStart(t *testing.T) {
	if !slices.IsSorted(atStart) {
		t.Error("atStart is not sorted")
	}
	for name, want := range map[string]bool{
		"back_log": true, "innodb_buffer_pool_instances": true, "lower_case_table_names": true,
		"max_connections": false, "innodb_buffer_pool_size": false, "wait_timeout": false, "no_such_parameter": false,
	} {
		if got := AtStart(name); got != want {
			t.Errorf("AtStart(%s) = %v, want %v", name, got, want)
		}
	}
}

// given reads back the parameters of spec.parameters from a server's
// arguments, and leaves the controller's own.
func TestGiven(t *testing.T) {
	args := []string{"--defaults-extra-file=/var/run/mysqld/dbc-replication.cnf", "--back_log=123", "--sql_mode=A,B", "--server_id=7", "mysqld"}
	want := map[string]string{"back_log": "123", "sql_mode": "A,B"}
	if got := given(args); !reflect.DeepEqual(got, want) {
		t.Errorf("given(%q) = %v, want %v", args, got, want)
	}
	if got := given([]string{"--defaults-extra-file=/x"}); got != nil {
		t.Errorf("given of no parameter: %v", slices.Collect(maps.Keys(got)))
	}
}
