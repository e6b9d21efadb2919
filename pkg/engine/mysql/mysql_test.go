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
		{"8.4", "9.1", engine.ReasonSeriesSkipRefused}, // beyond the known path
		{"5.7", "8.4", engine.ReasonSeriesSkipRefused},
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
