package main

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// handlerOf is an informer that keeps the handler it is given, to be
// called as the informer would.
type handlerOf struct {
	cache.Informer
	handler toolscache.ResourceEventHandler
}

func (h *handlerOf) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	h.handler = handler
	return nil, nil
}

// informersOf hands out an informer per Go type, as the manager's cache does.
type informersOf map[string]*handlerOf

func (f informersOf) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	switch obj.(type) {
	case *corev1.Secret:
		return f["Secret"], nil
	case *dbv1alpha1.Database:
		return f["Database"], nil
	}
	panic("no informer")
}

// The cached objects are counted by the informers' events, by kind.
func TestCachedObjects(t *testing.T) {
	informers := informersOf{"Secret": {}, "Database": {}}
	c, err := newCachedCollector(context.Background(), informers, map[string]client.Object{"Secret": &corev1.Secret{}, "Database": &dbv1alpha1.Database{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		informers["Secret"].handler.OnAdd(&corev1.Secret{}, true)
		if name == "a" {
			informers["Database"].handler.OnAdd(&dbv1alpha1.Database{}, true)
		}
	}
	informers["Secret"].handler.OnUpdate(&corev1.Secret{}, &corev1.Secret{})
	informers["Secret"].handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "bench/d"})
	want := `# HELP database_controller_cached_objects Objects held in the controller's informer caches, by kind.
# TYPE database_controller_cached_objects gauge
database_controller_cached_objects{kind="Database"} 1
database_controller_cached_objects{kind="Secret"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
