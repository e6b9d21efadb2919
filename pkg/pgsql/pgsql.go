// Package pgsql is how the controller talks SQL to the PostgreSQL servers
// of a replicated Database (ha.Client): it asks what a server is (primary
// or replica, its WAL positions, the replicas that stream from it),
// promotes a replica, fences a primary, and sets how many replicas a commit
// waits for. It also logs in as a client of a Database's Secret does
// (Login), for package login, and checks and sets spec.parameters
// (Parameters). One connection per call, none kept between calls.
package pgsql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbcontroller/database-controller/pkg/engine/postgresql"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/login"
	"github.com/dbcontroller/database-controller/pkg/podnet"
	"github.com/dbcontroller/database-controller/pkg/tlsconfig"
)

// Timeout bounds each call: a server that does not answer within it counts
// as not answering.
const Timeout = 3 * time.Second

// conn is the part of a pgx connection the client uses: what it sends is
// all there, so a test can see every statement.
type conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Close(ctx context.Context) error
}

// dialer opens one connection to the server at host:port.
type dialer func(ctx context.Context, host string, port int32, cred ha.Credentials) (conn, error)

// session connects to host, runs fn on the connection within timeout, and
// closes it: each call of the clients is one session.
func (d dialer) session(ctx context.Context, host string, port int32, cred ha.Credentials, timeout time.Duration, fn func(context.Context, conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := d(ctx, host, port, cred)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return fn(ctx, c)
}

// New returns the Client that connects with pgx.
func New() ha.Client { return client{dial: dial} }

type client struct{ dial dialer }

var _ ha.Client = client{}

func dial(ctx context.Context, host string, port int32, cred ha.Credentials) (conn, error) {
	return connect(ctx, host, port, cred.User, cred.Password, "postgres", cred.Authorities)
}

// connect opens a connection as user to database at host:port: with
// authorities, over TLS that verifies the server's certificate against
// them (tlsconfig.ForAuthorities); without, in plain text.
func connect(ctx context.Context, host string, port int32, user, password, database, authorities string) (*pgx.Conn, error) {
	if authorities == "" {
		return connectWith(ctx, host, port, user, password, database, nil)
	}
	tlsConfig, err := tlsconfig.ForAuthorities([]byte(authorities), nil)
	if err != nil {
		return nil, err
	}
	c, err := connectWith(ctx, host, port, user, password, database, tlsConfig)
	if err != nil && strings.Contains(err.Error(), refusedTLS) {
		// A server that has no TLS yet (its pod is still to restart with
		// it) answers so before anything is sent: then plain text, as a
		// server with TLS never answers so. One that has TLS is verified,
		// or not connected to.
		return connectWith(ctx, host, port, user, password, database, nil)
	}
	return c, err
}

// connectWith opens a connection as user to database at host:port, over
// TLS with tlsConfig, or in plain text when it is nil.
func connectWith(ctx context.Context, host string, port int32, user, password, database string, tlsConfig *tls.Config) (*pgx.Conn, error) {
	u := url.URL{
		Scheme:   "postgresql",
		User:     url.UserPassword(user, password),
		Host:     net.JoinHostPort(host, strconv.Itoa(int(port))),
		Path:     "/" + database,
		RawQuery: "sslmode=disable&connect_timeout=3&application_name=database-controller",
	}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	// No prepared statements to cache between calls: each call is one
	// short connection.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.TLSConfig = tlsConfig
	// Directly, or through the API server (the controller's --server-access).
	cfg.DialFunc = podnet.DialContext
	return pgx.ConnectConfig(ctx, cfg)
}

// PresentCertificate connects to the server at host:port over TLS,
// verified against cred.Authorities, and returns the serial number (in
// hex) of the certificate it presented. When that is not serial, it asks
// the server to read its files again (pg_reload_conf(): the certificate,
// its key and pg_hba.conf) and says it reloaded; the server presents what
// its files hold to the connections after that.
func PresentCertificate(ctx context.Context, host string, port int32, cred ha.Credentials, serial string) (presented string, reloaded bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	c, presented, err := connectSeeing(ctx, host, port, cred)
	if err != nil {
		return "", false, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	if presented == serial {
		return presented, false, nil
	}
	if _, err := c.Exec(ctx, reload); err != nil {
		return presented, false, fmt.Errorf("reloading the server's configuration: %w", err)
	}
	return presented, true, nil
}

// refusedTLS is pgx's error for a server that answered a TLS request
// with no.
const refusedTLS = "server refused TLS connection"

// Presented returns the serial number (hex) of the certificate the server
// at host:port presents, verified against cred.Authorities.
func Presented(ctx context.Context, host string, port int32, cred ha.Credentials) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	c, presented, err := connectSeeing(ctx, host, port, cred)
	if err != nil {
		return "", err
	}
	return presented, c.Close(ctx)
}

// connectSeeing connects over TLS, verified against cred.Authorities, and
// returns the serial number of the certificate the server presented.
func connectSeeing(ctx context.Context, host string, port int32, cred ha.Credentials) (*pgx.Conn, string, error) {
	var presented string
	tlsConfig, err := tlsconfig.ForAuthorities([]byte(cred.Authorities), func(leaf *x509.Certificate) {
		presented = leaf.SerialNumber.Text(16)
	})
	if err != nil {
		return nil, "", err
	}
	c, err := connectWith(ctx, host, port, cred.User, cred.Password, "postgres", tlsConfig)
	return c, presented, err
}

// invalidPassword is PostgreSQL's SQLSTATE for a refused password. A role
// that does not exist is refused so too, so as not to tell that it does
// not.
const invalidPassword = "28P01"

// Login logs in to the server at host:port into cred's database, as a
// client of the Database's Secret does, and logs out (login.Func).
func Login(ctx context.Context, host string, port int32, cred login.Credentials) error {
	c, err := connect(ctx, host, port, cred.User, cred.Password, cred.Database, cred.Authorities)
	if err != nil {
		return refusal(err)
	}
	return c.Close(ctx)
}

// refusal is a *login.RefusedError when err is the server's refusal of a
// password, else err.
func refusal(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == invalidPassword {
		return &login.RefusedError{Message: pgErr.Message}
	}
	return err
}

// Statements the client sends, named for its tests.
//
// A replica's Received is the further of what its WAL receiver flushed
// and what it replayed: it holds both. pg_last_wal_receive_lsn() alone
// lags on a replica that restarted: its receiver asks the primary to
// stream from the start of the segment it resumes in, and reports that
// start, not the end of the WAL it already holds and replayed from its
// own pg_wal, until the primary writes something new. Read alone, it
// kept a switchover after a rollout's restart of the target waiting "to
// receive the WAL" the target had, with the fenced primary unlabelled
// (its clients refused) until that primary next wrote: 2m16s on an idle
// one here, 7 min in CI.
const (
	probeQuery = `SELECT current_setting('cluster_name'), pg_is_in_recovery(),
  COALESCE(pg_wal_lsn_diff(GREATEST(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), '0/0'), 0)::bigint,
  COALESCE(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0'), 0)::bigint,
  CASE WHEN pg_is_in_recovery() THEN 0 ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') END::bigint,
  NOT pg_is_in_recovery() AND current_setting('default_transaction_read_only') = 'on',
  current_setting('synchronous_standby_names'),
  CASE WHEN pg_is_in_recovery()
    THEN (SELECT COALESCE(max(left(name, 8)), '') FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$')
    ELSE left(pg_walfile_name(pg_current_wal_lsn()), 8) END,
  CASE WHEN pg_is_in_recovery() THEN ''
    ELSE COALESCE(pg_read_file('pg_wal/' || left(pg_walfile_name(pg_current_wal_lsn()), 8) || '.history', 0, 65536, true), '') END`
	standbysQuery = `SELECT application_name, state = 'streaming',
  COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::bigint
FROM pg_stat_replication ORDER BY application_name`
	// pg_promote waits (up to 5 s here) until recovery has ended; a server
	// already out of recovery answers true, and the next probe sees it.
	promoteQuery = `SELECT CASE WHEN pg_is_in_recovery() THEN pg_promote(true, 5) ELSE true END`
	// Until its first checkpoint, a promoted server's control file still
	// names the old timeline, and pg_rewind from it (a former primary
	// rejoining) takes the wrong divergence point: the rewound server then
	// never starts ("requested timeline does not contain minimum recovery
	// point").
	checkpoint = `CHECKPOINT`
	reload     = `SELECT pg_reload_conf()`
)

func (c client) Terms() ha.Terms { return ha.Terms{Log: "WAL", Position: formatLSN} }

// formatLSN formats a WAL position as PostgreSQL does: 0/3000060.
func formatLSN(n uint64) string { return fmt.Sprintf("%X/%X", n>>32, uint32(n)) }

func (c client) Probe(ctx context.Context, host string, port int32, cred ha.Credentials) (ha.Facts, error) {
	var f ha.Facts
	err := c.dial.session(ctx, host, port, cred, Timeout, func(ctx context.Context, conn conn) error {
		var received, replayed, written int64
		var synchronous, timeline, history string
		err := conn.QueryRow(ctx, probeQuery).Scan(&f.Name, &f.Replica, &received, &replayed, &written, &f.Fenced, &synchronous, &timeline, &history)
		if err != nil {
			return fmt.Errorf("asking %s what it is: %w", host, err)
		}
		f.Received, f.Applied, f.Written = uint64(received), uint64(replayed), uint64(written)
		f.Synchronous = parseSynchronous(synchronous)
		f.Timeline, f.TimelineEnds = parseTimeline(timeline), parseHistory(history)
		if f.Replica {
			return nil
		}
		rows, err := conn.Query(ctx, standbysQuery)
		if err != nil {
			return fmt.Errorf("asking %s for its replicas: %w", host, err)
		}
		f.Standbys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ha.Standby, error) {
			var s ha.Standby
			var lag int64
			err := row.Scan(&s.Name, &s.Streaming, &lag)
			s.LagBytes = &lag
			return s, err
		})
		if err != nil {
			return fmt.Errorf("asking %s for its replicas: %w", host, err)
		}
		return nil
	})
	if err != nil {
		return ha.Facts{}, err
	}
	return f, nil
}

