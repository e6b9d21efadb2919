package mysqlsql

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbcontroller/database-controller/pkg/ha"
)

const (
	uuidA = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	uuidB = "c3acb33c-e86b-11f1-b42c-80007f7df658"
)

// fakeServer is a server as a connection sees it: it records every
// statement, answers queries with rows, and fails the statements named.
type fakeServer struct {
	sent []string
	rows map[string][]map[string]string
	fail map[string]error
}

func mysqlServer(name string, rows map[string][]map[string]string) *fakeServer {
	s := &fakeServer{rows: map[string][]map[string]string{identify: {{"name": name, "version": "9.7.4"}}}, fail: map[string]error{}}
	for k, v := range rows {
		s.rows[k] = v
	}
	return s
}

func mariadbServer(name string, rows map[string][]map[string]string) *fakeServer {
	s := mysqlServer(name, rows)
	s.rows[identify] = []map[string]string{{"name": name, "version": "10.11.14-MariaDB-0+deb12u2"}}
	return s
}

func (s *fakeServer) client() client {
	return client{dial: func(context.Context, string, int32, ha.Credentials) (conn, error) {
		s.sent = append(s.sent, "dial")
		return s, nil
	}}
}

func (s *fakeServer) Exec(_ context.Context, stmt string) error {
	s.sent = append(s.sent, stmt)
	return s.fail[stmt]
}

func (s *fakeServer) Query(_ context.Context, stmt string) ([]map[string]string, error) {
	s.sent = append(s.sent, stmt)
	if err := s.fail[stmt]; err != nil {
		return nil, err
	}
	return s.rows[stmt], nil
}

func (s *fakeServer) Close() error {
	s.sent = append(s.sent, "close")
	return nil
}

func checkSent(t *testing.T, s *fakeServer, want ...string) {
	t.Helper()
	if !slices.Equal(s.sent, want) {
		t.Errorf("statements sent:\n  %s\nwant:\n  %s", strings.Join(s.sent, "\n  "), strings.Join(want, "\n  "))
	}
}

var ctx = context.Background()

