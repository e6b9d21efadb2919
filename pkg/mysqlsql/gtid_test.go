package mysqlsql

import (
	"reflect"
	"testing"
)

func TestParseGTIDSet(t *testing.T) {
	const a, b = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "c3acb33c-e86b-11f1-b42c-80007f7df658"
	for _, tt := range []struct {
		in    string
		want  gtidSet
		count uint64
	}{
		{"", gtidSet{}, 0},
		{a + ":1-5", gtidSet{a: {{1, 5}}}, 5},
		{a + ":1-5:7", gtidSet{a: {{1, 5}, {7, 7}}}, 6},
		// The server's own printing: a newline after each comma, upper case
		// from some tools.
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-3,\n" + b + ":1-2", gtidSet{a: {{1, 3}}, b: {{1, 2}}}, 5},
		// Intervals that touch or overlap are one.
		{a + ":4-6:1-3:5-9", gtidSet{a: {{1, 9}}}, 9},
		// Tags (MySQL 8.3 and later) are their own transactions.
		{a + ":1-2:backup:1-4", gtidSet{a: {{1, 2}}, a + ":backup": {{1, 4}}}, 6},
	} {
		got, err := parseGTIDSet(tt.in)
		if err != nil {
			t.Errorf("parseGTIDSet(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseGTIDSet(%q) = %v, want %v", tt.in, got, tt.want)
		}
		if got.count() != tt.count {
			t.Errorf("parseGTIDSet(%q).count() = %d, want %d", tt.in, got.count(), tt.count)
		}
	}
	for _, bad := range []string{"nouuid", ":1-3", a + ":5-3", a + ":1-x", a + ":x-3", a + "::1"} {
		if _, err := parseGTIDSet(bad); err == nil {
			t.Errorf("parseGTIDSet(%q) accepted it", bad)
		}
	}
}

// What a replica received is what it retrieved and what it had: their
// union, counted once.
func TestGTIDSetUnion(t *testing.T) {
	const a = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	executed, _ := parseGTIDSet(a + ":1-100")
	retrieved, _ := parseGTIDSet(a + ":90-120")
	if got := executed.union(retrieved).count(); got != 120 {
		t.Errorf("union count = %d, want 120", got)
	}
	if executed.count() != 100 {
		t.Errorf("the union changed its operand: %v", executed)
	}
}

func TestMariaDBPosition(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint64
	}{
		{"", 0},
		{"0-1-5", 5},
		{"0-11-3,1-2-7", 10},
	} {
		if got, err := mariadbPosition(tt.in); err != nil || got != tt.want {
			t.Errorf("mariadbPosition(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"0-1", "0-1-x"} {
		if _, err := mariadbPosition(bad); err == nil {
			t.Errorf("mariadbPosition(%q) accepted it", bad)
		}
	}
}
