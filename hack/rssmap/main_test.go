package main

import "testing"

func TestPackageAndModuleOfASymbol(t *testing.T) {
	for _, tc := range []struct {
		symbol, pkg, module string
	}{
		{"k8s.io/api/core/v1.(*Pod).Unmarshal", "k8s.io/api/core/v1", "k8s.io/api/core"},
		{"runtime.mallocgc", "runtime", "runtime"},
		{"net/http.(*Transport).dialConn", "net/http", "net"},
		{"type:*k8s.io/api/apps/v1.StatefulSet", "type:k8s.io/api/apps/v1", "type:k8s.io/api/apps"},
		{"go:itab.*k8s.io/api/core/v1.Pod,k8s.io/apimachinery/pkg/runtime.Object", "go:itab.k8s.io/api/core/v1", "go:itab.k8s.io/api/core"},
		{"go:string.*", "go:string.*", "go:string.*"},
		{"slices.SortFunc[go.shape.[]*k8s.io/api/core/v1.Pod,go.shape.*uint8]", "slices", "slices"},
		{"github.com/jackc/pgx/v5/pgtype.(*Map).Scan", "github.com/jackc/pgx/v5/pgtype", "github.com/jackc/pgx"},
	} {
		if got := packageOf(tc.symbol); got != tc.pkg {
			t.Errorf("packageOf(%q) = %q, want %q", tc.symbol, got, tc.pkg)
		}
		if got := moduleOf(tc.pkg); got != tc.module {
			t.Errorf("moduleOf(%q) = %q, want %q", tc.pkg, got, tc.module)
		}
	}
}
