package mysql

import (
	"testing"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

func TestCheckVersionChange(t *testing.T) {
	for _, tt := range []struct {
		running, desired string
		want             string // the reason, "" when allowed
	}{
		{"", "8.0", ""},
		{"8.0", "8.4", ""}, // upgraded in place by the server
		{"8.4", "8.4.3", ""},
		{"8.4", "8.0", engine.ReasonDowngradeRefused},
		{"8.4", "9.7", ""}, // one long-term support series to the next
		{"8.0", "9.7", engine.ReasonSeriesSkipRefused},
		{"9.7", "9.8", engine.ReasonSeriesSkipRefused}, // beyond the known path
		{"5.7", "8.4", engine.ReasonSeriesSkipRefused},
		// MariaDB reads the data of every earlier series.
		{"", "10.11", ""},
		{"10.11", "11.8", ""},
		{"10.6", "12.3", ""},
		{"10.11.6", "10.11.14", ""},
		{"11.8", "10.11", engine.ReasonDowngradeRefused},
		// MySQL and MariaDB data directories differ.
		{"8.4", "11.8", engine.ReasonMajorUpgradeRefused},
		{"10.11", "9.7", engine.ReasonMajorUpgradeRefused},
	} {
		err := New().CheckVersionChange(engine.Running{Version: tt.running}, tt.desired)
		got := ""
		if err != nil {
			got = err.(*engine.VersionChangeError).Reason
		}
		if got != tt.want {
			t.Errorf("CheckVersionChange(%q, %q) = %v, want reason %q", tt.running, tt.desired, err, tt.want)
		}
	}
}

func TestImage(t *testing.T) {
	for _, tt := range []struct {
		version, override, want string
	}{
		{"8.4", "", "mysql:8.4"},
		{"9.7", "", "mysql:9.7"},
		{"11.8", "", "mariadb:11.8"},
		{"10.11", "", "mariadb:10.11"},
		{"11.8", "registry.example/mariadb:11.8.3", "registry.example/mariadb:11.8.3"},
		{"12.2", "", ""}, // a short-term series: not in the catalog
		{"9.1", "", ""},
	} {
		got, err := New().Image(tt.version, tt.override)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("Image(%q, %q) = %q, %v; want %q", tt.version, tt.override, got, err, tt.want)
		}
	}
	_, err := New().Image("12.2", "")
	want := `version "12.2" of mysql is not in the catalog (known: MySQL 8.0, 8.4, 9.7; MariaDB 10.6, 10.11, 11.4, 11.8, 12.3); use one of those or set spec.image`
	if err == nil || err.Error() != want {
		t.Errorf("Image(12.2) error:\n got %v\nwant %s", err, want)
	}
}

func TestVersionEnv(t *testing.T) {
	env := New().Runtime().VersionEnv
	if got := env("8.4"); len(got) != 0 {
		t.Errorf("MySQL 8.4's servers get %v, want nothing", got)
	}
	if got := env("10.11"); len(got) != 1 || got[0] != (engine.EnvValue{Name: "MARIADB_AUTO_UPGRADE", Value: "1"}) {
		t.Errorf("MariaDB 10.11's servers get %v, want MARIADB_AUTO_UPGRADE=1", got)
	}
}

func TestVersionChangeBetweenMySQLAndMariaDB(t *testing.T) {
	err := New().CheckVersionChange(engine.Running{Version: "8.4"}, "11.8")
	want := "MajorUpgradeRefused: version 11.8 is MariaDB and the running version 8.4 is MySQL: a move between MySQL and MariaDB is not an upgrade, their data directories differ. Set spec.version back to 8.4; to move, back up, restore into a new Database of version 11.8 and check the application against it"
	if err == nil || err.Error() != want {
		t.Errorf("message:\n got %v\nwant %s", err, want)
	}
}
