package mysqlsql

import (
	"errors"
	"maps"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/dbcontroller/database-controller/pkg/ha"
)

// A MySQL server says which parameters it reads at start (SET GLOBAL of
// its own value refused as read-only), checks every value with SET
// PERSIST_ONLY and has its persisted settings put back as they were:
// removed, or the value set live before.
func TestCheckMySQL(t *testing.T) {
	s := mysqlServer("db-0", nil)
	s.fail["SET GLOBAL back_log = @@GLOBAL.back_log"] = &mysql.MySQLError{Number: errReadOnly, Message: "Variable 'back_log' is a read only variable"}
	s.fail["SET GLOBAL innodb_monitor_enable = @@GLOBAL.innodb_monitor_enable"] = &mysql.MySQLError{Number: 1231, Message: "Variable 'innodb_monitor_enable' can't be set to the value of 'NULL'"}
	params := map[string]string{"back_log": "123", "max_connections": "77", "innodb_buffer_pool_size": "1G", "sql_mode": "STRICT_TRANS_TABLES", "innodb_monitor_enable": "all"}
	atStart, err := Parameters{client: s.client()}.Check(ctx, "10.0.0.1", 3306, ha.Credentials{}, params, map[string]string{"max_connections": "60"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"back_log": true}; !maps.Equal(atStart, want) {
		t.Errorf("read at start: %v, want %v", atStart, want)
	}
	checkSent(t, s, "dial", identify,
		"SET GLOBAL back_log = @@GLOBAL.back_log", "SET PERSIST_ONLY back_log = 123", "RESET PERSIST IF EXISTS back_log",
		"SET GLOBAL innodb_buffer_pool_size = @@GLOBAL.innodb_buffer_pool_size", "SET PERSIST_ONLY innodb_buffer_pool_size = 1073741824",
		"RESET PERSIST IF EXISTS innodb_buffer_pool_size",
		"SET GLOBAL innodb_monitor_enable = @@GLOBAL.innodb_monitor_enable", "SET PERSIST_ONLY innodb_monitor_enable = 'all'",
		"RESET PERSIST IF EXISTS innodb_monitor_enable",
		"SET GLOBAL max_connections = @@GLOBAL.max_connections", "SET PERSIST_ONLY max_connections = 77", "SET PERSIST_ONLY max_connections = 60",
		"SET GLOBAL sql_mode = @@GLOBAL.sql_mode", "SET PERSIST_ONLY sql_mode = 'STRICT_TRANS_TABLES'", "RESET PERSIST IF EXISTS sql_mode",
		"close")
}

// The server's refusal, of a name or a value, is a RejectedError in its
// words, and nothing after it is sent; a lost connection is not one.
func TestCheckRefused(t *testing.T) {
	for _, tc := range []struct {
		name, stmt string
		err        error
		rejected   bool
	}{
		{"unknown", "SET GLOBAL max_conections = @@GLOBAL.max_conections", &mysql.MySQLError{Number: errUnknownVariable, Message: "Unknown system variable 'max_conections'"}, true},
		{"session's", "SET GLOBAL max_conections = @@GLOBAL.max_conections", &mysql.MySQLError{Number: errSessionVariable, Message: "Variable 'max_conections' is a SESSION variable"}, true},
		{"wrong type", "SET PERSIST_ONLY max_conections = 'lots'", &mysql.MySQLError{Number: 1232, Message: "Incorrect argument type to variable 'max_conections'"}, true},
		{"connection lost", "SET PERSIST_ONLY max_conections = 'lots'", mysql.ErrInvalidConn, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mysqlServer("db-0", nil)
			s.fail[tc.stmt] = tc.err
			_, err := Parameters{client: s.client()}.Check(ctx, "10.0.0.1", 3306, ha.Credentials{}, map[string]string{"max_conections": "lots", "wait_timeout": "60"}, nil)
			var refused *ha.RejectedError
			if got := errors.As(err, &refused); got != tc.rejected || err == nil {
				t.Fatalf("error %v: rejected = %v, want %v", err, got, tc.rejected)
			}
			if tc.rejected && (refused.Name != "max_conections" || refused.Value != "lots" || refused.Message != tc.err.(*mysql.MySQLError).Message) {
				t.Errorf("refusal %+v", refused)
			}
			if last := s.sent[len(s.sent)-2]; last != tc.stmt {
				t.Errorf("statements sent after the refusal: %v", s.sent)
			}
		})
	}
}

// A MariaDB server reads every parameter at start: it is asked only
// whether it knows each name, and changes nothing.
func TestCheckMariaDB(t *testing.T) {
	s := mariadbServer("db-0", nil)
	atStart, err := Parameters{client: s.client()}.Check(ctx, "10.0.0.1", 3306, ha.Credentials{}, map[string]string{"max_connections": "77", "back_log": "123"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"back_log": true, "max_connections": true}; !maps.Equal(atStart, want) {
		t.Errorf("read at start: %v, want %v", atStart, want)
	}
	checkSent(t, s, "dial", identify, "SELECT @@GLOBAL.back_log", "SELECT @@GLOBAL.max_connections", "close")

	s = mariadbServer("db-0", nil)
	s.fail["SELECT @@GLOBAL.no_such"] = &mysql.MySQLError{Number: errUnknownVariable, Message: "Unknown system variable 'no_such'"}
	var refused *ha.RejectedError
	if _, err := (Parameters{client: s.client()}).Check(ctx, "10.0.0.1", 3306, ha.Credentials{}, map[string]string{"no_such": "1"}, nil); !errors.As(err, &refused) {
		t.Errorf("an unknown name: %v", err)
	}
}

// Set persists and sets each value, and takes those of reset back to the
// server's default; with nothing to do it does not connect.
func TestSet(t *testing.T) {
	s := mysqlServer("db-0", nil)
	err := Parameters{client: s.client()}.Set(ctx, "10.0.0.1", 3306, ha.Credentials{}, map[string]string{"max_connections": "77", "time_zone": "+00:00"}, []string{"wait_timeout"})
	if err != nil {
		t.Fatal(err)
	}
	checkSent(t, s, "dial", "SET PERSIST max_connections = 77", "SET PERSIST time_zone = '+00:00'",
		"RESET PERSIST IF EXISTS wait_timeout", "SET GLOBAL wait_timeout = DEFAULT", "close")

	s = mysqlServer("db-0", nil)
	if err := (Parameters{client: s.client()}).Set(ctx, "10.0.0.1", 3306, ha.Credentials{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	checkSent(t, s)
}

func TestLiteral(t *testing.T) {
	for value, want := range map[string]string{
		"200": "200", "-1": "-1", "0.5": "0.5", "1G": "1073741824", "512m": "536870912", "16k": "16384",
		"ON": "'ON'", "STRICT_TRANS_TABLES,NO_ZERO_DATE": "'STRICT_TRANS_TABLES,NO_ZERO_DATE'", "it's": `'it\'s'`,
		"99999999999999999999E": "'99999999999999999999E'", "16E": "'16E'", "1.5G": "'1.5G'", "": "''",
	} {
		if got := literal(value); got != want {
			t.Errorf("literal(%q) = %s, want %s", value, got, want)
		}
	}
}
