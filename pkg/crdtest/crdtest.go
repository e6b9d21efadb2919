// Package crdtest reads the generated Database CRD for tests.
package crdtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"sigs.k8s.io/yaml"
)

// Rules are the CEL rules of the generated Database CRD, the one the API
// server enforces: those on spec, and those on spec.parameters.
func Rules(t testing.TB) (spec, parameters []string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "artifacts", "crd", "dbcontroller.io_databases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type rules []struct {
		Rule string `json:"rule"`
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Validations rules `json:"x-kubernetes-validations"`
								Properties  struct {
									Parameters struct {
										Validations rules `json:"x-kubernetes-validations"`
									} `json:"parameters"`
								} `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec
	for _, r := range s.Validations {
		spec = append(spec, r.Rule)
	}
	for _, r := range s.Properties.Parameters.Validations {
		parameters = append(parameters, r.Rule)
	}
	return spec, parameters
}
