// Package pgsql is how the controller talks SQL to the PostgreSQL servers
// of a replicated Database, through each pod's own address: it asks what a
// server is (primary or replica, its WAL positions, the replicas that stream
// from it), promotes a replica, and fences a primary. It holds no
// connection between calls, and no credentials: the caller reads them from
// the Secret when it needs them.
package pgsql

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Credentials are the superuser's, from the Database's Secret.
type Credentials struct {
	User, Password string
}

// Standby is a replica that a primary sends WAL to (pg_stat_replication).
type Standby struct {
	// Name is its application_name: the pod's name.
	Name string
	// Streaming says its state is "streaming" (not catching up or stopping).
	Streaming bool
	// LagBytes is the WAL the primary wrote that it has not replayed yet.
	LagBytes int64
}

// Facts is what one server answered.
type Facts struct {
	// Name is its cluster_name: the pod's name.
	Name string
	// InRecovery is pg_is_in_recovery(): true for a replica.
	InRecovery bool
	// Timeline is the timeline of its last checkpoint.
	Timeline uint32
	// ReceivedLSN and ReplayedLSN are a replica's WAL received and
	// replayed; WrittenLSN is a primary's current WAL position.
	ReceivedLSN, ReplayedLSN, WrittenLSN uint64
	// Receiving says a replica's WAL receiver streams now.
	Receiving bool
	// Standbys are, on a primary, the replicas it sends WAL to.
	Standbys []Standby
	// Fenced says a server out of recovery refuses writes
	// (default_transaction_read_only, as Fence sets it).
	Fenced bool
	// SynchronousStandbyNames is its synchronous_standby_names.
	SynchronousStandbyNames string
}

// Client talks to the servers.
type Client interface {
	// Probe asks the server at host:port what it is.
	Probe(ctx context.Context, host string, port int32, cred Credentials) (Facts, error)
	// Promote ends a replica's recovery, waits until it has, and
	// checkpoints, so that a former primary can be rewound from it.
	Promote(ctx context.Context, host string, port int32, cred Credentials) error
	// Fence makes a primary refuse writes from now on, ends its clients'
	// sessions, and writes marker beside its data directory, so that at
	// its next start it rejoins as a replica and never serves as a
	// primary again.
	Fence(ctx context.Context, host string, port int32, cred Credentials, marker string) error
	// SetSynchronous sets a primary's synchronous_standby_names (ALTER
	// SYSTEM, then a reload): "" for asynchronous replication.
	SetSynchronous(ctx context.Context, host string, port int32, cred Credentials, names string) error
}

// Timeout bounds each call: a server that does not answer within it counts
// as not answering.
const Timeout = 3 * time.Second

// New returns the Client that connects with pgx, one connection per call.
func New() Client { return pgxClient{} }

type pgxClient struct{}

func connect(ctx context.Context, host string, port int32, cred Credentials) (*pgx.Conn, error) {
	u := url.URL{
		Scheme:   "postgresql",
		User:     url.UserPassword(cred.User, cred.Password),
		Host:     net.JoinHostPort(host, strconv.Itoa(int(port))),
		Path:     "/postgres",
		RawQuery: "sslmode=disable&connect_timeout=3&application_name=database-controller",
	}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	// No prepared statements to cache between calls: each call is one
	// short connection.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return pgx.ConnectConfig(ctx, cfg)
}

func (pgxClient) Probe(ctx context.Context, host string, port int32, cred Credentials) (Facts, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	conn, err := connect(ctx, host, port, cred)
	if err != nil {
		return Facts{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var f Facts
	var received, replayed, written int64
	var timeline int64
	err = conn.QueryRow(ctx, `SELECT current_setting('cluster_name'), pg_is_in_recovery(),
  (SELECT timeline_id FROM pg_control_checkpoint())::bigint,
  COALESCE(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '0/0'), 0)::bigint,
  COALESCE(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0'), 0)::bigint,
  CASE WHEN pg_is_in_recovery() THEN 0 ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') END::bigint,
  EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming'),
  NOT pg_is_in_recovery() AND current_setting('default_transaction_read_only') = 'on',
  current_setting('synchronous_standby_names')`).
		Scan(&f.Name, &f.InRecovery, &timeline, &received, &replayed, &written, &f.Receiving, &f.Fenced, &f.SynchronousStandbyNames)
	if err != nil {
		return Facts{}, fmt.Errorf("asking %s what it is: %w", host, err)
	}
	f.Timeline, f.ReceivedLSN, f.ReplayedLSN, f.WrittenLSN = uint32(timeline), uint64(received), uint64(replayed), uint64(written)
	if f.InRecovery {
		return f, nil
	}
	rows, err := conn.Query(ctx, `SELECT application_name, state = 'streaming',
  COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::bigint
FROM pg_stat_replication ORDER BY application_name`)
	if err != nil {
		return Facts{}, fmt.Errorf("asking %s for its replicas: %w", host, err)
	}
	f.Standbys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Standby, error) {
		var s Standby
		err := row.Scan(&s.Name, &s.Streaming, &s.LagBytes)
		return s, err
	})
	if err != nil {
		return Facts{}, fmt.Errorf("asking %s for its replicas: %w", host, err)
	}
	return f, nil
}

func (pgxClient) Promote(ctx context.Context, host string, port int32, cred Credentials) error {
	ctx, cancel := context.WithTimeout(ctx, 2*Timeout)
	defer cancel()
	conn, err := connect(ctx, host, port, cred)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var promoted bool
	// pg_promote waits (up to 60 s by default) until recovery has ended; a
	// server already out of recovery answers with an error, which is fine:
	// the next probe sees it.
	if err := conn.QueryRow(ctx, `SELECT CASE WHEN pg_is_in_recovery() THEN pg_promote(true, 5) ELSE true END`).Scan(&promoted); err != nil {
		return fmt.Errorf("promoting %s: %w", host, err)
	}
	if !promoted {
		return fmt.Errorf("promoting %s: recovery did not end within 5 s", host)
	}
	// Until its first checkpoint, a promoted server's control file still
	// names the old timeline, and pg_rewind from it (a former primary
	// rejoining) takes the wrong divergence point: the rewound server then
	// never starts ("requested timeline does not contain minimum recovery
	// point"). Checkpoint now.
	if _, err := conn.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("checkpointing %s after its promotion: %w", host, err)
	}
	return nil
}

func (pgxClient) Fence(ctx context.Context, host string, port int32, cred Credentials, marker string) error {
	// The marker first: whatever happens next, the next start rejoins.
	// Then no new transaction may write, and the sessions that could are ended.
	return execAll(ctx, host, port, cred, "fencing",
		`COPY (SELECT 'fenced by database-controller at ' || now()) TO `+quoteLiteral(marker),
		`ALTER SYSTEM SET default_transaction_read_only = on`,
		`SELECT pg_reload_conf()`,
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`)
}

func (pgxClient) SetSynchronous(ctx context.Context, host string, port int32, cred Credentials, names string) error {
	return execAll(ctx, host, port, cred, "setting synchronous_standby_names on",
		`ALTER SYSTEM SET synchronous_standby_names = `+quoteLiteral(names),
		`SELECT pg_reload_conf()`)
}

// execAll runs stmts in order on one connection to host, stopping at the
// first that fails; what names the work in that error.
func execAll(ctx context.Context, host string, port int32, cred Credentials, what string, stmts ...string) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	conn, err := connect(ctx, host, port, cred)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s %s: %w", what, host, err)
		}
	}
	return nil
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
