package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

func TestImage(t *testing.T) {
	tests := []struct {
		engine   string
		version  string
		override string
		want     string
		wantErr  string
	}{
		{engine: "postgresql", version: "16", want: "postgres:16"},
		{engine: "mysql", version: "8.4", want: "mysql:8.4"},
		{engine: "mongodb", version: "7.0", want: "mongo:7.0"},
		{engine: "postgresql", version: "9", wantErr: `version "9" of postgresql is not in the catalog`},
		{engine: "mysql", version: "16", wantErr: "known: 8.0, 8.4"},
		{engine: "mongodb", version: "7", wantErr: "set spec.image"},
		{engine: "postgresql", version: "9", override: "mirror.local/pg:9.6", want: "mirror.local/pg:9.6"},
	}
	for _, tt := range tests {
		t.Run(tt.engine+"/"+tt.version, func(t *testing.T) {
			e, err := Lookup(tt.engine)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Image(tt.version, tt.override)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Image() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Image() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"postgresql", "mysql", "mongodb"} {
		e, err := Lookup(name)
		if err != nil || e.Name() != name {
			t.Errorf("Lookup(%q) = %v, %v", name, e, err)
		}
	}
	if _, err := Lookup("oracle"); err == nil || !strings.Contains(err.Error(), "must be one of postgresql, mysql, mongodb") {
		t.Fatalf("Lookup(oracle) = %v, want an error naming the engines", err)
	}
}

func TestCheckVersionChange(t *testing.T) {
	tests := []struct {
		engine           string
		running, desired string
		refused          bool
	}{
		{"postgresql", "16", "15", true},
		{"postgresql", "16", "16", false},
		{"postgresql", "16", "17", false},
		{"postgresql", "16.4", "16.2", false}, // same series: a minor change is not refused
		{"postgresql", "", "14", false},       // nothing ran yet
		{"mysql", "8.4", "8.0", true},
		{"mysql", "8.0", "8.4", false},
		{"mysql", "8.4.2", "8.4.0", false},
		{"mongodb", "7.0", "6.0", true},
		{"mongodb", "7.0", "8.0", false},
		{"mongodb", "7", "6.0", true},
		{"mongodb", "7.0", "7", false},
		{"postgresql", "16", "bogus", false},
	}
	for _, tt := range tests {
		e, _ := Lookup(tt.engine)
		err := e.CheckVersionChange(tt.running, tt.desired)
		var refusal *engine.VersionChangeError
		if got := errors.As(err, &refusal); got != tt.refused || (err != nil && !got) {
			t.Errorf("%s CheckVersionChange(%q, %q) = %v, want refused=%v", tt.engine, tt.running, tt.desired, err, tt.refused)
		}
	}
}
