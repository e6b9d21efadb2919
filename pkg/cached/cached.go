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
