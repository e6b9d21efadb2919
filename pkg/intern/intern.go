// Package intern makes the objects in the controller's informer caches
// share the memory of the strings, and of the maps and lists, they have in
// common.
//
// A watch decodes each object on its own, so a thousand StatefulSets hold a
// thousand copies of each image name, command, environment variable name,
// mount path and label key, and every Secret its own copy of each
// annotation key; each of a Database's Secrets, Services and its
// StatefulSet its own map of the same labels and its own list of the same
// owner; each client Service of an engine its own list of the same ports,
// each StatefulSet of an engine and version its own list of the same
// containers (what the cache keeps of them), and each claim its own list
// of the same storage asked. A Table keeps one copy of the strings and of
// those values it has seen lately, and Strings points an object's strings
// and values at it: the object reads the same, and the copies its decoder
// made become garbage.
package intern

import (
	"hash/maphash"
	"maps"
	"reflect"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Table holds one copy of each of the strings it has seen lately, in a
// fixed number of slots: a string may sit in any of the `ways` slots of
// the set its hash picks, and takes a free one, or else one picked by the
// hash from the string there before it. The strings that many objects
// share are asked for all the time and keep their places; one that only an
// object has passes through. Its memory is bounded by the slots, whatever
// the number of objects. Maps of strings (labels, selectors), some lists
// (sharedLists: owner references, ports, containers, claim templates) and
// resource lists (requests) have slots of their own, kept the same way: a
// value the table gives an object is shared by every object it gives it
// to, and no one writes to it again. Safe for concurrent use.
type Table struct {
	mu     sync.Mutex
	seed   maphash.Seed
	slots  []string
	values []held
}

// held is a value a table holds (a map of strings, a list of sharedLists,
// a resource list), and its hash, which also says its kind
// (hashMap, hashList, hashResources).
type held struct {
	hash uint64
	v    any
}

// ways is the number of slots a string may sit in: with one, two strings
// of the same hash that alternate would each evict the other.
const ways = 4

// setOf is the set of `ways` slots of slots that hash h picks.
func setOf[T any](slots []T, h uint64) []T {
	return slots[h%uint64(len(slots)/ways)*ways:][:ways]
}

// victim is the slot of a full set that an entry of hash h takes: picked
// by other bits of the hash than the set's.
func victim(h uint64) int { return int((h >> 32) % ways) }

// New returns a Table of at least the given numbers of slots for strings
// and for the values objects share (maps of labels, owner references,
// ports, requests). A slot holds its value, and so its memory, until
// another takes the slot.
func New(slots, valueSlots int) *Table {
	sets := func(n int) int { return max((n+ways-1)/ways, 1) * ways }
	return &Table{seed: maphash.MakeSeed(), slots: make([]string, sets(slots)), values: make([]held, sets(valueSlots))}
}

// String returns s, or the equal string the table holds, which it then
// keeps.
func (t *Table) String(s string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.str(s)
}

// str is String with t.mu held.
func (t *Table) str(s string) string {
	if s == "" {
		return s
	}
	h := maphash.String(t.seed, s)
	set := setOf(t.slots, h)
	free := -1
	for i, held := range set {
		if held == s {
			return held
		}
		if held == "" && free < 0 {
			free = i
		}
	}
	if free < 0 {
		free = victim(h)
	}
	// A copy of its own: s may be part of a larger buffer (a decoder's),
	// which the table must not keep.
	s = strings.Clone(s)
	set[free] = s
	return s
}

var (
	objectMetaType   = reflect.TypeFor[metav1.ObjectMeta]()
	resourceListType = reflect.TypeFor[corev1.ResourceList]()
	// sharedLists are the lists the table shares, and the kind of their
	// hashes: an object's owners, a Service's ports, and what
	// builder.StripTemplates leaves of a StatefulSet's containers and
	// claim templates, the same for the Databases of one engine, version
	// and size.
	sharedLists = map[reflect.Type]uint64{
		reflect.TypeFor[[]metav1.OwnerReference]():        kindOwners,
		reflect.TypeFor[[]corev1.ServicePort]():           kindPorts,
		reflect.TypeFor[[]corev1.Container]():             kindContainers,
		reflect.TypeFor[[]corev1.PersistentVolumeClaim](): kindClaims,
	}
)

// Strings points every string of obj (a pointer to an API object) that
// the table holds an equal of at that copy, and gives the table those it
// does not: in fields, slices, pointers, and the keys and values of maps of
// strings, such as labels. A map of strings the table holds an equal of
// is replaced by that one (sharedMap), but an object's annotations, which
// hold digests and times of their own object; so are the lists of
// sharedLists and resource lists (share). An object's own name, UID and
// resourceVersion are left alone: no other object has them. obj reads the
// same after.
//
// obj must be one no one else reads yet, as an informer's transform gets
// it: its maps are written to, and may be given to other objects after.
func (t *Table) Strings(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	p := planOf(v.Type())
	if p == nil {
		return
	}
	// One lock for the object, not one for each of its strings.
	t.mu.Lock()
	defer t.mu.Unlock()
	p.walk(t, v)
}

// A plan walks the values of one type: made once per type, as reading a
// type's fields by reflection costs more than the walk. A type that holds
// no string has none (nil).
type plan struct {
	walk func(t *Table, v reflect.Value)
}

var (
	plans    sync.Map // reflect.Type → *plan, or nil
	planning sync.Mutex
)

func planOf(typ reflect.Type) *plan {
	if p, ok := plans.Load(typ); ok {
		return p.(*plan)
	}
	planning.Lock()
	defer planning.Unlock()
	made := map[reflect.Type]*plan{}
	p := makePlan(typ, made)
	// Published once complete: a plan another goroutine loads has its walk.
	for t, mp := range made {
		plans.Store(t, mp)
	}
	return p
}

// makePlan makes the plan of typ, and of the types in it, into made. A
// struct type met again inside itself gets the plan being made.
func makePlan(typ reflect.Type, made map[reflect.Type]*plan) *plan {
	if p, ok := plans.Load(typ); ok {
		return p.(*plan)
	}
	if p, ok := made[typ]; ok {
		return p
	}
	switch typ.Kind() {
	case reflect.String:
		return stringPlan
	case reflect.Pointer:
		elem := makePlan(typ.Elem(), made)
		if elem == nil {
			made[typ] = nil
			return nil
		}
		p := &plan{walk: func(t *Table, v reflect.Value) {
			if !v.IsNil() {
				elem.walk(t, v.Elem())
			}
		}}
		made[typ] = p
		return p
	case reflect.Interface:
		p := &plan{walk: func(t *Table, v reflect.Value) {
			if v.IsNil() {
				return
			}
			// What an interface holds can be set only through a pointer.
			if e := v.Elem(); e.Kind() == reflect.Pointer && !e.IsNil() {
				if ep := planOf(e.Type()); ep != nil {
					ep.walk(t, e)
				}
			}
		}}
		made[typ] = p
		return p
	case reflect.Slice, reflect.Array:
		elem := makePlan(typ.Elem(), made)
		if elem == nil {
			made[typ] = nil // such as bytes: a Secret's data are not strings.
			return nil
		}
		p := &plan{walk: func(t *Table, v reflect.Value) {
			for i := range v.Len() {
				elem.walk(t, v.Index(i))
			}
		}}
		if kind, ok := sharedLists[typ]; ok {
			each := p.walk
			own := func(t *Table, list any) { each(t, reflect.ValueOf(list)) }
			p = &plan{walk: func(t *Table, v reflect.Value) {
				if v.Len() == 0 || !v.CanSet() {
					each(t, v)
					return
				}
				if h, ok := t.hashList(kind, v); ok {
					v.Set(reflect.ValueOf(share(t, h, v.Interface(), own)))
				} else {
					each(t, v)
				}
			}}
		}
		made[typ] = p
		return p
	case reflect.Map:
		if typ == resourceListType {
			p := &plan{walk: func(t *Table, v reflect.Value) {
				if list := v.Interface().(corev1.ResourceList); v.CanSet() && len(list) > 0 {
					v.Set(reflect.ValueOf(share(t, t.hashResources(list), list, internResources)))
				}
			}}
			made[typ] = p
			return p
		}
		if typ.Key().Kind() != reflect.String || typ.Elem().Kind() != reflect.String {
			made[typ] = nil
			return nil
		}
		p := &plan{walk: func(t *Table, v reflect.Value) { t.walkStringMap(v) }}
		made[typ] = p
		return p
	case reflect.Struct:
		if typ == objectMetaType {
			owners := makePlan(reflect.TypeFor[[]metav1.OwnerReference](), made)
			p := &plan{walk: func(t *Table, v reflect.Value) {
				t.walkObjectMeta(v.Addr().Interface().(*metav1.ObjectMeta), owners)
			}}
			made[typ] = p
			return p
		}
		p := &plan{}
		made[typ] = p
		type field struct {
			index int
			plan  *plan
		}
		var fields []field
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				if fp := makePlan(f.Type, made); fp != nil {
					fields = append(fields, field{i, fp})
				}
			}
		}
		if len(fields) == 0 {
			// Only numbers, booleans, times: nothing to walk. A type
			// inside it that refers back to it keeps this plan, which
			// then walks nothing.
			p.walk = func(*Table, reflect.Value) {}
			made[typ] = nil
			return nil
		}
		p.walk = func(t *Table, v reflect.Value) {
			for _, f := range fields {
				f.plan.walk(t, v.Field(f.index))
			}
		}
		return p
	}
	made[typ] = nil
	return nil
}

