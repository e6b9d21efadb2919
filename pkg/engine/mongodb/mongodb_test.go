package mongodb

import (
	"strings"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

func TestCheckVersionChange(t *testing.T) {
	for _, tt := range []struct {
		running, fcv, desired string
		want                  string // the reason, "" when allowed
	}{
		{"", "", "8.0", ""},
		{"6.0", "6.0", "7.0", ""},
		{"7.0", "7.0", "8.0", ""},
		{"7.0", "6.0", "8.0", engine.ReasonFeatureCompatibilityPending}, // upgraded, FCV not set yet
		{"7.0", "", "8.0", engine.ReasonFeatureCompatibilityPending},    // FCV not known
		{"7.0", "6.0", "7.0", ""},                                       // staying is always fine
		{"6.0", "6.0", "8.0", engine.ReasonSeriesSkipRefused},
		{"8.0", "8.0", "7.0", engine.ReasonDowngradeRefused},
	} {
		err := New().CheckVersionChange(engine.Running{Version: tt.running, FeatureCompatibilityVersion: tt.fcv}, tt.desired)
		got := ""
		if err != nil {
			got = err.(*engine.VersionChangeError).Reason
		}
		if got != tt.want {
			t.Errorf("CheckVersionChange(%q fcv %q, %q) = %v, want reason %q", tt.running, tt.fcv, tt.desired, err, tt.want)
		}
	}
	err := New().CheckVersionChange(engine.Running{Version: "7.0", FeatureCompatibilityVersion: "6.0"}, "8.0")
	if !strings.Contains(err.Error(), "featureCompatibilityVersion is 6.0, not 7.0") {
		t.Errorf("message = %s", err)
	}
}

func TestFeatureCompatibilityVersion(t *testing.T) {
	if got := New().FeatureCompatibilityVersion("7.0.4"); got != "7.0" {
		t.Fatalf("FeatureCompatibilityVersion = %q, want 7.0", got)
	}
}
