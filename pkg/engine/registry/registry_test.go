package registry

import (
	"strings"
	"testing"
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
		{engine: "mysql", version: "16", wantErr: "known: MySQL 8.0, 8.4, 9.7; MariaDB 10.6"},
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