var stringPlan = &plan{walk: func(t *Table, v reflect.Value) {
	if v.Len() > 0 && v.CanSet() {
		v.SetString(t.str(v.String()))
	}
}}

// walkStringMap shares a map of strings (sharedMap) where it can be set,
// or else interns its keys and values: setting a key that is there
// replaces the map's copy of the key with the one given.
func (t *Table) walkStringMap(m reflect.Value) {
	if plain, ok := m.Interface().(map[string]string); ok {
		// Selectors: without reflection's copies.
		if m.CanSet() {
			m.Set(reflect.ValueOf(t.sharedMap(plain)))
		} else {
			t.stringMap(plain)
		}
		return
	}
	keyType, elemType := m.Type().Key(), m.Type().Elem()
	for _, k := range m.MapKeys() {
		v := m.MapIndex(k)
		m.SetMapIndex(reflect.ValueOf(t.str(k.String())).Convert(keyType), reflect.ValueOf(t.str(v.String())).Convert(elemType))
	}
}

// walkObjectMeta interns m, with owners the plan of its owner references.
func (t *Table) walkObjectMeta(m *metav1.ObjectMeta, owners *plan) {
	m.GenerateName = t.str(m.GenerateName)
	m.Namespace = t.str(m.Namespace)
	m.Labels = t.sharedMap(m.Labels)
	t.stringMap(m.Annotations)
	owners.walk(t, reflect.ValueOf(&m.OwnerReferences).Elem())
	for i := range m.Finalizers {
		m.Finalizers[i] = t.str(m.Finalizers[i])
	}
}

