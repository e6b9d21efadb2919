// Package cached holds the compact forms in which the controller's
// informer caches keep the kinds they hold the most of. A decoded API
// object is a large struct, most of whose fields the cache's strip
// (stripForCache, builder.StripTemplates) leaves empty: a compact form
// holds only what is left, and gives the object back whole, as stripped,
// to whoever reads it (Whole). The informers' handlers and indexes read a
// compact form's metadata as any object's; it holds the annotations apart
// from the rest (Meta).
package cached

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Compact is a compact form of an object: Object gives the object it
// stands for, a new one that shares its fields and is only read, as
// everything read from a cache.
type Compact interface {
	runtime.Object
	Object() runtime.Object
}

// Whole is obj, or the object its compact form stands for.
func Whole(obj any) any {
	if c, ok := obj.(Compact); ok {
		return c.Object()
	}
	return obj
}

// Unchanged reports whether new, which the informer handed over as an
// update of old, holds what old holds but for its resourceVersion: the
// update changed only fields the strip dropped, which no reader reads, so
// it is no reason to look at the object's Database again (kube-controller-
// manager's annotations on a claim it binds, the capacity in its status).
// The kinds whose compact form holds everything their readers read: pods,
// claims, StatefulSets (a change of the spec raises the generation, which
// it holds) and Services. Never a Secret: its readers read its data from
// the API server at each new resourceVersion. False for anything else.
func Unchanged(old, new any) bool {
	switch old.(type) {
	case *Pod, *PersistentVolumeClaim, *StatefulSet, *Service:
	default:
		return false
	}
	o, n := reflect.ValueOf(old), reflect.ValueOf(new)
	if o.Type() != n.Type() {
		return false
	}
	// Copies, whose resourceVersions are made the same.
	oc, nc := reflect.New(o.Type().Elem()), reflect.New(n.Type().Elem())
	oc.Elem().Set(o.Elem())
	nc.Elem().Set(n.Elem())
	oc.Interface().(metav1.Object).SetResourceVersion("")
	nc.Interface().(metav1.Object).SetResourceVersion("")
	return reflect.DeepEqual(oc.Interface(), nc.Interface())
}
