package postgresql

import (
	"maps"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/crdtest"
)

// The CRD refuses exactly the parameters the controller owns: one CEL rule
// of spec.parameters for each (a map lookup: within the API server's cost
// budget, where one rule over the keys is not).
func TestOwnedParametersAreTheCRDs(t *testing.T) {
	rules := crdtest.Rules(t, "spec.parameters")
	var refused []string
	for _, r := range rules {
		if m := regexp.MustCompile(`^!\('([a-z_]+)' in self\)$`).FindStringSubmatch(r); m != nil {
			refused = append(refused, m[1])
		}
	}
	slices.Sort(refused)
	want := slices.Sorted(slices.Values(owned))
	if !slices.Equal(refused, want) {
		t.Errorf("the CRD refuses %v\nthe controller owns %v", refused, want)
	}
}

// Every parameter is either read at start or taken live; names PostgreSQL
// does not know, an extension's among them, are given at start.
func TestAtStart(t *testing.T) {
	if !slices.IsSorted(live) {
		t.Error("live is not sorted")
	}
	for _, name := range atStart {
		if _, found := slices.BinarySearch(live, name); found {
			t.Errorf("%s is both read at start and live", name)
		}
	}
	for name, want := range map[string]bool{
		"shared_buffers": true, "max_connections": true, "shared_preload_libraries": true, "io_method": true,
		"pg_stat_statements.max": true, "no_such_parameter": true,
		"work_mem": false, "statement_timeout": false, "log_min_duration_statement": false, "autovacuum_naptime": false,
	} {
		if got := AtStart(name); got != want {
			t.Errorf("AtStart(%s) = %v, want %v", name, got, want)
		}
	}
}

// given reads back the parameters of spec.parameters from a server's
// arguments, and leaves the controller's own.
func TestGiven(t *testing.T) {
	args := []string{"postgres", "-c", "shared_buffers=1GB", "-c", "archive_mode=on", "-c", "search_path=a, b",
		"-c", "wal_log_hints=on", "-c", "cluster_name=$(POD_NAME)"}
	want := map[string]string{"shared_buffers": "1GB", "search_path": "a, b"}
	if got := given(args); !reflect.DeepEqual(got, want) {
		t.Errorf("given(%q) = %v, want %v", args, got, want)
	}
	if got := given([]string{"postgres"}); got != nil {
		t.Errorf("given of no parameter: %v", slices.Collect(maps.Keys(got)))
	}
}