func TestProbe(t *testing.T) {
	for _, tt := range []struct {
		name   string
		server *fakeServer
		want   ha.Facts
		sent   []string
	}{{
		name: "a MySQL primary with two replicas connected",
		server: mysqlServer("db-0", map[string][]map[string]string{
			mysqlState:   {{"executed": uuidA + ":1-40,\n" + uuidB + ":1-2", "super_read_only": "0"}},
			showReplicas: {{"Server_Id": "2", "Host": "db-1"}, {"Server_Id": "3", "Host": "db-2"}},
		}),
		want: ha.Facts{Name: "db-0", FenceHolds: true, Written: 42, Standbys: []ha.Standby{{Name: "db-1", Streaming: true}, {Name: "db-2", Streaming: true}}},
		sent: []string{"dial", identify, mysqlState, replicaStatus, semiSync, showReplicas, "close"},
	}, {
		name: "a MySQL primary waiting for one replica",
		server: mysqlServer("db-0", map[string][]map[string]string{
			mysqlState: {{"executed": uuidA + ":1-40", "super_read_only": "0"}},
			semiSync: {{"name": "rpl_semi_sync_source_enabled", "value": "ON"},
				{"name": "rpl_semi_sync_source_wait_for_replica_count", "value": "1"},
				{"name": "rpl_semi_sync_source_timeout", "value": semiSyncTimeout}},
		}),
		want: ha.Facts{Name: "db-0", FenceHolds: true, Written: 40, Synchronous: 1},
		sent: []string{"dial", identify, mysqlState, replicaStatus, semiSync, stalledCommits, showReplicas, "close"},
	}, {
		name: "a MySQL primary whose commits have waited long for their replica, with a clone from it",
		server: mysqlServer("db-0", map[string][]map[string]string{
			mysqlState: {{"executed": uuidA + ":1-40", "super_read_only": "0"}},
			semiSync: {{"name": "rpl_semi_sync_source_enabled", "value": "ON"},
				{"name": "rpl_semi_sync_source_wait_for_replica_count", "value": "1"},
				{"name": "rpl_semi_sync_source_timeout", "value": semiSyncTimeout}},
			stalledCommits: {{"stalled": "2", "clones": "2"}},
		}),
		want: ha.Facts{Name: "db-0", FenceHolds: true, Written: 40, Synchronous: 1,
			Stalled: "commits have waited 5 s or more for replicas to acknowledge them, and a clone from it waits for them to end", CloneWaits: true},
		sent: []string{"dial", identify, mysqlState, replicaStatus, semiSync, stalledCommits, showReplicas, "close"},
	}, {
		name: "a MySQL primary with semi-synchronous replication that falls back to asynchronous: a setting the controller does not make",
		server: mysqlServer("db-0", map[string][]map[string]string{
			mysqlState: {{"executed": uuidA + ":1-40", "super_read_only": "0"}},
			semiSync: {{"name": "rpl_semi_sync_source_enabled", "value": "ON"},
				{"name": "rpl_semi_sync_source_wait_for_replica_count", "value": "1"},
				{"name": "rpl_semi_sync_source_timeout", "value": "10000"}},
		}),
		want: ha.Facts{Name: "db-0", FenceHolds: true, Written: 40, Synchronous: -1},
		sent: []string{"dial", identify, mysqlState, replicaStatus, semiSync, stalledCommits, showReplicas, "close"},
	}, {
		name: "a fenced MySQL primary",
		server: mysqlServer("db-0", map[string][]map[string]string{
			mysqlState: {{"executed": uuidA + ":1-40", "super_read_only": "1"}},
		}),
		want: ha.Facts{Name: "db-0", FenceHolds: true, Written: 40, Fenced: true},
		sent: []string{"dial", identify, mysqlState, replicaStatus, semiSync, showReplicas, "close"},
	}, {
		name: "a MySQL replica: received is what it retrieved and what it had, once",
		server: mysqlServer("db-1", map[string][]map[string]string{
			mysqlState:    {{"executed": uuidA + ":1-30", "super_read_only": "1"}},
			replicaStatus: {{"Retrieved_Gtid_Set": uuidA + ":25-40", "Replica_IO_Running": "Yes"}},
		}),
		want: ha.Facts{Name: "db-1", FenceHolds: true, Replica: true, Received: 40, Applied: 30},
		sent: []string{"dial", identify, mysqlState, replicaStatus, "close"},
	}, {
		name: "a MariaDB primary with a replica connected: its fence does not hold",
		server: mariadbServer("db-0", map[string][]map[string]string{
			mariadbState:    {{"current": "0-1-12", "applied": "", "read_only": "0"}},
			mariadbReplicas: {{"Server_id": "2", "Host": "db-1", "Port": "3306", "Master_id": "1"}},
		}),
		want: ha.Facts{Name: "db-0", Written: 12, Standbys: []ha.Standby{{Name: "db-1", Streaming: true}}},
		sent: []string{"dial", identify, mariadbState, replicaStatus, mariadbSemiSync, mariadbReplicas, "close"},
	}, {
		name: "a fenced MariaDB primary waiting for one replica",
		server: mariadbServer("db-0", map[string][]map[string]string{
			mariadbState: {{"current": "0-1-12", "applied": "0-1-3", "read_only": "1"}},
			mariadbSemiSync: {{"Variable_name": "rpl_semi_sync_master_enabled", "Value": "ON"},
				{"Variable_name": "rpl_semi_sync_master_timeout", "Value": semiSyncTimeout},
				{"Variable_name": "rpl_semi_sync_master_wait_point", "Value": "AFTER_SYNC"}},
		}),
		want: ha.Facts{Name: "db-0", Written: 12, Fenced: true, Synchronous: 1},
		sent: []string{"dial", identify, mariadbState, replicaStatus, mariadbSemiSync, stalledCommits, mariadbReplicas, "close"},
	}, {
		name: "a MariaDB primary whose commits have waited long for their replica",
		server: mariadbServer("db-0", map[string][]map[string]string{
			mariadbState: {{"current": "0-1-12", "applied": "", "read_only": "0"}},
			mariadbSemiSync: {{"Variable_name": "rpl_semi_sync_master_enabled", "Value": "ON"},
				{"Variable_name": "rpl_semi_sync_master_timeout", "Value": semiSyncTimeout},
				{"Variable_name": "rpl_semi_sync_master_wait_point", "Value": "AFTER_SYNC"}},
			stalledCommits: {{"stalled": "1", "clones": "0"}},
		}),
		want: ha.Facts{Name: "db-0", Written: 12, Synchronous: 1, Stalled: "commits have waited 5 s or more for replicas to acknowledge them"},
		sent: []string{"dial", identify, mariadbState, replicaStatus, mariadbSemiSync, stalledCommits, mariadbReplicas, "close"},
	}, {
		name: "a MariaDB primary with semi-synchronous replication as MariaDB sets it by default: a setting the controller does not make",
		server: mariadbServer("db-0", map[string][]map[string]string{
			mariadbState: {{"current": "0-1-12", "applied": "", "read_only": "0"}},
			mariadbSemiSync: {{"Variable_name": "rpl_semi_sync_master_enabled", "Value": "ON"},
				{"Variable_name": "rpl_semi_sync_master_timeout", "Value": "10000"},
				{"Variable_name": "rpl_semi_sync_master_wait_point", "Value": "AFTER_COMMIT"}},
		}),
		want: ha.Facts{Name: "db-0", Written: 12, Synchronous: -1},
		sent: []string{"dial", identify, mariadbState, replicaStatus, mariadbSemiSync, stalledCommits, mariadbReplicas, "close"},
	}, {
		name: "a MariaDB replica",
		server: mariadbServer("db-1", map[string][]map[string]string{
			mariadbState:  {{"current": "0-1-9", "applied": "0-1-9", "read_only": "1"}},
			replicaStatus: {{"Gtid_IO_Pos": "0-1-12"}},
		}),
		want: ha.Facts{Name: "db-1", Replica: true, Received: 12, Applied: 9},
		sent: []string{"dial", identify, mariadbState, replicaStatus, "close"},
	}, {
		name: "a MySQL replica whose receiver stopped on the source's fatal error: broken",
		server: mysqlServer("db-1", map[string][]map[string]string{
			mysqlState: {{"executed": uuidA + ":1-30", "super_read_only": "1"}},
			replicaStatus: {{"Retrieved_Gtid_Set": "", "Replica_IO_Running": "No", "Last_IO_Errno": "13114",
				"Last_IO_Error": "Got fatal error 1236 from source when reading data from binary log: 'Cannot replicate because the source purged required binary logs.'"}},
		}),
		want: ha.Facts{Name: "db-1", FenceHolds: true, Replica: true, Received: 30, Applied: 30,
			Broken: "error 13114 from the primary: Got fatal error 1236 from source when reading data from binary log: 'Cannot replicate because the source purged required binary logs.'"},
		sent: []string{"dial", identify, mysqlState, replicaStatus, "close"},
	}, {
		name: "a MySQL replica whose receiver retries after the same error: not broken (yet)",
		server: mysqlServer("db-1", map[string][]map[string]string{
			mysqlState:    {{"executed": uuidA + ":1-30", "super_read_only": "1"}},
			replicaStatus: {{"Retrieved_Gtid_Set": "", "Replica_IO_Running": "Connecting", "Last_IO_Errno": "13114", "Last_IO_Error": "Got fatal error"}},
		}),
		want: ha.Facts{Name: "db-1", FenceHolds: true, Replica: true, Received: 30, Applied: 30},
		sent: []string{"dial", identify, mysqlState, replicaStatus, "close"},
	}, {
		name: "a MySQL replica that cannot connect: not broken, a retry may cure it",
		server: mysqlServer("db-1", map[string][]map[string]string{
			mysqlState:    {{"executed": uuidA + ":1-30", "super_read_only": "1"}},
			replicaStatus: {{"Retrieved_Gtid_Set": "", "Replica_IO_Running": "No", "Last_IO_Errno": "2003", "Last_IO_Error": "error connecting to source"}},
		}),
		want: ha.Facts{Name: "db-1", FenceHolds: true, Replica: true, Received: 30, Applied: 30},
		sent: []string{"dial", identify, mysqlState, replicaStatus, "close"},
	}, {
		name: "a MariaDB replica whose receiver stopped on the primary's fatal error: broken",
		server: mariadbServer("db-1", map[string][]map[string]string{
			mariadbState: {{"current": "0-1-9", "applied": "0-1-9", "read_only": "1"}},
			replicaStatus: {{"Gtid_IO_Pos": "0-1-9", "Slave_IO_Running": "No", "Last_IO_Errno": "1236",
				"Last_IO_Error": "Got fatal error 1236 from master when reading data from binary log: 'Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and required binlog files have been purged.'"}},
		}),
		want: ha.Facts{Name: "db-1", Replica: true, Received: 9, Applied: 9,
			Broken: "error 1236 from the primary: Got fatal error 1236 from master when reading data from binary log: 'Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and required binlog files have been purged.'"},
		sent: []string{"dial", identify, mariadbState, replicaStatus, "close"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.server.client().Probe(ctx, "10.0.0.1", 3306, ha.Credentials{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Probe = %+v, want %+v", got, tt.want)
			}
			checkSent(t, tt.server, tt.sent...)
		})
	}
}

// A server that answers something the client cannot read is no answer.
func TestProbeRefusesWhatItCannotRead(t *testing.T) {
	s := mysqlServer("db-0", map[string][]map[string]string{
		mysqlState: {{"executed": uuidA + ":9-1", "super_read_only": "0"}},
	})
	if _, err := s.client().Probe(ctx, "10.0.0.1", 3306, ha.Credentials{}); err == nil {
		t.Error("Probe read a GTID set that runs backwards")
	}
	s = mysqlServer("db-0", nil)
	if _, err := s.client().Probe(ctx, "10.0.0.1", 3306, ha.Credentials{}); err == nil {
		t.Error("Probe read a server that returned no state row")
	}
}

func TestPromote(t *testing.T) {
	wait := `SELECT WAIT_FOR_EXECUTED_GTID_SET('` + uuidA + `:1-40,` + uuidB + `:1-2', 5) AS timed_out`
	replica := func(timedOut string) *fakeServer {
		return mysqlServer("db-1", map[string][]map[string]string{
			replicaStatus: {{"Retrieved_Gtid_Set": uuidA + ":1-40,\n" + uuidB + ":1-2"}},
			wait:          {{"timed_out": timedOut}},
		})
	}
	t.Run("a replica applies what it received, then stops, writes and forgets its source", func(t *testing.T) {
		s := replica("0")
		if err := s.client().Promote(ctx, "10.0.0.2", 3306, ha.Credentials{}); err != nil {
			t.Fatal(err)
		}
		checkSent(t, s, "dial", identify, "STOP REPLICA IO_THREAD", replicaStatus, wait,
			"STOP REPLICA", "SET PERSIST super_read_only = OFF", "SET PERSIST read_only = OFF", "RESET REPLICA ALL", "close")
	})
	t.Run("a replica that has not applied it in time is not promoted", func(t *testing.T) {
		s := replica("1")
		if err := s.client().Promote(ctx, "10.0.0.2", 3306, ha.Credentials{}); err == nil {
			t.Fatal("promoted a replica that had not applied what it received")
		}
		checkSent(t, s, "dial", identify, "STOP REPLICA IO_THREAD", replicaStatus, wait, "close")
	})
	t.Run("a server left half way, no replica any more, accepts writes", func(t *testing.T) {
		s := mysqlServer("db-1", nil)
		if err := s.client().Promote(ctx, "10.0.0.2", 3306, ha.Credentials{}); err != nil {
			t.Fatal(err)
		}
		checkSent(t, s, "dial", identify, "STOP REPLICA IO_THREAD", replicaStatus,
			"STOP REPLICA", "SET PERSIST super_read_only = OFF", "SET PERSIST read_only = OFF", "RESET REPLICA ALL", "close")
	})
	t.Run("a failure stops it", func(t *testing.T) {
		s := replica("0")
		s.fail["SET PERSIST read_only = OFF"] = errors.New("Error 1290")
		if err := s.client().Promote(ctx, "10.0.0.2", 3306, ha.Credentials{}); err == nil {
			t.Fatal("no error")
		}
		checkSent(t, s, "dial", identify, "STOP REPLICA IO_THREAD", replicaStatus, wait,
			"STOP REPLICA", "SET PERSIST super_read_only = OFF", "SET PERSIST read_only = OFF", "close")
	})
}

func TestFence(t *testing.T) {
	s := mysqlServer("db-0", map[string][]map[string]string{clientSessions: {{"id": "17"}, {"id": "21"}}})
	s.fail["KILL CONNECTION 21"] = &mysql.MySQLError{Number: 1094, Message: "Unknown thread id: 21"}
	if err := s.client().Fence(ctx, "10.0.0.1", 3306, ha.Credentials{}); err != nil {
		t.Fatal(err)
	}
	checkSent(t, s, "dial", identify,
		clientSessions, "KILL CONNECTION 17", "KILL CONNECTION 21",
		"SET PERSIST super_read_only = ON",
		clientSessions, "KILL CONNECTION 17", "KILL CONNECTION 21", "close")

	s = mysqlServer("db-0", map[string][]map[string]string{clientSessions: {{"id": "17; DROP TABLE t"}}})
	if err := s.client().Fence(ctx, "10.0.0.1", 3306, ha.Credentials{}); err == nil {
		t.Error("a session id that is no number went into KILL")
	}
	checkSent(t, s, "dial", identify, clientSessions, "close")
}

// The statements a MariaDB server gets for each change, beside MySQL's
// above:
//
//	change      MySQL                                  MariaDB
//	promote     STOP REPLICA IO_THREAD                 STOP REPLICA IO_THREAD
//	            WAIT_FOR_EXECUTED_GTID_SET(received)   SHOW REPLICA STATUS until Exec_ = Read_Master_Log_Pos
//	            STOP REPLICA                           STOP REPLICA
//	            SET PERSIST super_read_only = OFF      SET GLOBAL read_only = OFF
//	            SET PERSIST read_only = OFF
//	            RESET REPLICA ALL                      RESET REPLICA ALL
//	fence                                              SELECT ... INTO DUMPFILE (marker)
//	            (sessions ended)                       (sessions ended)
//	            SET PERSIST super_read_only = ON       SET GLOBAL read_only = ON
//	            (sessions ended)                       (sessions ended)
//	semi-sync   SET PERSIST rpl_semi_sync_source_*     SET GLOBAL rpl_semi_sync_master_* (one replica at most)
func TestMariaDBChanges(t *testing.T) {
	applied := map[string]string{"Master_Log_File": "binlog.000002", "Read_Master_Log_Pos": "900", "Relay_Master_Log_File": "binlog.000002", "Exec_Master_Log_Pos": "900"}
	t.Run("promote: applies what it received, then stops, writes and forgets its source", func(t *testing.T) {
		s := mariadbServer("db-1", map[string][]map[string]string{replicaStatus: {applied}})
		if err := s.client().Promote(ctx, "10.0.0.2", 3306, ha.Credentials{}); err != nil {
			t.Fatal(err)
		}
		checkSent(t, s, "dial", identify, "STOP REPLICA IO_THREAD", replicaStatus,
			"STOP REPLICA", "SET GLOBAL read_only = OFF", "RESET REPLICA ALL", "close")
	})
	t.Run("promote: not applied in time, not promoted", func(t *testing.T) {
		defer func(w, p time.Duration) { mariadbApplyWait, mariadbApplyPoll = w, p }(mariadbApplyWait, mariadbApplyPoll)
		mariadbApplyWait, mariadbApplyPoll = 25*time.Millisecond, 10*time.Millisecond
		behind := maps.Clone(applied)
		behind["Relay_Master_Log_File"], behind["Exec_Master_Log_Pos"] = "binlog.000001", "4000"
		s := mariadbServer("db-1", map[string][]map[string]string{replicaStatus: {behind}})
		if err := s.client().Promote(ctx, "10.0.0.2", 3306, ha.Credentials{}); err == nil {
			t.Fatal("promoted a replica that had not applied what it received")
		}
		if s.sent[len(s.sent)-2] != replicaStatus || slices.Contains(s.sent, "STOP REPLICA") {
			t.Errorf("statements sent: %v; want looks at its replication until the time is up, and nothing else", s.sent)
		}
	})
	t.Run("fence: the marker, then read_only between the sessions' ends; a marker there before is no error", func(t *testing.T) {
		s := mariadbServer("db-0", map[string][]map[string]string{clientSessions: {{"id": "17"}}})
		s.fail[mariadbMarkFenced] = &mysql.MySQLError{Number: 1086, Message: "File '/var/lib/mysql/dbc-fenced' already exists"}
		if err := s.client().Fence(ctx, "10.0.0.1", 3306, ha.Credentials{}); err != nil {
			t.Fatal(err)
		}
		checkSent(t, s, "dial", identify, "SELECT 'fenced by database-controller' INTO DUMPFILE '/var/lib/mysql/dbc-fenced'",
			clientSessions, "KILL CONNECTION 17", "SET GLOBAL read_only = ON", clientSessions, "KILL CONNECTION 17", "close")
	})
	t.Run("fence: a marker that cannot be written stops it", func(t *testing.T) {
		s := mariadbServer("db-0", nil)
		s.fail[mariadbMarkFenced] = &mysql.MySQLError{Number: 1045, Message: "Access denied"}
		if err := s.client().Fence(ctx, "10.0.0.1", 3306, ha.Credentials{}); err == nil {
			t.Fatal("fenced without the marker")
		}
		checkSent(t, s, "dial", identify, mariadbMarkFenced, "close")
	})
	for _, tt := range []struct {
		n    int32
		want []string
	}{
		{1, []string{"SET GLOBAL rpl_semi_sync_master_wait_point = AFTER_SYNC", "SET GLOBAL rpl_semi_sync_master_timeout = 4294967295",
			"SET GLOBAL rpl_semi_sync_master_enabled = ON"}},
		{0, []string{"SET GLOBAL rpl_semi_sync_master_enabled = OFF"}},
	} {
		s := mariadbServer("db-0", nil)
		if err := s.client().SetSynchronous(ctx, "10.0.0.1", 3306, ha.Credentials{}, tt.n); err != nil {
			t.Fatal(err)
		}
		checkSent(t, s, append(append([]string{"dial", identify}, tt.want...), "close")...)
	}
	s := mariadbServer("db-0", nil)
	var refused *ha.SynchronousUnsupportedError
	if err := s.client().SetSynchronous(ctx, "10.0.0.1", 3306, ha.Credentials{}, 2); !errors.As(err, &refused) {
		t.Errorf("SetSynchronous(2) on MariaDB = %v, want an ha.SynchronousUnsupportedError", err)
	}
	checkSent(t, s, "dial", identify, "close")
}

func TestSetSynchronous(t *testing.T) {
	for _, tt := range []struct {
		n    int32
		want []string
	}{
		{1, []string{"SET PERSIST rpl_semi_sync_source_wait_for_replica_count = 1", "SET PERSIST rpl_semi_sync_source_timeout = 4294967295",
			"SET PERSIST rpl_semi_sync_source_enabled = ON"}},
		{2, []string{"SET PERSIST rpl_semi_sync_source_wait_for_replica_count = 2", "SET PERSIST rpl_semi_sync_source_timeout = 4294967295",
			"SET PERSIST rpl_semi_sync_source_enabled = ON"}},
		{0, []string{"SET PERSIST rpl_semi_sync_source_enabled = OFF"}},
	} {
		s := mysqlServer("db-0", nil)
		if err := s.client().SetSynchronous(ctx, "10.0.0.1", 3306, ha.Credentials{}, tt.n); err != nil {
			t.Fatal(err)
		}
		checkSent(t, s, append(append([]string{"dial", identify}, tt.want...), "close")...)
	}
}

func TestQuoteString(t *testing.T) {
	for in, want := range map[string]string{`a:1-3`: `'a:1-3'`, `it's`: `'it\'s'`, `back\slash`: `'back\\slash'`} {
		if got := quoteString(in); got != want {
			t.Errorf("quoteString(%q) = %s, want %s", in, got, want)
		}
	}
}

// Stalled commits are named once one has waited 5 s, and a clone from the
// server only with them: a clone alone goes on.
func TestStalledWords(t *testing.T) {
	const stalled = "commits have waited 5 s or more for replicas to acknowledge them"
	for _, tt := range []struct {
		rows       []map[string]string
		want       string
		cloneWaits bool
	}{
		{rows: nil, want: ""},
		{rows: []map[string]string{{"stalled": "", "clones": ""}}, want: ""},
		{rows: []map[string]string{{"stalled": "0", "clones": "2"}}, want: ""},
		{rows: []map[string]string{{"stalled": "1", "clones": "0"}}, want: stalled},
		{rows: []map[string]string{{"stalled": "3", "clones": "2"}}, want: stalled + ", and a clone from it waits for them to end", cloneWaits: true},
	} {
		if got, cloneWaits := stalledWords(tt.rows); got != tt.want || cloneWaits != tt.cloneWaits {
			t.Errorf("stalledWords(%v) = %q, %v, want %q, %v", tt.rows, got, cloneWaits, tt.want, tt.cloneWaits)
		}
	}
}