func (t *Table) stringMap(m map[string]string) {
	for k, v := range m {
		m[t.str(k)] = t.str(v)
	}
}

// sharedMap returns the map the table holds that is equal to m, and else
// m with its strings interned, which the table then holds (share).
func (t *Table) sharedMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	return share(t, t.hashMap(m), m, (*Table).stringMap)
}

// share returns the value the table holds that is equal to v, of hash h,
// and else v, with its strings interned by own, which the table then
// holds: in one of the `ways` slots of the set its hash picks, as a
// string. A value the table holds is never written to again, so the
// objects it is given to may read it all at once.
func share[T any](t *Table, h uint64, v T, own func(*Table, T)) T {
	set := setOf(t.values, h)
	free := -1
	for i, x := range set {
		if x.v == nil {
			if free < 0 {
				free = i
			}
			continue
		}
		if x.hash == h {
			if same, ok := x.v.(T); ok && equal(same, v) {
				return same
			}
		}
	}
	if free < 0 {
		free = victim(h)
	}
	own(t, v)
	set[free] = held{hash: h, v: v}
	return v
}

// equal says whether two values of a kind the table shares read the same.
func equal[T any](a, b T) bool {
	if m, ok := any(a).(map[string]string); ok {
		other, ok := any(b).(map[string]string)
		return ok && maps.Equal(m, other)
	}
	// Lists hold pointers (an owner's controller flag, a port's protocol),
	// and a resource list's quantities unexported fields: compared by what
	// they point at and hold, and by their types. Called only on equal
	// hashes.
	return reflect.DeepEqual(a, b)
}

// Each kind of value has hashes of its own: equal contents of two kinds
// are not looked up in each other's slots.
const (
	kindMap uint64 = iota + 1
	kindOwners
	kindPorts
	kindContainers
	kindClaims
	kindResources
)

// hashMap hashes the keys and values of m, in no order.
func (t *Table) hashMap(m map[string]string) uint64 {
	h := uint64(len(m)) ^ kindMap<<56
	for k, v := range m {
		// Summed, as a map's order is no order; the key's hash is
		// multiplied so that a=b and b=a differ.
		h += maphash.String(t.seed, k)*0x9e3779b97f4a7c15 ^ maphash.String(t.seed, v)
	}
	return h
}

// hashList hashes the protobuf encoding of each element of list, in
// order, as a value of kind; ok is false when one has none.
func (t *Table) hashList(kind uint64, list reflect.Value) (h uint64, ok bool) {
	for i := range list.Len() {
		m, isMessage := list.Index(i).Addr().Interface().(interface{ Marshal() ([]byte, error) })
		if !isMessage {
			return 0, false
		}
		b, err := m.Marshal()
		if err != nil {
			return 0, false
		}
		h = h*0x9e3779b97f4a7c15 + maphash.Bytes(t.seed, b)
	}
	return h ^ kind<<56, true
}

func (t *Table) hashResources(list corev1.ResourceList) uint64 {
	h := uint64(len(list)) ^ kindResources<<56
	for name, q := range list {
		// As hashMap, by each quantity as it prints; q is a copy, which
		// String may write.
		h += maphash.String(t.seed, string(name))*0x9e3779b97f4a7c15 ^ maphash.String(t.seed, q.String())
	}
	return h
}

// internResources gives list the table's copies of its names: setting a
// name that is there replaces the map's copy of it.
func internResources(t *Table, list corev1.ResourceList) {
	for name, q := range list {
		list[corev1.ResourceName(t.str(string(name)))] = q
	}
}
