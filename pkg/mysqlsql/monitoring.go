package mysqlsql

import (
	"context"
	"fmt"

	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/ha"
)

// Monitoring makes the monitoring user of MySQL and MariaDB servers, which
// an exporter logs in as (engine.MonitoringUser).
type Monitoring struct{ client client }

// NewMonitoring returns the Monitoring that connects with
// go-sql-driver/mysql.
func NewMonitoring() Monitoring { return Monitoring{client: client{dial: dial}} }

// monitoringAccount is the account: the user from the loopback only, the
// address the exporter in the server's pod connects from.
const monitoringAccount = `'` + engine.MonitoringUser + `'@'127.0.0.1'`

// monitoringUserQuery asks whether the account has the privileges
// mysqld_exporter's default collectors read with: PROCESS (InnoDB's
// tables, the process list) and REPLICATION CLIENT (the replication
// status; MariaDB's BINLOG MONITOR, whose column keeps the old name).
const monitoringUserQuery = `SELECT Process_priv AS process, Repl_client_priv AS replication_client FROM mysql.user WHERE User = '` +
	engine.MonitoringUser + `' AND Host = '127.0.0.1'`

// The statements that make the account: no password (it logs in from the
// pod's loopback only), at most three sessions, and the privileges to
// read the server's state and statistics, not its data. MariaDB asks for
// SLAVE MONITOR to show a replica's status.
const (
	createMonitoringUser = `CREATE USER IF NOT EXISTS ` + monitoringAccount + ` WITH MAX_USER_CONNECTIONS 3`
	grantMonitoring      = `GRANT PROCESS, REPLICATION CLIENT ON *.* TO ` + monitoringAccount
	grantMariaDBMonitor  = `GRANT PROCESS, REPLICATION CLIENT, SLAVE MONITOR ON *.* TO ` + monitoringAccount
)

// EnsureUser makes the monitoring account on the primary at host, or
// gives it its privileges, unless it has them: a steady server is only
// asked. The statements are written to the binary log, so that the
// replicas get the account. It reports whether it wrote anything.
func (m Monitoring) EnsureUser(ctx context.Context, host string, port int32, cred ha.Credentials) (changed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	s, err := m.client.open(ctx, host, port, cred)
	if err != nil {
		return false, err
	}
	defer s.conn.Close()
	rows, err := s.conn.Query(ctx, monitoringUserQuery)
	if err != nil {
		return false, fmt.Errorf("asking %s about its monitoring user: %w", host, err)
	}
	if len(rows) == 1 && rows[0]["process"] == "Y" && rows[0]["replication_client"] == "Y" {
		return false, nil
	}
	grant := grantMonitoring
	if s.mariadb {
		grant = grantMariaDBMonitor
	}
	for _, stmt := range []string{createMonitoringUser, grant} {
		if err := s.conn.Exec(ctx, stmt); err != nil {
			return false, fmt.Errorf("making the monitoring user on %s: %w", host, err)
		}
	}
	return true, nil
}
