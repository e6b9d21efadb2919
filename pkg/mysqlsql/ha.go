package mysqlsql

import (
	"context"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbcontroller/database-controller/pkg/ha"
)

// conn is the part of a connection the client uses: every statement it
// sends goes through it, so that a test sees each one.
type conn interface {
	// Exec runs a statement that returns no rows.
	Exec(ctx context.Context, stmt string) error
	// Query runs a statement and returns its rows, each a map of column
	// names to values ("" for NULL).
	Query(ctx context.Context, stmt string) ([]map[string]string, error)
	Close() error
}

// dialer opens one connection to the server at host:port.
type dialer func(ctx context.Context, host string, port int32, cred ha.Credentials) (conn, error)

// New returns the Client that connects with go-sql-driver/mysql. It talks
// to MySQL 8.0 and later, and to MariaDB 10.6 and later, each in its own
// SQL: the server says which it is when the client connects.
func New() ha.Client { return client{dial: dial} }

type client struct{ dial dialer }

var _ ha.Client = client{}

func dial(ctx context.Context, host string, port int32, cred ha.Credentials) (conn, error) {
	return dialSeeing(ctx, host, port, cred, nil)
}

// dialSeeing is dial, with seen given the certificate of a server
// verified against cred.Authorities.
func dialSeeing(ctx context.Context, host string, port int32, cred ha.Credentials, seen func(*x509.Certificate)) (conn, error) {
	cfg, err := config(host, port, cred.User, cred.Password, "", cred.Authorities, seen)
	if err != nil {
		return nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &sqlConn{db: db, c: c}, nil
}

// sqlConn is one connection of database/sql.
type sqlConn struct {
	db *sql.DB
	c  *sql.Conn
}

func (s *sqlConn) Exec(ctx context.Context, stmt string) error {
	_, err := s.c.ExecContext(ctx, stmt)
	return err
}

func (s *sqlConn) Query(ctx context.Context, stmt string) ([]map[string]string, error) {
	rows, err := s.c.QueryContext(ctx, stmt)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	values := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range values {
		dest[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		row := make(map[string]string, len(cols))
		for i, c := range cols {
			row[c] = string(values[i])
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func (s *sqlConn) Close() error {
	err := s.c.Close()
	return errors.Join(err, s.db.Close())
}

// Statements the client sends, named for its tests. MySQL 8.0.23 and later
// have every one of them but the mariadb ones.
const (
	// identify says which pod the server runs in (a StatefulSet pod's
	// hostname is its name) and which server it is.
	identify = `SELECT @@hostname AS name, VERSION() AS version`
	// mysqlState is a MySQL server's transactions and whether it refuses
	// writes.
	mysqlState    = `SELECT @@GLOBAL.gtid_executed AS executed, @@GLOBAL.super_read_only AS super_read_only`
	replicaStatus = `SHOW REPLICA STATUS`
	// showReplicas lists the replicas connected to a source, by their
	// report_host: their pod names.
	showReplicas = `SHOW REPLICAS`
	// mariadbState is a MariaDB server's positions: what it applied as a
	// replica, and the newest of that and what it wrote itself (a replica
	// seeded from a dump has the seed's position applied, and nothing in
	// its own binary log).
	mariadbState = `SELECT @@GLOBAL.gtid_current_pos AS current, @@GLOBAL.gtid_slave_pos AS applied, @@GLOBAL.read_only AS read_only`
	// mariadbReplicas lists the replicas connected to a MariaDB primary,
	// by their report_host.
	mariadbReplicas = `SHOW REPLICA HOSTS`
	// mariadbSemiSync is a MariaDB primary's semi-synchronous replication
	// (built in).
	mariadbSemiSync = `SHOW GLOBAL VARIABLES WHERE Variable_name IN ('rpl_semi_sync_master_enabled', 'rpl_semi_sync_master_timeout', 'rpl_semi_sync_master_wait_point')`
	// clientSessions are the sessions of clients, other than the one that
	// asks: replication threads and the server's own have no user or run
	// as system user.
	clientSessions = `SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND USER NOT IN ('system user', 'event_scheduler') AND COMMAND NOT IN ('Binlog Dump', 'Binlog Dump GTID', 'Daemon')`
	// semiSync is a source's semi-synchronous replication, by variable
	// name: no rows when its plugin is not loaded.
	semiSync = `SELECT VARIABLE_NAME AS name, VARIABLE_VALUE AS value FROM performance_schema.global_variables WHERE VARIABLE_NAME IN ('rpl_semi_sync_source_enabled', 'rpl_semi_sync_source_wait_for_replica_count', 'rpl_semi_sync_source_timeout')`
	// stalledCommits counts a semi-synchronous source's sessions whose
	// commit has waited stalledAfter or more for its acknowledgements
	// (MySQL's state ends "from replica", MariaDB's "from slave"), and
	// the clones it gives (a MySQL donor's sessions of command clone).
	stalledCommits = `SELECT SUM(STATE LIKE 'Waiting for semi-sync ACK from %' AND TIME >= 5) AS stalled, SUM(COMMAND = 'clone') AS clones FROM information_schema.PROCESSLIST`
)

// stalledAfter is how long a commit waits for its acknowledgements before
// the primary's Facts say so (stalledCommits' TIME): a replica that
// streams acknowledges within a second.
const stalledAfter = "5 s"

// semiSyncTimeout is the longest a commit waits for its acknowledgements
// (ms, the variable's largest value, about 49 days): MySQL commits
// asynchronously once it has waited so long, and a commit that was to
// wait for replicas must not go on without them. The controller itself
// sets the primary asynchronous when it may (SynchronousReplicas).
const semiSyncTimeout = "4294967295"

// Terms names what MySQL's positions count: transactions, by their GTIDs.
func (client) Terms() ha.Terms {
	return ha.Terms{Log: "transactions", Position: func(n uint64) string { return strconv.FormatUint(n, 10) + " transactions" }}
}

// server is one server's identity, after identify.
type server struct {
	conn    conn
	name    string
	mariadb bool
}

// open connects to host and asks what it is.
func (c client) open(ctx context.Context, host string, port int32, cred ha.Credentials) (*server, error) {
	conn, err := c.dial(ctx, host, port, cred)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, identify)
	if err != nil || len(rows) != 1 {
		conn.Close()
		return nil, fmt.Errorf("asking %s what it is: %w", host, errOrNoRow(err))
	}
	return &server{conn: conn, name: rows[0]["name"], mariadb: strings.Contains(rows[0]["version"], "MariaDB")}, nil
}

func errOrNoRow(err error) error {
	if err == nil {
		return sql.ErrNoRows
	}
	return err
}

func (c client) Probe(ctx context.Context, host string, port int32, cred ha.Credentials) (ha.Facts, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	s, err := c.open(ctx, host, port, cred)
	if err != nil {
		return ha.Facts{}, err
	}
	defer s.conn.Close()
	if s.mariadb {
		return probeMariaDB(ctx, s, host)
	}
	return probeMySQL(ctx, s, host)
}

func probeMySQL(ctx context.Context, s *server, host string) (ha.Facts, error) {
	// super_read_only refuses every write, root's too, for as long as
	// the server runs (Fence): a replica that received all a fenced
	// primary wrote is promoted before that primary restarts.
	f := ha.Facts{Name: s.name, FenceHolds: true}
	state, err := s.conn.Query(ctx, mysqlState)
	if err != nil || len(state) != 1 {
		return ha.Facts{}, fmt.Errorf("asking %s for its transactions: %w", host, errOrNoRow(err))
	}
	executed, err := parseGTIDSet(state[0]["executed"])
	if err != nil {
		return ha.Facts{}, err
	}
	replica, err := s.conn.Query(ctx, replicaStatus)
	if err != nil {
		return ha.Facts{}, fmt.Errorf("asking %s for its replication: %w", host, err)
	}
	if len(replica) > 0 {
		// A replica: what it received is what it retrieved into its relay
		// log, and what it had before (a clone, or its own past).
		retrieved, err := parseGTIDSet(replica[0]["Retrieved_Gtid_Set"])
		if err != nil {
			return ha.Facts{}, err
		}
		f.Replica = true
		f.Received, f.Applied = executed.union(retrieved).count(), executed.count()
		f.Broken = brokenReceiver(replica[0], mysqlFatalSourceError)
		return f, nil
	}
	f.Written = executed.count()
	f.Fenced = state[0]["super_read_only"] == "1"
	return probeSource(ctx, s.conn, host, f, semiSync, synchronous, showReplicas)
}

// The errors a source sends a replica's receiver when it cannot send
// what the replica asks for (its binary logs were purged, or it does not
// have the replica's position): the receiver stops, and no retry cures
// it. MySQL's 13114 (ER_SERVER_SOURCE_FATAL_ERROR_READING_BINLOG) names
// other fatal errors of the source too; a restart of the replica (package
// reconcile, bounded in time) finds out which, and seeds it again if need
// be.
const (
	mysqlFatalSourceError   = "13114"
	mariadbFatalSourceError = "1236"
)

// brokenReceiver is Facts.Broken of a replica, from its row of SHOW
// REPLICA STATUS: its receiver stopped on the source's fatal error.
func brokenReceiver(row map[string]string, fatal string) string {
	running := row["Replica_IO_Running"]
	if running == "" {
		running = row["Slave_IO_Running"] // MariaDB's name
	}
	if row["Last_IO_Errno"] != fatal || running != "No" {
		return ""
	}
	return fmt.Sprintf("error %s from the primary: %s", fatal, row["Last_IO_Error"])
}

// probeSource completes the Facts f of a server that is no replica: how
// many replicas its commits wait for (semiQuery's rows, read by
// readSemi), whether commits have waited long for them (stalledCommits,
// asked only when some wait at all), and the replicas connected to it
// (replicasQuery's rows, by their report_host in column Host), in either
// dialect's SQL.
func probeSource(ctx context.Context, c conn, host string, f ha.Facts, semiQuery string,
	readSemi func([]map[string]string) int32, replicasQuery string) (ha.Facts, error) {
	semi, err := c.Query(ctx, semiQuery)
	if err != nil {
		return ha.Facts{}, fmt.Errorf("asking %s for its semi-synchronous replication: %w", host, err)
	}
	f.Synchronous = readSemi(semi)
	if f.Synchronous != 0 {
		stalled, err := c.Query(ctx, stalledCommits)
		if err != nil {
			return ha.Facts{}, fmt.Errorf("asking %s for its commits waiting for replicas: %w", host, err)
		}
		f.Stalled, f.CloneWaits = stalledWords(stalled)
	}
	replicas, err := c.Query(ctx, replicasQuery)
	if err != nil {
		return ha.Facts{}, fmt.Errorf("asking %s for its replicas: %w", host, err)
	}
	for _, r := range replicas {
		// Listed means connected, with a dump thread that sends it each
		// transaction: the source knows nothing of how far it applied.
		f.Standbys = append(f.Standbys, ha.Standby{Name: r["Host"], Streaming: true})
	}
	return f, nil
}

// probeMariaDB reads a MariaDB server: a replica, or a server of its own.
// Its positions are the sums of the sequence numbers of its GTID domains.
// Its fence does not hold while it runs (FenceHolds false): read_only
// does not stop an account with all privileges (READ ONLY ADMIN).
func probeMariaDB(ctx context.Context, s *server, host string) (ha.Facts, error) {
	f := ha.Facts{Name: s.name}
	state, err := s.conn.Query(ctx, mariadbState)
	if err != nil || len(state) != 1 {
		return ha.Facts{}, fmt.Errorf("asking %s for its positions: %w", host, errOrNoRow(err))
	}
	replica, err := s.conn.Query(ctx, replicaStatus)
	if err != nil {
		return ha.Facts{}, fmt.Errorf("asking %s for its replication: %w", host, err)
	}
	if len(replica) > 0 {
		f.Replica = true
		if f.Applied, err = mariadbPosition(state[0]["applied"]); err != nil {
			return ha.Facts{}, err
		}
		if f.Received, err = mariadbPosition(replica[0]["Gtid_IO_Pos"]); err != nil {
			return ha.Facts{}, err
		}
		f.Received = max(f.Received, f.Applied)
		f.Broken = brokenReceiver(replica[0], mariadbFatalSourceError)
		return f, nil
	}
	if f.Written, err = mariadbPosition(state[0]["current"]); err != nil {
		return ha.Facts{}, err
	}
	f.Fenced = state[0]["read_only"] == "1"
	return probeSource(ctx, s.conn, host, f, mariadbSemiSync, mariadbSynchronous, mariadbReplicas)
}

// mariadbPosition sums the sequence numbers of a MariaDB GTID position,
// "0-1-5,1-2-7": one per replication domain.
func mariadbPosition(s string) (uint64, error) {
	var n uint64
	for _, gtid := range strings.Split(strings.Join(strings.Fields(s), ""), ",") {
		if gtid == "" {
			continue
		}
		parts := strings.Split(gtid, "-")
		if len(parts) != 3 {
			return 0, fmt.Errorf("GTID position %q: bad GTID %q", s, gtid)
		}
		seq, err := strconv.ParseUint(parts[2], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("GTID position %q: bad GTID %q", s, gtid)
		}
		n += seq
	}
	return n, nil
}

// promoteWait bounds the wait for a replica to apply what it received
// before it is promoted, in seconds.
const promoteWait = 5

// change connects to the server at host for a change of its replication
// (what names it in errors), within timeout, and runs do on the
// connection.
func (c client) change(ctx context.Context, host string, port int32, cred ha.Credentials, what string,
	timeout time.Duration, do func(context.Context, *server) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := c.open(ctx, host, port, cred)
	if err != nil {
		return err
	}
	defer s.conn.Close()
	if err := do(ctx, s); err != nil {
		return fmt.Errorf("%s %s: %w", what, host, err)
	}
	return nil
}

// Promote makes a MySQL replica the primary: it stops receiving, applies
// every transaction it received (its relay log), stops replicating and
// forgets its source, and accepts writes from now on and after a restart
// (SET PERSIST, in the data directory). Done again after a failure half
// way, it takes up where it stopped: writes are accepted before the source
// is forgotten, so that a server left half way still answers as a replica,
// and is promoted again, rather than as a primary that refuses writes.
//
// A MariaDB replica is promoted in the same steps, in its SQL
// (promoteMariaDB).
func (c client) Promote(ctx context.Context, host string, port int32, cred ha.Credentials) error {
	return c.change(ctx, host, port, cred, "promoting", Timeout+promoteWait*time.Second, func(ctx context.Context, s *server) error {
		if s.mariadb {
			return promoteMariaDB(ctx, s.conn)
		}
		conn := s.conn
		if err := conn.Exec(ctx, `STOP REPLICA IO_THREAD`); err != nil {
			return err
		}
		replica, err := conn.Query(ctx, replicaStatus)
		if err != nil {
			return err
		}
		if len(replica) > 0 {
			retrieved := replica[0]["Retrieved_Gtid_Set"]
			if _, err := parseGTIDSet(retrieved); err != nil {
				return err
			}
			// 0 once applied, 1 on timeout.
			rows, err := conn.Query(ctx, waitApplied(retrieved))
			if err != nil || len(rows) != 1 {
				return fmt.Errorf("waiting until it applied what it received: %w", errOrNoRow(err))
			}
			if rows[0]["timed_out"] != "0" {
				return fmt.Errorf("it had not applied every transaction it received after %d s", promoteWait)
			}
		}
		for _, stmt := range promoteStatements {
			if err := conn.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// promoteStatements end a replica's replication once it applied what it
// received.
var promoteStatements = []string{
	`STOP REPLICA`,
	`SET PERSIST super_read_only = OFF`,
	`SET PERSIST read_only = OFF`,
	`RESET REPLICA ALL`,
}

// promoteMariaDB promotes a MariaDB replica: it stops receiving, applies
// what it received (its relay log: the position executed in the source's
// binary log reaches the position read), and stops replicating; it
// accepts writes before it forgets its source (RESET REPLICA ALL, which
// removes master.info), so that a server left half way restarts as the
// replica it still is (the server's command starts it read-only while
// master.info exists: package mysql), and is promoted again. It does not
// wait with MASTER_GTID_WAIT on Gtid_IO_Pos: that waits on gtid_slave_pos,
// which the server's own transactions, received back from a source it
// once replicated to, never advance (seen on the real node: a former
// primary received its 0-1-1 back and waited for ever).
func promoteMariaDB(ctx context.Context, conn conn) error {
	if err := conn.Exec(ctx, `STOP REPLICA IO_THREAD`); err != nil {
		return err
	}
	deadline := time.Now().Add(mariadbApplyWait)
	for {
		replica, err := conn.Query(ctx, replicaStatus)
		if err != nil {
			return err
		}
		if len(replica) == 0 || relayLogApplied(replica[0]) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("it had not applied every transaction it received after %s", mariadbApplyWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(mariadbApplyPoll):
		}
	}
	for _, stmt := range mariadbPromoteStatements {
		if err := conn.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// mariadbApplyWait bounds the wait for a MariaDB replica to apply its
// relay log before it is promoted; mariadbApplyPoll is how often it looks.
var (
	mariadbApplyWait = promoteWait * time.Second
	mariadbApplyPoll = 100 * time.Millisecond
)

// relayLogApplied says a replica's SHOW REPLICA STATUS row has executed
// all it read of its source's binary log.
func relayLogApplied(r map[string]string) bool {
	return r["Relay_Master_Log_File"] == r["Master_Log_File"] && r["Exec_Master_Log_Pos"] == r["Read_Master_Log_Pos"]
}

// mariadbPromoteStatements end a MariaDB replica's replication once it
// applied what it received.
var mariadbPromoteStatements = []string{
	`STOP REPLICA`,
	`SET GLOBAL read_only = OFF`,
	`RESET REPLICA ALL`,
}

// waitApplied waits until the server has applied every transaction of the
// GTID set, for promoteWait seconds at most.
func waitApplied(set string) string {
	return fmt.Sprintf(`SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %d) AS timed_out`, quoteString(strings.Join(strings.Fields(set), "")), promoteWait)
}

// Fence makes a MySQL primary refuse every write: super_read_only stops
// every account, those with all privileges too, now and after a restart
// (SET PERSIST); the init script finds it so and rejoins the server as a
// replica. Client sessions are ended before, so that no open transaction
// holds the read-only switch back, and after, so that none that began in
// between writes on.
//
// A MariaDB primary has no super_read_only, and its read_only does not
// stop an account with all privileges: its fence holds against the
// Secret's other accounts only, until the controller stops the server
// (FenceHolds false). It first gets a marker file in its data directory
// (FencedMarker), which makes every later start of the server read-only
// (the server's command, package mysql) and its init script rejoin it as
// a replica, then read_only, between the sessions' ends.
func (c client) Fence(ctx context.Context, host string, port int32, cred ha.Credentials) error {
	return c.change(ctx, host, port, cred, "fencing", Timeout, func(ctx context.Context, s *server) error {
		conn, readOnly := s.conn, `SET PERSIST super_read_only = ON`
		if s.mariadb {
			if err := conn.Exec(ctx, mariadbMarkFenced); err != nil && !fileExists(err) {
				return err
			}
			readOnly = `SET GLOBAL read_only = ON`
		}
		if err := endSessions(ctx, conn); err != nil {
			return err
		}
		if err := conn.Exec(ctx, readOnly); err != nil {
			return err
		}
		return endSessions(ctx, conn)
	})
}

// FencedMarker is the file a fenced MariaDB server has in its data
// directory (/var/lib/mysql, the image's) until it rejoins as a replica.
const FencedMarker = "/var/lib/mysql/dbc-fenced"

// mariadbMarkFenced writes FencedMarker, as the server's own user.
const mariadbMarkFenced = `SELECT 'fenced by database-controller' INTO DUMPFILE '` + FencedMarker + `'`

// fileExists is the error of a SELECT ... INTO DUMPFILE whose file exists
// (ER_FILE_EXISTS_ERROR): a fence done before.
func fileExists(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == 1086
}

// endSessions kills every client session but the caller's. A session that
// ended in between is no error.
func endSessions(ctx context.Context, c conn) error {
	rows, err := c.Query(ctx, clientSessions)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := strconv.ParseUint(r["id"], 10, 64); err != nil {
			return fmt.Errorf("session id %q: %w", r["id"], err)
		}
		if err := c.Exec(ctx, "KILL CONNECTION "+r["id"]); err != nil && !unknownThread(err) {
			return err
		}
	}
	return nil
}

// unknownThread is MySQL's error for a session that is gone (ER_NO_SUCH_THREAD).
func unknownThread(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == 1094
}

// synchronous is how many replicas a source's commits wait for, from its
// semiSync rows, as SetSynchronous sets it: 0 when semi-synchronous
// replication is off (or its plugin is not loaded), -1 for a setting
// SetSynchronous does not make.
func synchronous(rows []map[string]string) int32 {
	v := map[string]string{}
	for _, r := range rows {
		v[r["name"]] = r["value"]
	}
	if v["rpl_semi_sync_source_enabled"] != "ON" {
		return 0
	}
	n, err := strconv.ParseInt(v["rpl_semi_sync_source_wait_for_replica_count"], 10, 32)
	if err != nil || n < 1 || v["rpl_semi_sync_source_timeout"] != semiSyncTimeout {
		return -1
	}
	return int32(n)
}

// SetSynchronous makes a MySQL primary acknowledge a commit once n
// replicas have it (semi-synchronous replication, after the sync to its
// binary log: a failover to a replica that has a commit loses nothing
// acknowledged), or, with n = 0, asynchronous. The settings persist
// (SET PERSIST): a restarted primary keeps them until the controller
// sets others. Both semi-synchronous plugins are loaded on every server
// of a replicated Database (package mysql's settings).
//
// A MariaDB primary waits for one replica at most: it is refused more.
// Its settings do not persist (MariaDB has no SET PERSIST): a restarted
// primary is asynchronous until the controller sets it again.
func (c client) SetSynchronous(ctx context.Context, host string, port int32, cred ha.Credentials, n int32) error {
	return c.change(ctx, host, port, cred, "setting semi-synchronous replication on", Timeout, func(ctx context.Context, s *server) error {
		stmts := synchronousStatements(n)
		if s.mariadb {
			if n > 1 {
				return &ha.SynchronousUnsupportedError{Why: fmt.Sprintf("MariaDB's semi-synchronous replication waits for one replica at most, not %d", n)}
			}
			stmts = mariadbSynchronousStatements(n)
		}
		for _, stmt := range stmts {
			if err := s.conn.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// synchronousStatements set a source to wait for n replicas (0: none).
func synchronousStatements(n int32) []string {
	if n <= 0 {
		return []string{`SET PERSIST rpl_semi_sync_source_enabled = OFF`}
	}
	return []string{
		fmt.Sprintf(`SET PERSIST rpl_semi_sync_source_wait_for_replica_count = %d`, n),
		`SET PERSIST rpl_semi_sync_source_timeout = ` + semiSyncTimeout,
		`SET PERSIST rpl_semi_sync_source_enabled = ON`,
	}
}

// mariadbSynchronousStatements set a MariaDB source to wait for n
// replicas (0 or 1), once its binary log has the commit (AFTER_SYNC: no
// other session sees a commit that a failover could lose).
func mariadbSynchronousStatements(n int32) []string {
	if n <= 0 {
		return []string{`SET GLOBAL rpl_semi_sync_master_enabled = OFF`}
	}
	return []string{
		`SET GLOBAL rpl_semi_sync_master_wait_point = AFTER_SYNC`,
		`SET GLOBAL rpl_semi_sync_master_timeout = ` + semiSyncTimeout,
		`SET GLOBAL rpl_semi_sync_master_enabled = ON`,
	}
}

// mariadbSynchronous is how many replicas a MariaDB source's commits wait
// for, from its mariadbSemiSync rows, as SetSynchronous sets it: 0 when
// off, -1 for a setting SetSynchronous does not make.
func mariadbSynchronous(rows []map[string]string) int32 {
	v := map[string]string{}
	for _, r := range rows {
		v[r["Variable_name"]] = r["Value"]
	}
	if v["rpl_semi_sync_master_enabled"] != "ON" {
		return 0
	}
	if v["rpl_semi_sync_master_timeout"] != semiSyncTimeout || v["rpl_semi_sync_master_wait_point"] != "AFTER_SYNC" {
		return -1
	}
	return 1
}

// stalledWords are Facts.Stalled and CloneWaits from stalledCommits' row:
// empty while no commit has waited stalledAfter. A MySQL clone from the
// server, as measured on MySQL 9.7, stays in its page copy while such a
// commit waits (CLONE INSTANCE waits for the transactions prepared in the
// donor's binary log to end), its donor sending nothing: the commits and
// the clone wait for each other while too few replicas stream.
func stalledWords(rows []map[string]string) (words string, cloneWaits bool) {
	if len(rows) != 1 || rows[0]["stalled"] == "" || rows[0]["stalled"] == "0" {
		return "", false
	}
	words = "commits have waited " + stalledAfter + " or more for replicas to acknowledge them"
	if c := rows[0]["clones"]; c != "" && c != "0" {
		return words + ", and a clone from it waits for them to end", true
	}
	return words, false
}

// quoteString quotes s as a MySQL string literal.
func quoteString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(s) + "'"
}
