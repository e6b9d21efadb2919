package pgsql

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbcontroller/database-controller/pkg/ha"
)

func (s *server) parameters() Parameters {
	return Parameters{dial: s.client().dial}
}

// A list's value is split as the configuration file splits it, so that
// ALTER SYSTEM takes each element, not one element "a, b".
func TestAlterSystem(t *testing.T) {
	for _, tt := range []struct{ name, value, want string }{
		{"work_mem", "64MB", `ALTER SYSTEM SET "work_mem" = '64MB'`},
		{"application_name", "it's", `ALTER SYSTEM SET "application_name" = 'it''s'`},
		{"pg_stat_statements.max", "10000", `ALTER SYSTEM SET "pg_stat_statements"."max" = '10000'`},
		{"shared_preload_libraries", "pg_stat_statements, auto_explain", `ALTER SYSTEM SET "shared_preload_libraries" = 'pg_stat_statements', 'auto_explain'`},
		{"search_path", `"$user", public`, `ALTER SYSTEM SET "search_path" = '$user', 'public'`},
		{"search_path", `"a, b",c`, `ALTER SYSTEM SET "search_path" = 'a, b', 'c'`},
		{"search_path", `"say ""hi"""`, `ALTER SYSTEM SET "search_path" = 'say "hi"'`},
		{"shared_preload_libraries", "", `ALTER SYSTEM SET "shared_preload_libraries" = ''`},
		{"datestyle", "iso, mdy", `ALTER SYSTEM SET "datestyle" = 'iso', 'mdy'`},
	} {
		if got := alterSystem(tt.name, tt.value); got != tt.want {
			t.Errorf("alterSystem(%s, %q) = %s, want %s", tt.name, tt.value, got, tt.want)
		}
	}
}

// Check asks which names the server knows and when it reads them, writes
// each known value (ALTER SYSTEM refuses a bad one) and puts back what was
// there; an extension's parameter the server does not know is given at
// start unchecked. The server's refusal is a ha.RejectedError in its words.
func TestCheckParameters(t *testing.T) {
	s := &server{rows: map[string][][]any{contextsQuery: {{"shared_buffers", "postmaster"}, {"work_mem", "user"}}}}
	atStart, err := s.parameters().Check(context.Background(), "192.0.2.10", 5432, ha.Credentials{},
		map[string]string{"work_mem": "64MB", "shared_buffers": "1GB", "pg_stat_statements.max": "10000"}, map[string]string{"work_mem": "32MB"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"work_mem": false, "shared_buffers": true, "pg_stat_statements.max": true}
	if !reflect.DeepEqual(atStart, want) {
		t.Errorf("read at start: %v, want %v", atStart, want)
	}
	checkSent(t, s, "dial", contextsQuery,
		`ALTER SYSTEM SET "shared_buffers" = '1GB'`, `ALTER SYSTEM RESET "shared_buffers"`,
		`ALTER SYSTEM SET "work_mem" = '64MB'`, `ALTER SYSTEM SET "work_mem" = '32MB'`, "close")

	refused := &pgconn.PgError{Code: "22023", Message: `invalid value for parameter "work_mem": "lots"`}
	s = &server{fail: `ALTER SYSTEM SET "work_mem" = 'lots'`, failErr: refused}
	_, err = s.parameters().Check(context.Background(), "192.0.2.10", 5432, ha.Credentials{}, map[string]string{"work_mem": "lots"}, nil)
	var rejected *ha.RejectedError
	if !errors.As(err, &rejected) || rejected.Name != "work_mem" || rejected.Value != "lots" || rejected.Message != refused.Message {
		t.Errorf("Check of a bad value: %v, want the server's refusal of work_mem", err)
	}

	s = &server{fail: `ALTER SYSTEM SET "work_mem" = '64MB'`}
	_, err = s.parameters().Check(context.Background(), "192.0.2.10", 5432, ha.Credentials{}, map[string]string{"work_mem": "64MB"}, nil)
	if err == nil || errors.As(err, &rejected) {
		t.Errorf("Check on a lost connection: %v, want an error that is no refusal", err)
	}
}

// Set writes the parameters, resets the others, then reloads.
func TestSetParameters(t *testing.T) {
	s := &server{}
	err := s.parameters().Set(context.Background(), "192.0.2.10", 5432, ha.Credentials{},
		map[string]string{"work_mem": "64MB", "statement_timeout": "5s"}, []string{"lock_timeout"})
	if err != nil {
		t.Fatal(err)
	}
	checkSent(t, s, "dial", `ALTER SYSTEM SET "statement_timeout" = '5s'`, `ALTER SYSTEM SET "work_mem" = '64MB'`,
		`ALTER SYSTEM RESET "lock_timeout"`, reload, "close")
}
