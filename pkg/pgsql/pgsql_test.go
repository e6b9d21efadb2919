package pgsql

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/login"
)

// The fence marker's path goes into SQL as a literal: quotes are doubled.
func TestQuoteLiteral(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/var/lib/postgresql/data/dbc-fenced", "'/var/lib/postgresql/data/dbc-fenced'"},
		{"it's", "'it''s'"},
		{"''", "''''''"},
		{"", "''"},
		{`back\slash`, `'back\slash'`},
	} {
		if got := quoteLiteral(tt.in); got != tt.want {
			t.Errorf("quoteLiteral(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// server is a PostgreSQL server as a connection sees it: it records every
// statement sent to it, and answers the queries with rows.
type server struct {
	// sent is every statement, in order, with "dial" for each connection
	// and "close" for its end.
	sent []string
	// rows are the answers to queries, by statement.
	rows map[string][][]any
	// fail fails the statement named, with failErr when set.
	fail    string
	failErr error
}

func (s *server) client() client {
	return client{dial: func(context.Context, string, int32, ha.Credentials) (conn, error) {
		s.sent = append(s.sent, "dial")
		return (*fakeConn)(s), nil
	}}
}

type fakeConn server

func (c *fakeConn) send(sql string) error {
	c.sent = append(c.sent, sql)
	if sql == c.fail && c.failErr != nil {
		return c.failErr
	}
	if sql == c.fail {
		return errors.New("ERROR: canceled")
	}
	return nil
}

func (c *fakeConn) Exec(_ context.Context, sql string, _ ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, c.send(sql)
}

func (c *fakeConn) Query(_ context.Context, sql string, _ ...any) (pgx.Rows, error) {
	if err := c.send(sql); err != nil {
		return nil, err
	}
	return &fakeRows{rows: c.rows[sql], at: -1}, nil
}

func (c *fakeConn) QueryRow(_ context.Context, sql string, _ ...any) pgx.Row {
	if err := c.send(sql); err != nil {
		return &fakeRows{err: err}
	}
	return &fakeRows{rows: c.rows[sql]}
}

func (c *fakeConn) Close(context.Context) error {
	c.sent = append(c.sent, "close")
	return nil
}

// fakeRows are rows of values, scanned into pointers of their types.
type fakeRows struct {
	rows [][]any
	at   int
	err  error
}

func (r *fakeRows) Next() bool { r.at++; return r.at < len(r.rows) }
func (r *fakeRows) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if r.at >= len(r.rows) {
		return pgx.ErrNoRows
	}
	row := r.rows[r.at]
	if len(row) != len(dest) {
		return fmt.Errorf("%d values scanned into %d destinations", len(row), len(dest))
	}
	for i, v := range row {
		reflect.ValueOf(dest[i]).Elem().Set(reflect.ValueOf(v))
	}
	return nil
}
func (r *fakeRows) Close()                                       {}
func (r *fakeRows) Err() error                                   { return r.err }
func (r *fakeRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r *fakeRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (r *fakeRows) Values() ([]any, error)                       { return r.rows[r.at], nil }
func (r *fakeRows) RawValues() [][]byte                          { return nil }
func (r *fakeRows) Conn() *pgx.Conn                              { return nil }
func (r *fakeRows) TypeMap() *pgtype.Map                         { return nil }

func checkSent(t *testing.T, s *server, want ...string) {
	t.Helper()
	if !slices.Equal(s.sent, want) {
		t.Errorf("sent:\n%q\nwant:\n%q", s.sent, want)
	}
}

// A promotion waits for recovery to end, then checkpoints, so that the
// control file names the new timeline before a former primary rewinds
// from it.
func TestPromoteCheckpoints(t *testing.T) {
	s := &server{rows: map[string][][]any{promoteQuery: {{true}}}}
	if err := s.client().Promote(context.Background(), "10.0.0.1", 5432, ha.Credentials{}); err != nil {
		t.Fatal(err)
	}
	checkSent(t, s, "dial", promoteQuery, "CHECKPOINT", "close")

	t.Run("recovery did not end: no checkpoint, an error", func(t *testing.T) {
		s := &server{rows: map[string][][]any{promoteQuery: {{false}}}}
		if err := s.client().Promote(context.Background(), "10.0.0.1", 5432, ha.Credentials{}); err == nil {
			t.Fatal("no error")
		}
		checkSent(t, s, "dial", promoteQuery, "close")
	})
	t.Run("the checkpoint failed: an error", func(t *testing.T) {
		s := &server{rows: map[string][][]any{promoteQuery: {{true}}}, fail: "CHECKPOINT"}
		if err := s.client().Promote(context.Background(), "10.0.0.1", 5432, ha.Credentials{}); err == nil {
			t.Fatal("no error")
		}
	})
}

// A fence writes the marker first, then makes the server refuse writes and
// ends the sessions that could write, in that order, on one connection.
func TestFenceStatements(t *testing.T) {
	s := &server{}
	if err := s.client().Fence(context.Background(), "10.0.0.1", 5432, ha.Credentials{}); err != nil {
		t.Fatal(err)
	}
	checkSent(t, s, "dial",
		`COPY (SELECT 'fenced by database-controller at ' || now()) TO '/var/lib/postgresql/data/dbc-fenced'`,
		`ALTER SYSTEM SET default_transaction_read_only = on`,
		`SELECT pg_reload_conf()`,
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
		"close")

	t.Run("a statement that fails stops the fence", func(t *testing.T) {
		s := &server{fail: `ALTER SYSTEM SET default_transaction_read_only = on`}
		if err := s.client().Fence(context.Background(), "10.0.0.1", 5432, ha.Credentials{}); err == nil {
			t.Fatal("no error")
		}
		checkSent(t, s, "dial", fenceStatements[0], fenceStatements[1], "close")
	})
}

func TestSetSynchronous(t *testing.T) {
	for _, tt := range []struct {
		n    int32
		want string
	}{
		{2, `ALTER SYSTEM SET synchronous_standby_names = 'ANY 2 (*)'`},
		{0, `ALTER SYSTEM SET synchronous_standby_names = ''`},
	} {
		s := &server{}
		if err := s.client().SetSynchronous(context.Background(), "10.0.0.1", 5432, ha.Credentials{}, tt.n); err != nil {
			t.Fatal(err)
		}
		checkSent(t, s, "dial", tt.want, "SELECT pg_reload_conf()", "close")
	}
}

// A probe reads the server's state in one query, and on a primary its
// replicas in a second.
func TestProbe(t *testing.T) {
	t.Run("a primary", func(t *testing.T) {
		s := &server{rows: map[string][][]any{
			probeQuery: {{"db-0", false, int64(0), int64(0), int64(0x3000060), true, "ANY 1 (*)", "00000003",
				"1\t0/3027AC0\tno recovery target specified\n\n2\t1/A0\tno recovery target specified\n"}},
			standbysQuery: {{"db-1", true, int64(0)}, {"db-2", false, int64(4096)}},
		}}
		got, err := s.client().Probe(context.Background(), "10.0.0.1", 5432, ha.Credentials{})
		if err != nil {
			t.Fatal(err)
		}
		want := ha.Facts{Name: "db-0", Written: 0x3000060, Fenced: true, Synchronous: 1,
			Timeline: 3, TimelineEnds: map[uint32]uint64{1: 0x3027AC0, 2: 1<<32 | 0xA0},
			Standbys: []ha.Standby{{Name: "db-1", Streaming: true, LagBytes: ptr.To[int64](0)}, {Name: "db-2", LagBytes: ptr.To[int64](4096)}}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Probe = %+v, want %+v", got, want)
		}
		checkSent(t, s, "dial", probeQuery, standbysQuery, "close")
	})
	t.Run("a replica: no standbys asked", func(t *testing.T) {
		s := &server{rows: map[string][][]any{
			probeQuery: {{"db-1", true, int64(120), int64(80), int64(0), false, "", "0000000A", ""}},
		}}
		got, err := s.client().Probe(context.Background(), "10.0.0.2", 5432, ha.Credentials{})
		if err != nil {
			t.Fatal(err)
		}
		if want := (ha.Facts{Name: "db-1", Replica: true, Received: 120, Applied: 80, Timeline: 10}); !reflect.DeepEqual(got, want) {
			t.Errorf("Probe = %+v, want %+v", got, want)
		}
		checkSent(t, s, "dial", probeQuery, "close")
	})
}

// A history file's lines that cannot be read are left out, never an error:
// a probe that failed would take the primary for lost.
func TestParseHistory(t *testing.T) {
	for _, tt := range []struct {
		history string
		want    map[uint32]uint64
	}{
		{"", nil},
		{"1\t0/3027AC0\tno recovery target specified\n", map[uint32]uint64{1: 0x3027AC0}},
		{"# a comment\n1\t0/10\tx\nnonsense\n2 zz/10 x\n3\t2/20\n", map[uint32]uint64{1: 0x10, 3: 2<<32 | 0x20}},
	} {
		if got := parseHistory(tt.history); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseHistory(%q) = %v, want %v", tt.history, got, tt.want)
		}
	}
	if got := parseTimeline(""); got != 0 {
		t.Errorf(`parseTimeline("") = %d, want 0`, got)
	}
}

func TestSynchronousSetting(t *testing.T) {
	for _, tt := range []struct {
		setting string
		n       int32
	}{
		{"", 0}, {"ANY 1 (*)", 1}, {"ANY 3 (*)", 3}, {"FIRST 1 (db-1)", -1}, {"ANY 01 (*)", -1}, {"*", -1},
	} {
		if got := parseSynchronous(tt.setting); got != tt.n {
			t.Errorf("parseSynchronous(%q) = %d, want %d", tt.setting, got, tt.n)
		}
		if tt.n >= 0 {
			if got := synchronousStandbyNames(tt.n); got != tt.setting {
				t.Errorf("synchronousStandbyNames(%d) = %q, want %q", tt.n, got, tt.setting)
			}
		}
	}
}

func TestTerms(t *testing.T) {
	if got := (client{}).Terms().Position(0x3000060); got != "0/3000060" {
		t.Errorf("a WAL position reads %s, want 0/3000060", got)
	}
	if got := (client{}).Terms().Position(5<<32 | 0x10); got != "5/10" {
		t.Errorf("a WAL position reads %s, want 5/10", got)
	}
}

func TestLoginRefusal(t *testing.T) {
	refusedPassword := &pgconn.PgError{Severity: "FATAL", Code: "28P01", Message: `password authentication failed for user "postgres"`}
	var refused *login.RefusedError
	if err := refusal(fmt.Errorf("failed to connect: %w", refusedPassword)); !errors.As(err, &refused) || refused.Message != refusedPassword.Message {
		t.Errorf("refusal(28P01) = %v, want a RefusedError with the server's words", err)
	}
	for _, err := range []error{
		// pg_hba.conf refuses the host: the pods' probes fail on it.
		&pgconn.PgError{Severity: "FATAL", Code: "28000", Message: `no pg_hba.conf entry for host "10.88.0.1"`},
		&pgconn.PgError{Severity: "FATAL", Code: "3D000", Message: `database "orders" does not exist`},
		errors.New("dial tcp 10.88.0.5:5432: connect: connection refused"),
	} {
		if got := refusal(err); errors.As(got, &refused) || got != err {
			t.Errorf("refusal(%v) = %v, want it unchanged: it says nothing of the credentials", err, got)
		}
	}
}
