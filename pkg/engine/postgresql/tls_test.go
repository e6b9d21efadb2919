package postgresql

import (
	"strings"
	"testing"
)

// Required makes every rule for other hosts hostssl, and keeps the
// server's own socket and loopback as the official image trusts them.
func TestHBA(t *testing.T) {
	for mode, want := range map[string][]string{
		"Enabled":  {"host replication all all scram-sha-256", "host all all all scram-sha-256"},
		"Required": {"hostssl replication all all scram-sha-256", "hostssl all all all scram-sha-256"},
	} {
		got := tls.Files(mode)["pg_hba.conf"]
		lines := strings.Split(strings.TrimSpace(got), "\n")
		if tail := lines[len(lines)-2:]; strings.Join(tail, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: rules for other hosts %q, want %q", mode, tail, want)
		}
		for _, local := range []string{"local all all trust", "host all all 127.0.0.1/32 trust", "host all all ::1/128 trust"} {
			if !strings.Contains(got, "\n"+local+"\n") {
				t.Errorf("%s: no %q", mode, local)
			}
		}
		if mode == "Required" && strings.Contains(got, "\nhost all all all") {
			t.Errorf("Required lets plain text in: %s", got)
		}
	}
}
