package reconcile

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

func TestIndexByInstance(t *testing.T) {
	for _, tt := range []struct {
		name string
		obj  interface{}
		want []string
	}{
		{"labelled", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders-0",
			Labels: map[string]string{"app.kubernetes.io/instance": "orders"}}}, []string{"ns/orders"}},
		{"no instance label", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}, nil},
		{"not an object", "x", nil},
	} {
		got, err := IndexByInstance(tt.obj)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: IndexByInstance = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

// indexedAs hands back the objects of one instance that the selector
// matches, and nothing of another instance or namespace.
func TestIndexed(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{IndexInstance: IndexByInstance})
	pod := func(ns, name, instance, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{"app.kubernetes.io/instance": instance, "app.kubernetes.io/name": app}}}
	}
	own := pod("ns", "orders-0", "orders", "postgresql")
	for _, p := range []*corev1.Pod{own, pod("ns", "orders-backup-x", "orders", ""), pod("ns", "other-0", "other", "postgresql"),
		pod("ns2", "orders-0", "orders", "postgresql")} {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	r := newReader(&[numSources]cache.Indexer{srcPods: idx})
	got, err := indexedAs[*corev1.Pod](r, srcPods, IndexInstance, "ns/orders", labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "postgresql"}))
	if err != nil || len(got) != 1 || got[0] != own {
		t.Fatalf("indexed = %v, %v; want only %s/%s", got, err, own.Namespace, own.Name)
	}
	all, err := indexedAs[*corev1.Pod](r, srcPods, IndexInstance, "ns/orders", nil)
	if err != nil || len(all) != 2 {
		t.Fatalf("indexed without a selector = %d objects, %v; want 2", len(all), err)
	}
}

func TestIndexByClaim(t *testing.T) {
	about := func(kind, ns, name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name}}
	}
	withUID := about("PersistentVolumeClaim", "ns", "data-orders-0")
	withUID.InvolvedObject.UID = "claim-uid"
	for _, tt := range []struct {
		name string
		obj  interface{}
		want []string
	}{
		{"a claim", about("PersistentVolumeClaim", "ns", "data-orders-0"), []string{"ns/data-orders-0/"}},
		{"a claim, the reference with its UID", withUID, []string{"ns/data-orders-0/claim-uid"}},
		{"a claim, the reference without namespace", about("PersistentVolumeClaim", "", "data-orders-0"), []string{"ns/data-orders-0/"}},
		{"a pod", about("Pod", "ns", "orders-0"), nil},
		{"a claim without name", about("PersistentVolumeClaim", "ns", ""), nil},
		{"not an event", &corev1.Pod{}, nil},
	} {
		got, err := IndexByClaim(tt.obj)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: IndexByClaim = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}
