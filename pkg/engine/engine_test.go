package engine

import (
	"strings"
	"testing"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

func TestImage(t *testing.T) {
	tests := []struct {
		engine   dbv1alpha1.Engine
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
		t.Run(string(tt.engine)+"/"+tt.version, func(t *testing.T) {
			p, err := Lookup(tt.engine)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Image(tt.version, tt.override)
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

func TestLookupUnknown(t *testing.T) {
	if _, err := Lookup("oracle"); err == nil {
		t.Fatal("Lookup(oracle) succeeded, want an error")
	}
}

func TestIsDowngrade(t *testing.T) {
	tests := []struct {
		engine           dbv1alpha1.Engine
		current, desired string
		want             bool
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
		p, _ := Lookup(tt.engine)
		if got := p.IsDowngrade(tt.current, tt.desired); got != tt.want {
			t.Errorf("%s IsDowngrade(%q, %q) = %v, want %v", tt.engine, tt.current, tt.desired, got, tt.want)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	if got := DatabaseName("orders-db"); got != "orders_db" {
		t.Fatalf("DatabaseName = %q", got)
	}
}
