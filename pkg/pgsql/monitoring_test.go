package pgsql

import (
	"context"
	"strings"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/ha"
)

// A server whose monitoring user is as it should be is only asked; one
// that lacks it gets the role, its attributes and pg_monitor, in one
// session; a failure names the server.
func TestEnsureMonitoringUser(t *testing.T) {
	ok := &server{rows: map[string][][]any{monitoringUserQuery: {{true}}}}
	changed, err := Monitoring{dial: ok.client().dial}.EnsureUser(context.Background(), "10.0.0.5", 5432, ha.Credentials{})
	if err != nil || changed {
		t.Fatalf("EnsureUser = %v, %v; want unchanged", changed, err)
	}
	checkSent(t, ok, "dial", monitoringUserQuery, "close")

	missing := &server{rows: map[string][][]any{monitoringUserQuery: {{false}}}}
	changed, err = Monitoring{dial: missing.client().dial}.EnsureUser(context.Background(), "10.0.0.5", 5432, ha.Credentials{})
	if err != nil || !changed {
		t.Fatalf("EnsureUser = %v, %v; want changed", changed, err)
	}
	checkSent(t, missing, append(append([]string{"dial", monitoringUserQuery}, monitoringUserStatements...), "close")...)
	for _, want := range []string{"LOGIN NOSUPERUSER", "PASSWORD NULL", "GRANT pg_monitor TO dbcontroller_monitor"} {
		if !strings.Contains(strings.Join(monitoringUserStatements, ";"), want) {
			t.Errorf("statements lack %q", want)
		}
	}

	failing := &server{rows: map[string][][]any{monitoringUserQuery: {{false}}}, fail: monitoringUserStatements[1]}
	_, err = Monitoring{dial: failing.client().dial}.EnsureUser(context.Background(), "10.0.0.5", 5432, ha.Credentials{})
	if err == nil || !strings.Contains(err.Error(), "making the monitoring user on 10.0.0.5") {
		t.Fatalf("EnsureUser's error %v, want the server named", err)
	}
	checkSent(t, failing, "dial", monitoringUserQuery, monitoringUserStatements[0], monitoringUserStatements[1], "close")
}
