package pgsql

import "testing"

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
