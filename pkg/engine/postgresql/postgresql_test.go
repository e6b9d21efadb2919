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
		{"16", "17", ""},     // a higher major: upgraded in place
		{"14", "18", ""},     // ... skipping majors, as pg_upgrade does
		{"16", "15", engine.ReasonDowngradeRefused},
		{"16", "bogus", ""},                         // malformed: the schema rejects it first
		{"19", "18", engine.ReasonDowngradeRefused}, // an override outside the catalog follows the same rule
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

func TestMajorUpgradeNeeded(t *testing.T) {
	needed := New().Runtime().MajorUpgrade.Needed
	for _, tt := range []struct {
		from, to string
		want     bool
	}{
		{"15", "17", true},
		{"15.4", "17", true},
		{"16", "16.4", false}, // a minor version rolls out
		{"16.2", "16", false},
		{"", "17", false}, // nothing ran yet
		{"16", "bogus", false},
	} {
		if got := needed(tt.from, tt.to); got != tt.want {
			t.Errorf("Needed(%q, %q) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestFeatureCompatibilityVersion(t *testing.T) {
	if got := New().FeatureCompatibilityVersion("16"); got != "" {
		t.Fatalf("FeatureCompatibilityVersion = %q, want none", got)
	}
}
