package pgsql

import (
	"context"
	"fmt"

	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/ha"
)

// Monitoring makes the monitoring user of PostgreSQL servers, which an
// exporter logs in as (engine.MonitoringUser).
type Monitoring struct{ dial dialer }

// NewMonitoring returns the Monitoring that connects with pgx.
func NewMonitoring() Monitoring { return Monitoring{dial: dial} }

// monitoringUserQuery asks whether the monitoring user is as it should be:
// it logs in, is no superuser, and has pg_monitor's privileges.
const monitoringUserQuery = `SELECT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = $1 AND r.rolcanlogin AND NOT r.rolsuper AND pg_has_role(r.oid, 'pg_monitor', 'MEMBER'))`

// monitoringUserStatements make it so: a role that logs in, with no
// password (the loopback is trusted, and a password-less role cannot log
// in from elsewhere, pg_hba.conf asking every other host for one), no
// other attribute, and pg_monitor: it reads the statistics views and the
// settings, and no table of the user's.
var monitoringUserStatements = []string{
	`DO $$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + engine.MonitoringUser + `') THEN CREATE ROLE ` + engine.MonitoringUser + `; END IF; END$$`,
	`ALTER ROLE ` + engine.MonitoringUser + ` WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 3 PASSWORD NULL`,
	`GRANT pg_monitor TO ` + engine.MonitoringUser,
}

// EnsureUser makes the monitoring user on the primary at host, or mends
// it, unless it is as it should be: a steady server is only asked. It
// reports whether it wrote anything.
func (m Monitoring) EnsureUser(ctx context.Context, host string, port int32, cred ha.Credentials) (changed bool, err error) {
	err = m.dial.session(ctx, host, port, cred, Timeout, func(ctx context.Context, c conn) error {
		var ok bool
		if err := c.QueryRow(ctx, monitoringUserQuery, engine.MonitoringUser).Scan(&ok); err != nil {
			return fmt.Errorf("asking %s about its monitoring user: %w", host, err)
		}
		if ok {
			return nil
		}
		for _, stmt := range monitoringUserStatements {
			if _, err := c.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("making the monitoring user on %s: %w", host, err)
			}
		}
		changed = true
		return nil
	})
	return changed, err
}