// parseTimeline is the timeline of a WAL file's name's first eight
// digits; 0 when there is none (a replica that holds no WAL yet).
func parseTimeline(hex string) uint32 {
	n, err := strconv.ParseUint(hex, 16, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// parseHistory reads a timeline history file: a line per earlier
// timeline, its number and the position where it ended ("1\t0/3027AC0\t
// no recovery target specified"). A line it cannot read is left out: the
// timelines serve to find a replica that diverged, never to decide a
// failover, and a timeline missing finds none.
func parseHistory(history string) map[uint32]uint64 {
	var ends map[uint32]uint64
	for line := range strings.Lines(history) {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		tli, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil {
			continue
		}
		hi, lo, ok := strings.Cut(f[1], "/")
		h, err1 := strconv.ParseUint(hi, 16, 32)
		l, err2 := strconv.ParseUint(lo, 16, 32)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		if ends == nil {
			ends = map[uint32]uint64{}
		}
		ends[uint32(tli)] = h<<32 | l
	}
	return ends
}

func (c client) Promote(ctx context.Context, host string, port int32, cred ha.Credentials) error {
	return c.dial.session(ctx, host, port, cred, 2*Timeout, func(ctx context.Context, conn conn) error {
		var promoted bool
		if err := conn.QueryRow(ctx, promoteQuery).Scan(&promoted); err != nil {
			return fmt.Errorf("promoting %s: %w", host, err)
		}
		if !promoted {
			return fmt.Errorf("promoting %s: recovery did not end within 5 s", host)
		}
		if _, err := conn.Exec(ctx, checkpoint); err != nil {
			return fmt.Errorf("checkpointing %s after its promotion: %w", host, err)
		}
		return nil
	})
}

// fenceStatements fence a primary. The marker first: whatever happens next,
// the next start rejoins (postgresql.FenceMarker). Then no new transaction
// may write, and the sessions that could are ended.
var fenceStatements = []string{
	`COPY (SELECT 'fenced by database-controller at ' || now()) TO ` + quoteLiteral(postgresql.FenceMarker),
	`ALTER SYSTEM SET default_transaction_read_only = on`,
	reload,
	`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
}

func (c client) Fence(ctx context.Context, host string, port int32, cred ha.Credentials) error {
	return c.execAll(ctx, host, port, cred, "fencing", fenceStatements...)
}

func (c client) SetSynchronous(ctx context.Context, host string, port int32, cred ha.Credentials, n int32) error {
	return c.execAll(ctx, host, port, cred, "setting synchronous_standby_names on",
		`ALTER SYSTEM SET synchronous_standby_names = `+quoteLiteral(synchronousStandbyNames(n)),
		reload)
}

// synchronousStandbyNames is the setting for a quorum of n of any replicas:
// "ANY n (*)", or "" for asynchronous replication.
func synchronousStandbyNames(n int32) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("ANY %d (*)", n)
}

var quorum = regexp.MustCompile(`^ANY ([1-9][0-9]*) \(\*\)$`)

// parseSynchronous is the n of synchronousStandbyNames(n) that setting is,
// or -1 for a setting it does not make.
func parseSynchronous(setting string) int32 {
	if setting == "" {
		return 0
	}
	m := quorum.FindStringSubmatch(setting)
	if m == nil {
		return -1
	}
	n, err := strconv.ParseInt(m[1], 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// execAll runs stmts in order on one connection to host, stopping at the
// first that fails; what names the work in that error.
func (c client) execAll(ctx context.Context, host string, port int32, cred ha.Credentials, what string, stmts ...string) error {
	return c.dial.session(ctx, host, port, cred, Timeout, func(ctx context.Context, conn conn) error {
		for _, stmt := range stmts {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s %s: %w", what, host, err)
			}
		}
		return nil
	})
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
