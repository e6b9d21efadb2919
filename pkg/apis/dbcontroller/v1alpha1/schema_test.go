package v1alpha1

import (
	"regexp"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/crdtest"
)

// imagePattern reads the pattern of spec.image from the generated CRD.
func imagePattern(t *testing.T) *regexp.Regexp {
	t.Helper()
	p, _ := crdtest.Field(t, "spec.image")["pattern"].(string)
	if p == "" {
		t.Fatal("spec.image has no pattern in the CRD")
	}
	return regexp.MustCompile(p)
}

func TestImagePattern(t *testing.T) {
	re := imagePattern(t)
	for _, ok := range []string{
		"postgres",
		"postgres:16",
		"library/postgres:16.4-bookworm",
		"mirror.local/pg:9.6",
		"registry.example.com:5000/team/postgres:16",
		"registry:5000/postgres",
		"localhost/db-test:1",
		"localhost:5000/db_test__x/a-b:v1.2_3",
		"[::1]:5000/postgres:16",
		"postgres@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"postgres:16@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	} {
		if !re.MatchString(ok) {
			t.Errorf("%q is a well-formed image reference, and the schema refuses it", ok)
		}
	}
	for _, bad := range []string{
		"postgres 16 evil",
		"postgres:16 ",
		"Postgres:16",
		"postgres:",
		":16",
		"postgres:16:17",
		"/postgres",
		"postgres/",
		"postgres;rm -rf /",
		"postgres@sha256:abc",
		"postgres:-16",
	} {
		if re.MatchString(bad) {
			t.Errorf("%q is not a well-formed image reference, and the schema accepts it", bad)
		}
	}
}
