package mysqlsql

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/ha"
)

// A server whose monitoring account has its privileges is only asked; one
// without gets the account and its privileges (MariaDB's SLAVE MONITOR
// too); a failure names the server.
func TestEnsureMonitoringUser(t *testing.T) {
	ready := mysqlServer("orders-0", map[string][]map[string]string{monitoringUserQuery: {{"process": "Y", "replication_client": "Y"}}})
	changed, err := Monitoring{client: ready.client()}.EnsureUser(context.Background(), "10.0.0.5", 3306, ha.Credentials{})
	if err != nil || changed {
		t.Fatalf("EnsureUser = %v, %v; want unchanged", changed, err)
	}
	checkSent(t, ready, "dial", identify, monitoringUserQuery, "close")

	for _, tc := range []struct {
		name   string
		server *fakeServer
		grant  string
	}{
		{"mysql, no account", mysqlServer("orders-0", nil), "GRANT PROCESS, REPLICATION CLIENT ON *.* TO 'dbcontroller_monitor'@'127.0.0.1'"},
		{"mysql, a privilege revoked", mysqlServer("orders-0", map[string][]map[string]string{monitoringUserQuery: {{"process": "Y", "replication_client": "N"}}}),
			"GRANT PROCESS, REPLICATION CLIENT ON *.* TO 'dbcontroller_monitor'@'127.0.0.1'"},
		{"mariadb, no account", mariadbServer("orders-0", nil), "GRANT PROCESS, REPLICATION CLIENT, SLAVE MONITOR ON *.* TO 'dbcontroller_monitor'@'127.0.0.1'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed, err := Monitoring{client: tc.server.client()}.EnsureUser(context.Background(), "10.0.0.5", 3306, ha.Credentials{})
			if err != nil || !changed {
				t.Fatalf("EnsureUser = %v, %v; want changed", changed, err)
			}
			checkSent(t, tc.server, "dial", identify, monitoringUserQuery,
				"CREATE USER IF NOT EXISTS 'dbcontroller_monitor'@'127.0.0.1' WITH MAX_USER_CONNECTIONS 3", tc.grant, "close")
		})
	}

	failing := mysqlServer("orders-0", nil)
	failing.fail[grantMonitoring] = errors.New("Error 1227 (42000): Access denied")
	_, err = Monitoring{client: failing.client()}.EnsureUser(context.Background(), "10.0.0.5", 3306, ha.Credentials{})
	if err == nil || !strings.Contains(err.Error(), "making the monitoring user on 10.0.0.5: Error 1227") {
		t.Fatalf("EnsureUser's error %v, want the server named and its words", err)
	}
}
