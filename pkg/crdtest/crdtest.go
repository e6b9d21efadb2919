// Package crdtest reads the generated Database CRD, the one the API server
// enforces, for tests.
package crdtest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Schema is the Database's OpenAPI schema in the generated CRD.
func Schema(t testing.TB) map[string]any {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "artifacts", "crd", "dbcontroller.io_databases.yaml"))
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

// Field is the schema of the field at path, a dotted path below the
// Database ("spec.image").
func Field(t testing.TB, path string) map[string]any {
	t.Helper()
	node := Schema(t)
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

// Rules are the CEL rules of the field at path.
func Rules(t testing.TB, path string) []string {
	t.Helper()
	var rules []string
	list, _ := Field(t, path)["x-kubernetes-validations"].([]any)
	for _, v := range list {
		if m, ok := v.(map[string]any); ok {
			if rule, ok := m["rule"].(string); ok {
				rules = append(rules, rule)
			}
		}
	}
	return rules
}
