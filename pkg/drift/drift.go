// Package drift decides whether an observed object already holds every field
// of a desired apply configuration. Comparing only the fields the controller
// sets keeps defaults filled in by the API server, and fields other actors
// own, from ever looking like drift.
package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// AppliedAnnotation holds, on each child the controller applies, a digest
// of the configuration it applied. A field the spec no longer sets leaves
// the object as it was, where a comparison of fields cannot see it; the
// digest changes, so the child is applied again, and server-side apply
// removes the fields this manager no longer sets.
const AppliedAnnotation = "dbcontroller.io/applied-digest"

// WrittenGenerationAnnotation holds, on a child whose informer cache keeps
// only part of its spec (a StatefulSet), the generation of its spec when
// this controller last wrote all of it: "1" when it created it, the
// generation it had when an apply changed only its metadata, and "" after
// an apply that changed its spec or may have, whose new generation is not
// known before the answer. While the child's generation is still that one and its
// AppliedAnnotation is the digest desired, its spec is the one written for
// that same desired state: no one changed it since (the API server raises
// the generation with every change of the spec), and a controller that
// starts again need not read it whole to compare.
const WrittenGenerationAnnotation = "dbcontroller.io/written-generation"

// Digest is a short digest of an apply configuration, for
// AppliedAnnotation. Apply configurations always encode; one that did not
// would get the digest of nothing, and be applied on every sync.
//
// The JSON is hashed as it is encoded, with no copy of it made (as
// json.Marshal makes one): json.Encoder writes what Marshal returns and a
// newline after it, which the hash is not given.
func Digest(applyConfiguration any) string {
	h := &withoutLastByte{hash: sha256.New()}
	_ = json.NewEncoder(h).Encode(applyConfiguration)
	return hex.EncodeToString(h.hash.Sum(nil)[:8])
}

// withoutLastByte hashes all it is given but the last byte.
type withoutLastByte struct {
	hash hash.Hash
	last []byte // the byte held back, once there is one
}

func (w *withoutLastByte) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if w.last != nil {
		w.hash.Write(w.last)
	} else {
		w.last = make([]byte, 1)
	}
	w.hash.Write(p[:len(p)-1])
	w.last[0] = p[len(p)-1]
	return len(p), nil
}

// Covers reports whether observed holds every field set in desired, with
// the same value. Maps are compared key by key over desired's keys; lists
// element by element, where observed may have more elements than desired
// (appended by someone else) but not fewer; a field absent from observed
// matches only a zero value in desired (false, 0, "", empty), because the
// API server omits those when it serializes. The top-level apiVersion and
// kind are not compared.
func Covers(observed, desired any) (bool, error) {
	path, err := FirstDifference(observed, desired)
	return path == "", err
}

// FirstDifference is Covers that also says where: it returns the path of
// the first field of desired that observed lacks or holds with another
// value, such as ".spec.template.spec.containers[0].image", or "" when
// observed covers desired.
//
// When observed is a pointer to a typed object (as from a lister), desired
// is also read as that type would hold it. A field set to its zero value in
// desired (false, 0, "") that observed lacks is then a difference only if
// the typed object keeps it: a pointer field, such as
// allowPrivilegeEscalation: false that someone cleared; a field the type
// omits when zero is one the API server omits too.
func FirstDifference(observed, desired any) (string, error) {
	o, err := toJSONValue(observed)
	if err != nil {
		return "", fmt.Errorf("encoding observed object: %w", err)
	}
	b, err := json.Marshal(desired)
	if err != nil {
		return "", fmt.Errorf("encoding desired object: %w", err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		return "", fmt.Errorf("encoding desired object: %w", err)
	}
	if m, ok := d.(map[string]any); ok {
		// Objects read from informers carry no apiVersion and kind.
		delete(m, "apiVersion")
		delete(m, "kind")
	}
	c := comparison{desired: b}
	if t := reflect.TypeOf(observed); t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		c.typedAs = t.Elem()
	}
	if !c.differs(o, d) {
		return "", nil
	}
	if c.err != nil {
		return "", c.err
	}
	return c.path(), nil
}

// comparison is one FirstDifference: where it is in desired (the keys and
// indexes from the root), and desired as observed's type holds it, which
// only a field of desired at its zero value that observed lacks needs, so
// it is read the first time one does.
type comparison struct {
	desired []byte       // desired's JSON
	typedAs reflect.Type // observed's type; nil when it is not a typed object
	typed   any          // desired read as typedAs, when read
	read    bool         // typed was read
	err     error        // reading typed failed
	at      []any        // the path below the root: string keys and int indexes
}

// differs reports whether observed lacks a field of desired, or holds it
// with another value; c.at is then the path to it. As the typed object
// would hold it: a zero value of desired is kept by the type (a pointer
// field) where hasValue says so.
func (c *comparison) differs(observed, desired any) bool {
	switch d := desired.(type) {
	case map[string]any:
		o, ok := observed.(map[string]any)
		if !ok {
			return !(observed == nil && isZero(d) && !c.typedHasValue())
		}
		for _, k := range sortedKeys(d) {
			c.at = append(c.at, k)
			ov, present := o[k]
			if !present {
				if !isZero(d[k]) || c.typedHasValue() {
					return true
				}
			} else if c.differs(ov, d[k]) {
				return true
			}
			c.at = c.at[:len(c.at)-1]
		}
		return false
	case []any:
		o, ok := observed.([]any)
		if !ok {
			return !(observed == nil && len(d) == 0)
		}
		if len(o) < len(d) {
			return true
		}
		for i := range d {
			c.at = append(c.at, i)
			if c.differs(o[i], d[i]) {
				return true
			}
			c.at = c.at[:len(c.at)-1]
		}
		return false
	default:
		return !(observed == nil && isZero(desired) || reflect.DeepEqual(observed, desired))
	}
}

// typedHasValue reports whether desired, read as observed's type, holds a
// value at c.at (hasValue); false when observed is not typed. A failure to
// read it is kept in c.err, and counts as a value: a difference.
func (c *comparison) typedHasValue() bool {
	if c.typedAs == nil {
		return false
	}
	if !c.read {
		c.read = true
		asTyped := reflect.New(c.typedAs).Interface()
		if err := json.Unmarshal(c.desired, asTyped); err != nil {
			c.err = fmt.Errorf("reading desired as *%s: %w", c.typedAs, err)
			return true
		}
		if c.typed, c.err = toJSONValue(asTyped); c.err != nil {
			return true
		}
	}
	if c.err != nil {
		return true
	}
	v := c.typed
	for _, step := range c.at {
		switch s := step.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[s]
		case int:
			l, _ := v.([]any)
			v = nil
			if s < len(l) {
				v = l[s]
			}
		}
	}
	return hasValue(v)
}

// path is c.at written as FirstDifference returns it.
func (c *comparison) path() string {
	var b strings.Builder
	for _, step := range c.at {
		switch s := step.(type) {
		case string:
			b.WriteString(".")
			b.WriteString(s)
		case int:
			b.WriteString("[" + strconv.Itoa(s) + "]")
		}
	}
	return orRoot(b.String())
}

func toJSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// hasValue reports whether v holds a value anywhere, a zero one included:
// what a typed object keeps when it serializes.
func hasValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		for _, e := range x {
			if hasValue(e) {
				return true
			}
		}
		return false
	case []any:
		return len(x) > 0
	}
	return true
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case map[string]any:
		for _, e := range x {
			if !isZero(e) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	}
	return false
}
