package main

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// informersOf hands out a client-go informer per Go type, as the
// manager's cache does.
type informersOf map[string]toolscache.SharedIndexInformer

func (f informersOf) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	switch obj.(type) {
	case *corev1.Secret:
		return f["Secret"], nil
	case *dbv1alpha1.Database:
		return f["Database"], nil
	}
	panic("no informer")
}

// The cached objects are counted from the informers' stores, by kind.
func TestCachedObjects(t *testing.T) {
	informer := func(names ...string) toolscache.SharedIndexInformer {
		i := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.Secret{}, 0, toolscache.Indexers{})
		for _, n := range names {
			if err := i.GetStore().Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: n}}); err != nil {
				t.Fatal(err)
			}
		}
		return i
	}
	c := newCachedCollector(informersOf{"Secret": informer("a", "b", "c"), "Database": informer("a")},
		map[string]client.Object{"Secret": &corev1.Secret{}, "Database": &dbv1alpha1.Database{}})
	want := `# HELP database_controller_cached_objects Objects held in the controller's informer caches, by kind.
# TYPE database_controller_cached_objects gauge
database_controller_cached_objects{kind="Database"} 1
database_controller_cached_objects{kind="Secret"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
