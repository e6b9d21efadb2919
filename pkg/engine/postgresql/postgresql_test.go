package postgresql

import (
	"testing"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

func TestCheckVersionChange(t *testing.T) {
	for _, tt := range []struct {
		running, desired string
		want             string // the reason, "" when allowed
	}{
		{"", "14", ""},       // nothing ran yet
		{"16", "16", ""},     // no change
		{"16", "16.4", ""},   // a minor version within the major
		{"16.2", "16.4", ""}, // ...
		{"16.4", "16.2", ""}, // ... either way
		{"16", "17", engine.ReasonMajorUpgradeRefused},
		{"14", "18", engine.ReasonMajorUpgradeRefused},
		{"16", "15", engine.ReasonDowngradeRefused},
		{"16", "bogus", ""},                            // malformed: the schema rejects it first
		{"19", "20", engine.ReasonMajorUpgradeRefused}, // an override outside the catalog follows the same rule
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
	err := New().CheckVersionChange(engine.Running{Version: "16"}, "17")
	want := "MajorUpgradeRefused: PostgreSQL 17 cannot read the data directory that PostgreSQL 16 wrote, so the StatefulSet is left as it is. To move to 17, back this Database up (a DatabaseBackup) and restore the backup into a new Database of version 17 (spec.restore.backup); or set spec.version back to 16"
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
}

func TestFeatureCompatibilityVersion(t *testing.T) {
	if got := New().FeatureCompatibilityVersion("16"); got != "" {
		t.Fatalf("FeatureCompatibilityVersion = %q, want none", got)
	}
}
