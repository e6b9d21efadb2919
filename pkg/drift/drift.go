// Package drift decides whether an observed object already holds every field
// of a desired apply configuration. Comparing only the fields the controller
// sets keeps defaults filled in by the API server, and fields other actors
// own, from ever looking like drift.
package drift

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

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
func FirstDifference(observed, desired any) (string, error) {
	o, err := toJSONValue(observed)
	if err != nil {
		return "", fmt.Errorf("encoding observed object: %w", err)
	}
	d, err := toJSONValue(desired)
	if err != nil {
		return "", fmt.Errorf("encoding desired object: %w", err)
	}
	if m, ok := d.(map[string]any); ok {
		// Objects read from informers carry no apiVersion and kind.
		delete(m, "apiVersion")
		delete(m, "kind")
	}
	return difference("", o, d), nil
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

// difference returns the path of the first difference below path, or "".
func difference(path string, observed, desired any) string {
	switch d := desired.(type) {
	case map[string]any:
		o, ok := observed.(map[string]any)
		if !ok {
			if observed == nil && isZero(d) {
				return ""
			}
			return orRoot(path)
		}
		for _, k := range sortedKeys(d) {
			ov, present := o[k]
			if !present {
				if !isZero(d[k]) {
					return path + "." + k
				}
				continue
			}
			if p := difference(path+"."+k, ov, d[k]); p != "" {
				return p
			}
		}
		return ""
	case []any:
		o, ok := observed.([]any)
		if !ok {
			if observed == nil && len(d) == 0 {
				return ""
			}
			return orRoot(path)
		}
		if len(o) < len(d) {
			return orRoot(path)
		}
		for i := range d {
			if p := difference(fmt.Sprintf("%s[%d]", path, i), o[i], d[i]); p != "" {
				return p
			}
		}
		return ""
	default:
		if observed == nil && isZero(desired) || reflect.DeepEqual(observed, desired) {
			return ""
		}
		return orRoot(path)
	}
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
