package v1alpha1

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// openAPISchema is the Database's schema in the generated CRD, the one the
// API server enforces.
func openAPISchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../../../artifacts/crd/dbcontroller.io_databases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// schemaField is the schema of the field at path, a dotted path below the
// Database.
func schemaField(t *testing.T, path string) map[string]any {
	t.Helper()
	node := openAPISchema(t)
	for _, field := range strings.Split(path, ".") {
		props, _ := node["properties"].(map[string]any)
		next, ok := props[field].(map[string]any)
		if !ok {
			t.Fatalf("the CRD has no field %s", path)
		}
		node = next
	}
	return node
}

// imagePattern reads the pattern of spec.image from the generated CRD.
func imagePattern(t *testing.T) *regexp.Regexp {
	t.Helper()
	p, _ := schemaField(t, "spec.image")["pattern"].(string)
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
