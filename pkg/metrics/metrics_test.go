package metrics

import "testing"

func TestResourceOf(t *testing.T) {
	tests := map[string]string{
		"/api/v1/namespaces/ns/secrets":                                   "secrets",
		"/api/v1/namespaces/ns/secrets/x":                                 "secrets",
		"/api/v1/namespaces/ns/events":                                    "events",
		"/api/v1/namespaces/ns/events/e1":                                 "events",
		"/apis/apps/v1/namespaces/ns/statefulsets/db":                     "statefulsets",
		"/apis/dbcontroller.io/v1alpha1/namespaces/ns/databases/x/status": "databases/status",
		"/apis/dbcontroller.io/v1alpha1/databases":                        "databases",
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases/lock":          "leases",
		"/api/v1/namespaces/ns":                                           "namespaces",
		"/healthz":                                                        "other",
		"/api":                                                            "other",
	}
	for path, want := range tests {
		if got := ResourceOf(path); got != want {
			t.Errorf("ResourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}
