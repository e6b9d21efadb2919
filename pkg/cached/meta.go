package cached

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Meta is an object's metadata as a compact form holds it: the fields of
// ObjectMeta that some reader reads, in 200 bytes where ObjectMeta takes
// 232, and the UID with no allocation of its own (see uid). The
// annotations are held as their keys and values in turn, sorted by key,
// in a slice where a map takes at least 336 bytes (a map of up to
// eight entries: its header and a group of eight slots) and a slice of one
// entry 32. Each child of a Database has annotations of its own (the
// digest it was applied from; a TLS Secret's ten say what its certificate
// is), so no two share them. Not held: the generated name and the seconds
// of grace of a deletion, which no reader reads, the self link (never
// set) and the managed fields (stripForCache drops them). *Meta is a
// metav1.Object: the informers' handlers and indexes read a compact
// form's metadata as any object's; the annotations read back as a new
// map, which GetAnnotations makes.
type Meta struct {
	name, namespace   string
	uid               uid
	resourceVersion   string
	generation        int64
	creationTimestamp metav1.Time
	deletionTimestamp *metav1.Time
	labels            map[string]string
	ownerReferences   []metav1.OwnerReference
	finalizers        []string
	annotations       []string
}

var _ metav1.Object = &Meta{}

// newMeta returns what a compact form holds of m. It shares m's fields
// but its annotations' map.
func newMeta(m metav1.ObjectMeta) Meta {
	return Meta{name: m.Name, namespace: m.Namespace, uid: newUID(m.UID), resourceVersion: m.ResourceVersion, generation: m.Generation,
		creationTimestamp: m.CreationTimestamp, deletionTimestamp: m.DeletionTimestamp, labels: m.Labels,
		ownerReferences: m.OwnerReferences, finalizers: m.Finalizers, annotations: pairsOf(m.Annotations)}
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
	return metav1.ObjectMeta{Name: m.name, Namespace: m.namespace, UID: m.uid.text(), ResourceVersion: m.resourceVersion, Generation: m.generation,
		CreationTimestamp: m.creationTimestamp, DeletionTimestamp: m.deletionTimestamp, Labels: m.labels,
		OwnerReferences: m.ownerReferences, Finalizers: m.finalizers, Annotations: m.GetAnnotations()}
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
func (m *Meta) SetAnnotations(a map[string]string) { m.annotations = pairsOf(a) }

func (m *Meta) GetNamespace() string                        { return m.namespace }
func (m *Meta) SetNamespace(namespace string)               { m.namespace = namespace }
func (m *Meta) GetName() string                             { return m.name }
func (m *Meta) SetName(name string)                         { m.name = name }
func (m *Meta) GetUID() types.UID                           { return m.uid.text() }
func (m *Meta) SetUID(uid types.UID)                        { m.uid = newUID(uid) }
func (m *Meta) GetResourceVersion() string                  { return m.resourceVersion }
func (m *Meta) SetResourceVersion(version string)           { m.resourceVersion = version }
func (m *Meta) GetGeneration() int64                        { return m.generation }
func (m *Meta) SetGeneration(generation int64)              { m.generation = generation }
func (m *Meta) GetCreationTimestamp() metav1.Time           { return m.creationTimestamp }
func (m *Meta) SetCreationTimestamp(t metav1.Time)          { m.creationTimestamp = t }
func (m *Meta) GetDeletionTimestamp() *metav1.Time          { return m.deletionTimestamp }
func (m *Meta) SetDeletionTimestamp(t *metav1.Time)         { m.deletionTimestamp = t }
func (m *Meta) GetLabels() map[string]string                { return m.labels }
func (m *Meta) SetLabels(labels map[string]string)          { m.labels = labels }
func (m *Meta) GetFinalizers() []string                     { return m.finalizers }
func (m *Meta) SetFinalizers(finalizers []string)           { m.finalizers = finalizers }
func (m *Meta) GetOwnerReferences() []metav1.OwnerReference { return m.ownerReferences }
func (m *Meta) SetOwnerReferences(refs []metav1.OwnerReference) {
	m.ownerReferences = refs
}

// The fields a compact form does not hold read as empty, and are not set.

func (m *Meta) GetGenerateName() string                       { return "" }
func (m *Meta) SetGenerateName(string)                        {}
func (m *Meta) GetSelfLink() string                           { return "" }
func (m *Meta) SetSelfLink(string)                            {}
func (m *Meta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (m *Meta) SetDeletionGracePeriodSeconds(*int64)          {}
func (m *Meta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *Meta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// uid is a UID as a compact form holds it. The API server makes each UID a
// UUID in its canonical text (36 characters: a string header and an
// allocation of 48 bytes); uid holds such a UID as its 16 bytes, and any
// other text (a test's, a fake clientset's) as it is.
type uid struct {
	uuid  [16]byte
	other types.UID
}

// uuidDashes are where a UUID's canonical text has its dashes.
var uuidDashes = [...]int{8, 13, 18, 23}

// newUID is u as a uid: its 16 bytes when u is a UUID in lower-case
// canonical text, which text gives back as it was.
func newUID(u types.UID) uid {
	if len(u) != 36 {
		return uid{other: u}
	}
	var b [16]byte
	j := 0
	for i := 0; i < 36; i++ {
		if slices.Contains(uuidDashes[:], i) {
			if u[i] != '-' {
				return uid{other: u}
			}
			continue
		}
		n := lowerHex(u[i])
		if n < 0 {
			return uid{other: u}
		}
		b[j/2] |= byte(n) << (4 * (1 - j%2))
		j++
	}
	if b == ([16]byte{}) {
		// The zero value stands for an empty UID.
		return uid{other: u}
	}
	return uid{uuid: b}
}

// lowerHex is c's value as a lower-case hexadecimal digit; -1 when it is
// not one.
func lowerHex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// text is the UID u stands for. A UID held as its bytes is made again.
func (u uid) text() types.UID {
	if u.other != "" || u.uuid == ([16]byte{}) {
		return u.other
	}
	const digits = "0123456789abcdef"
	var t [36]byte
	j := 0
	for i := range t {
		if slices.Contains(uuidDashes[:], i) {
			t[i] = '-'
			continue
		}
		t[i] = digits[u.uuid[j/2]>>(4*(1-j%2))&0xf]
		j++
	}
	return types.UID(t[:])
}
