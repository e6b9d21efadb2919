package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

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

// The cached objects are counted by kind, the caches of one kind summed,
// when scraped.
func TestCachedObjects(t *testing.T) {
	store := func(names ...string) cache.Store {
		s := cache.NewStore(cache.MetaNamespaceKeyFunc)
		for _, n := range names {
			if err := s.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n}}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	pods := store("a-0", "a-1")
	c := newCachedCollector(map[string][]cache.Store{
		"Secret": {store("a-credentials", "a-ca"), store("users-cert")},
		"Pod":    {pods},
		"Node":   {store()},
	})
	want := `# HELP database_controller_cached_objects Objects held in the controller's informer caches, by kind.
# TYPE database_controller_cached_objects gauge
database_controller_cached_objects{kind="Node"} 0
database_controller_cached_objects{kind="Pod"} 2
database_controller_cached_objects{kind="Secret"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// Counted again at the next scrape.
	if err := pods.Delete(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-1"}}); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want, `"Pod"} 2`, `"Pod"} 1`, 1))); err != nil {
		t.Fatal(err)
	}
}
