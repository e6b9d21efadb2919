package cached

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Meta is an object's metadata as a compact form holds it: its
// annotations apart, as their keys and values in turn, sorted by key, in
// a slice where a map takes at least 336 bytes (a map of up to eight
// entries: its header and a group of eight slots) and a slice of one
// entry 32. Each child of a Database has annotations of its own (the
// digest it was applied from; a TLS Secret's ten say what its certificate
// is), so no two share them. The annotations read back as a map, which
// GetAnnotations makes: the informers' handlers and indexes read a
// compact form's metadata as any object's.
type Meta struct {
	metav1.ObjectMeta // no annotations
	annotations       []string
}

// newMeta returns what a compact form holds of m. It shares m's fields
// but its annotations' map.
func newMeta(m metav1.ObjectMeta) Meta {
	pairs := pairsOf(m.Annotations)
	m.Annotations = nil
	return Meta{ObjectMeta: m, annotations: pairs}
}

// pairsOf is annotations as keys and values in turn, sorted by key; nil
// when there are none.
func pairsOf(annotations map[string]string) []string {
	if len(annotations) == 0 {
		return nil
	}
	pairs := make([]string, 0, 2*len(annotations))
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		pairs = append(pairs, k, annotations[k])
	}
	return pairs
}

// objectMeta is the metadata m stands for, with a new map of its
// annotations.
func (m *Meta) objectMeta() metav1.ObjectMeta {
	om := m.ObjectMeta
	om.Annotations = m.GetAnnotations()
	return om
}

// GetAnnotations returns a new map of the annotations; nil when there are
// none.
func (m *Meta) GetAnnotations() map[string]string {
	if len(m.annotations) == 0 {
		return nil
	}
	a := make(map[string]string, len(m.annotations)/2)
	for i := 0; i < len(m.annotations); i += 2 {
		a[m.annotations[i]] = m.annotations[i+1]
	}
	return a
}

// SetAnnotations sets the annotations to a's.
func (m *Meta) SetAnnotations(a map[string]string) {
	m.annotations = pairsOf(a)
}
