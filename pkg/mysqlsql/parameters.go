package mysqlsql

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/ha"
)

// Parameters checks and sets spec.parameters on MySQL servers, with SET
// PERSIST, which writes mysqld-auto.cnf in the data directory and sets
// the running server. A MariaDB server (it has no SET PERSIST) reads them
// all at start: it is asked only whether it knows their names. Names go
// into the statements unquoted: one the CRD would refuse
// (engine.LowerCaseName) is refused here too.
type Parameters struct{ client client }

// NewParameters returns the Parameters that connect with
// go-sql-driver/mysql.
func NewParameters() Parameters { return Parameters{client: client{dial: dial}} }

// The server's errors that refuse a parameter: its name (unknown, or a
// session's only), its value's type or value.
const (
	errUnknownVariable = 1193
	errSessionVariable = 1228
	errReadOnly        = 1238
)

// Check asks the server whether it takes params, and changes nothing it
// runs with. MySQL: a name is read at start when SET GLOBAL of its own
// value is refused as read-only (error 1238); each value is checked with
// SET PERSIST_ONLY, which refuses a wrong type or an unknown name, then
// the persisted setting is put back as it was (previous, else none), so
// that the next start reads what it did. MariaDB: every name is read at
// start; one the server does not know is refused, the values are not
// checked (a value it refuses stops the first server that restarts with
// it). A refusal is a *ha.RejectedError.
func (c Parameters) Check(ctx context.Context, host string, port int32, cred ha.Credentials, params, previous map[string]string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*Timeout)
	defer cancel()
	s, err := c.client.open(ctx, host, port, cred)
	if err != nil {
		return nil, err
	}
	defer s.conn.Close()
	atStart := make(map[string]bool, len(params))
	for _, name := range slices.Sorted(maps.Keys(params)) {
		value := params[name]
		if !engine.LowerCaseName.MatchString(name) {
			return nil, &ha.RejectedError{Name: name, Value: value, Message: "not a system variable's name"}
		}
		if s.mariadb {
			if _, err := s.conn.Query(ctx, "SELECT @@GLOBAL."+name); err != nil {
				return nil, rejected(err, name, value, host)
			}
			atStart[name] = true
			continue
		}
		err := s.conn.Exec(ctx, "SET GLOBAL "+name+" = @@GLOBAL."+name)
		var myErr *mysql.MySQLError
		switch {
		case err == nil:
		case errors.As(err, &myErr) && myErr.Number == errReadOnly:
			atStart[name] = true
		case errors.As(err, &myErr) && (myErr.Number == errUnknownVariable || myErr.Number == errSessionVariable):
			return nil, rejected(err, name, value, host)
		case errors.As(err, &myErr):
			// A variable that is an action (innodb_monitor_enable)
			// takes no value of its own: SET PERSIST_ONLY checks it.
		default:
			return nil, fmt.Errorf("asking %s about parameter %s: %w", host, name, err)
		}
		if err := s.conn.Exec(ctx, "SET PERSIST_ONLY "+name+" = "+literal(value)); err != nil {
			return nil, rejected(err, name, value, host)
		}
		undo := "RESET PERSIST IF EXISTS " + name
		if old, ok := previous[name]; ok {
			undo = "SET PERSIST_ONLY " + name + " = " + literal(old)
		}
		if err := s.conn.Exec(ctx, undo); err != nil {
			return nil, fmt.Errorf("putting parameter %s back on %s: %w", name, host, err)
		}
	}
	return atStart, nil
}

// Set sets params on the server with SET PERSIST, and resets those of
// reset: their persisted setting is removed and the running server takes
// its default (the configuration files' value comes back at the next
// start). With nothing to set or reset (a MariaDB server's parameters
// are all read at start), it does not connect.
func (c Parameters) Set(ctx context.Context, host string, port int32, cred ha.Credentials, params map[string]string, reset []string) error {
	if len(params) == 0 && len(reset) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*Timeout)
	defer cancel()
	conn, err := c.client.dial(ctx, host, port, cred)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if !engine.LowerCaseName.MatchString(name) {
			return &ha.RejectedError{Name: name, Value: params[name], Message: "not a system variable's name"}
		}
		if err := conn.Exec(ctx, "SET PERSIST "+name+" = "+literal(params[name])); err != nil {
			return rejected(err, name, params[name], host)
		}
	}
	for _, name := range slices.Sorted(slices.Values(reset)) {
		if !engine.LowerCaseName.MatchString(name) {
			continue
		}
		if err := conn.Exec(ctx, "RESET PERSIST IF EXISTS "+name); err != nil {
			return fmt.Errorf("resetting parameter %s on %s: %w", name, host, err)
		}
		if err := conn.Exec(ctx, "SET GLOBAL "+name+" = DEFAULT"); err != nil {
			return fmt.Errorf("resetting parameter %s on %s: %w", name, host, err)
		}
	}
	return nil
}

// rejected is the server's refusal of name as a *ha.RejectedError; any
// other failure (a lost connection) as it is.
func rejected(err error, name, value, host string) error {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return &ha.RejectedError{Name: name, Value: value, Message: myErr.Message}
	}
	return fmt.Errorf("setting parameter %s on %s: %w", name, host, err)
}

var (
	number = regexp.MustCompile(`^-?[0-9]+([.][0-9]+)?$`)
	sized  = regexp.MustCompile(`^([0-9]+)([KkMmGgTtPpEe])$`)
)

// literal is value as SET takes it, the way an option file's value reads:
// a number as a number (SET refuses '200' for an integer variable), a
// size with a suffix (1G, 512M) in bytes, as SET does not take the
// suffix, anything else as a string.
func literal(value string) string {
	if number.MatchString(value) {
		return value
	}
	if m := sized.FindStringSubmatch(value); m != nil {
		n, err := strconv.ParseUint(m[1], 10, 64)
		shift := uint(10 * (strings.IndexByte("kmgtpe", strings.ToLower(m[2])[0]) + 1))
		if err == nil && bits.LeadingZeros64(n) >= int(shift) {
			return strconv.FormatUint(n<<shift, 10)
		}
	}
	return quoteString(value)
}
