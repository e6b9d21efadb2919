package pgsql

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbcontroller/database-controller/pkg/ha"
)

// Parameters checks and sets spec.parameters on PostgreSQL servers: with
// ALTER SYSTEM, which writes postgresql.auto.conf in the data directory (a
// replica's too: pg_basebackup and pg_rewind copy it from the primary), and
// a reload for those the running server takes.
type Parameters struct{ dial dialer }

// NewParameters returns the Parameters that connect with pgx.
func NewParameters() Parameters { return Parameters{dial: dial} }

// contextsQuery asks which of the names the server knows, and when it reads
// each: "postmaster" at start only, "internal" never.
const contextsQuery = `SELECT name, context FROM pg_settings WHERE name = ANY($1::text[])`

// Check asks the server whether it takes params, and changes nothing it
// runs with: each value is written with ALTER SYSTEM, which refuses what
// the server would, then put back as it was (previous, else reset), with
// no reload. It returns, for each name, whether the server reads it only
// at start: a name it does not know is given at start (an extension's,
// known once it is loaded), unless it has no extension's prefix, which
// the server refuses. A refusal is a *ha.RejectedError.
func (c Parameters) Check(ctx context.Context, host string, port int32, cred ha.Credentials, params, previous map[string]string) (map[string]bool, error) {
	var atStart map[string]bool
	err := c.dial.session(ctx, host, port, cred, 2*Timeout, func(ctx context.Context, conn conn) error {
		names := slices.Sorted(maps.Keys(params))
		rows, err := conn.Query(ctx, contextsQuery, names)
		if err != nil {
			return fmt.Errorf("asking %s about its parameters: %w", host, err)
		}
		contexts := map[string]string{}
		_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
			var name, context string
			err := row.Scan(&name, &context)
			contexts[name] = context
			return struct{}{}, err
		})
		if err != nil {
			return fmt.Errorf("asking %s about its parameters: %w", host, err)
		}
		atStart = make(map[string]bool, len(names))
		for _, name := range names {
			context, known := contexts[name]
			atStart[name] = !known || context == "postmaster"
			if !known && strings.Contains(name, ".") {
				continue
			}
			if _, err := conn.Exec(ctx, alterSystem(name, params[name])); err != nil {
				return rejected(err, name, params[name], host)
			}
			undo := resetStatement(name)
			if old, ok := previous[name]; ok {
				undo = alterSystem(name, old)
			}
			if _, err := conn.Exec(ctx, undo); err != nil {
				return fmt.Errorf("putting parameter %s back on %s: %w", name, host, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return atStart, nil
}

// Set sets params on the server and resets those of reset, with ALTER
// SYSTEM, then reloads its configuration, so that a running server takes
// them.
func (c Parameters) Set(ctx context.Context, host string, port int32, cred ha.Credentials, params map[string]string, reset []string) error {
	return c.dial.session(ctx, host, port, cred, 2*Timeout, func(ctx context.Context, conn conn) error {
		for _, name := range slices.Sorted(maps.Keys(params)) {
			if _, err := conn.Exec(ctx, alterSystem(name, params[name])); err != nil {
				return rejected(err, name, params[name], host)
			}
		}
		for _, name := range slices.Sorted(slices.Values(reset)) {
			if _, err := conn.Exec(ctx, resetStatement(name)); err != nil {
				return fmt.Errorf("resetting parameter %s on %s: %w", name, host, err)
			}
		}
		if _, err := conn.Exec(ctx, reload); err != nil {
			return fmt.Errorf("reloading the configuration of %s: %w", host, err)
		}
		return nil
	})
}

// rejected is the server's refusal of name as a *ha.RejectedError; any other
// failure (a lost connection) as it is.
func rejected(err error, name, value, host string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "42") || strings.HasPrefix(pgErr.Code, "55")) {
		return &ha.RejectedError{Name: name, Value: value, Message: pgErr.Message}
	}
	return fmt.Errorf("setting parameter %s on %s: %w", name, host, err)
}

// listParameters take a list (GUC_LIST_INPUT): ALTER SYSTEM takes each
// element as its own literal, and would take one literal "a, b" as one
// element.
var listParameters = []string{
	"datestyle", "debug_io_direct", "local_preload_libraries", "log_destination", "search_path",
	"session_preload_libraries", "shared_preload_libraries", "temp_tablespaces", "wal_consistency_checking",
}

// alterSystem is the ALTER SYSTEM statement that sets name to value, as the
// configuration file would: a list's elements split at the commas outside
// double quotes, each unquoted.
func alterSystem(name, value string) string {
	values := []string{value}
	if slices.Contains(listParameters, name) {
		values = splitList(value)
	}
	quoted := make([]string, len(values))
	for k, v := range values {
		quoted[k] = quoteLiteral(v)
	}
	return "ALTER SYSTEM SET " + quoteName(name) + " = " + strings.Join(quoted, ", ")
}

func resetStatement(name string) string { return "ALTER SYSTEM RESET " + quoteName(name) }

// quoteName quotes each part of a parameter's name (an extension's has
// two) as an identifier. The CRD allows letters, digits, '_' and one '.'.
func quoteName(name string) string {
	parts := strings.Split(name, ".")
	for k, p := range parts {
		parts[k] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}

// splitList splits a list parameter's value as PostgreSQL's configuration
// file does: at commas outside double quotes, each element trimmed and
// unquoted ("" in quotes is one "). An empty value is the empty list.
func splitList(value string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	flush := func() {
		s := cur.String()
		if !any {
			s = strings.TrimSpace(s)
		}
		out = append(out, s)
		cur.Reset()
		any = false
	}
	for i := 0; i < len(value); i++ {
		ch := value[i]
		switch {
		case ch == '"' && quoted && i+1 < len(value) && value[i+1] == '"':
			cur.WriteByte('"')
			i++
		case ch == '"':
			quoted, any = !quoted, true
		case ch == ',' && !quoted:
			flush()
		case !quoted && (ch == ' ' || ch == '\t') && any:
		default:
			cur.WriteByte(ch)
		}
	}
	if strings.TrimSpace(value) == "" {
		return []string{""}
	}
	flush()
	return out
}
