package engine

import "testing"

func TestSeries(t *testing.T) {
	for _, tt := range []struct {
		version string
		length  int
		want    string
	}{
		{"16", 1, "16"}, {"16.4", 1, "16"}, {"8.4.2", 2, "8.4"}, {"7", 2, "7.0"}, {"bogus", 2, ""}, {"", 1, ""},
	} {
		if got := Series(tt.version, tt.length); got != tt.want {
			t.Errorf("Series(%q, %d) = %q, want %q", tt.version, tt.length, got, tt.want)
		}
	}
}

func TestRefuseSeriesSkip(t *testing.T) {
	path := []string{"6.0", "7.0", "8.0"}
	for _, tt := range []struct {
		running, desired string
		want             string // the reason, "" when allowed
	}{
		{"", "8.0", ""},
		{"6.0", "6.0", ""},
		{"6.0", "7.0", ""},
		{"7.0", "8.0", ""},
		{"7.0.3", "7.0.9", ""},
		{"6.0", "8.0", ReasonSeriesSkipRefused},
		{"8.0", "9.0", ReasonSeriesSkipRefused}, // beyond the known path
		{"5.0", "6.0", ReasonSeriesSkipRefused}, // from outside it
		{"8.0", "7.0", ReasonDowngradeRefused},
	} {
		err := RefuseSeriesSkip("mongodb", path, 2, tt.running, tt.desired)
		got := ""
		if err != nil {
			got = err.(*VersionChangeError).Reason
		}
		if got != tt.want {
			t.Errorf("RefuseSeriesSkip(%q, %q) = %v, want reason %q", tt.running, tt.desired, err, tt.want)
		}
	}
	err := RefuseSeriesSkip("mongodb", path, 2, "6.0", "8.0")
	want := "SeriesSkipRefused: mongodb upgrades one release series at a time along 6.0 → 7.0 → 8.0; 6.0 to 8.0 skips or leaves that path, and the data of 6.0 cannot be read by 8.0. Set spec.version to the next series (7.0), wait for Running, then go on; or set spec.version back to 6.0"
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
}
