package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestCatalogImage(t *testing.T) {
	c := Catalog{Engine: "mysql", Repository: "mysql", Versions: []string{"8.0", "8.4"}}
	tests := []struct {
		version, override string
		want, wantErr     string
	}{
		{version: "8.4", want: "mysql:8.4"},
		{version: "16", wantErr: `version "16" of mysql is not in the catalog (known: 8.0, 8.4); use one of those or set spec.image`},
		{version: "9.1", override: "mirror.local/mysql:9.1", want: "mirror.local/mysql:9.1"},
	}
	for _, tt := range tests {
		got, err := c.Image(tt.version, tt.override)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Image(%q, %q) error = %v, want %q", tt.version, tt.override, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Image(%q, %q) = %q, %v; want %q", tt.version, tt.override, got, err, tt.want)
		}
	}
}

func TestRefuseDowngrade(t *testing.T) {
	tests := []struct {
		seriesLength     int
		running, desired string
		refused          bool
	}{
		{1, "16", "15", true},
		{1, "16", "16", false},
		{1, "16", "17", false},
		{1, "16.4", "16.2", false}, // same series: a minor change is not refused
		{1, "", "14", false},       // nothing ran yet
		{2, "8.4", "8.0", true},
		{2, "8.0", "8.4", false},
		{2, "8.4.2", "8.4.0", false},
		{2, "7", "6.0", true},
		{2, "7.0", "7", false},
		{1, "16", "bogus", false},
	}
	for _, tt := range tests {
		err := RefuseDowngrade("x", tt.seriesLength, tt.running, tt.desired)
		if (err != nil) != tt.refused {
			t.Errorf("RefuseDowngrade(%d, %q, %q) = %v, want refused=%v", tt.seriesLength, tt.running, tt.desired, err, tt.refused)
		}
	}
	err := RefuseDowngrade("postgresql", 1, "16", "15")
	want := "version 15 is older than the running version 16; postgresql cannot be downgraded in place: set spec.version back to 16 or later"
	if v, ok := err.(*VersionChangeError); !ok || v.Reason != ReasonDowngradeRefused || v.Message != want {
		t.Fatalf("RefuseDowngrade = %#v, want a *VersionChangeError %q", err, want)
	}
}

func TestDatabaseName(t *testing.T) {
	if got := DatabaseName("orders-db"); got != "orders_db" {
		t.Fatalf("DatabaseName = %q", got)
	}
}

func TestParseVersion(t *testing.T) {
	for _, bad := range []string{"", "a", "1..2", "-1", "16 evil"} {
		if _, err := parseVersion(bad); err == nil || !strings.Contains(err.Error(), "version") {
			t.Errorf("parseVersion(%q) = %v, want an error", bad, err)
		}
	}
}

func TestRefuseRestoreIntoOlder(t *testing.T) {
	for _, tc := range []struct {
		length   int
		from, to string
		ok       bool
	}{
		{1, "15", "15", true},
		{1, "15", "15.4", true},
		{1, "15.8", "15", true}, // the same major: minor versions share the format
		{1, "15", "16", true},   // the way to a new major
		{1, "16", "15", false},
		{2, "8.0", "8.4", true},
		{2, "8.4", "8.0", false},
		{2, "7.0", "8.0", true},
		{2, "8.0", "7.0", false},
		{2, "8.0.1", "8.0", true},
		{1, "", "16", false}, // a backup that never recorded its version
		{1, "16", "x", false},
	} {
		err := RefuseRestoreIntoOlder("E", tc.length, tc.from, tc.to)
		if (err == nil) != tc.ok {
			t.Errorf("RefuseRestoreIntoOlder(%d, %q, %q) = %v, want ok=%v", tc.length, tc.from, tc.to, err, tc.ok)
		}
		var refusal *VersionChangeError
		if err != nil && (!errors.As(err, &refusal) || refusal.Reason != ReasonRestoreRefused) {
			t.Errorf("error %v is not a RestoreRefused VersionChangeError", err)
		}
	}
}
