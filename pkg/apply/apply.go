// Package apply decides whether an observed object already holds every field
// of a desired apply configuration, and turns apply configurations into typed
// objects for Create. Comparing only the fields the controller sets keeps
// defaults filled in by the API server, and fields other actors own, from
// ever looking like drift.
package apply

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Covers reports whether observed holds every field set in desired, with
// the same value. Maps are compared key by key over desired's keys; lists
// element by element, where observed may have more elements than desired
// (appended by someone else) but not fewer; a field absent from observed
// matches only a zero value in desired (false, 0, "", empty), because the
// API server omits those when it serializes.
func Covers(observed, desired any) (bool, error) {
	o, err := toJSONValue(observed)
	if err != nil {
		return false, fmt.Errorf("encoding observed object: %w", err)
	}
	d, err := toJSONValue(desired)
	if err != nil {
		return false, fmt.Errorf("encoding desired object: %w", err)
	}
	return covers(o, d), nil
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

func covers(observed, desired any) bool {
	switch d := desired.(type) {
	case map[string]any:
		o, ok := observed.(map[string]any)
		if !ok {
			return observed == nil && isZero(d)
		}
		for k, dv := range d {
			ov, present := o[k]
			if !present {
				if !isZero(dv) {
					return false
				}
				continue
			}
			if !covers(ov, dv) {
				return false
			}
		}
		return true
	case []any:
		o, ok := observed.([]any)
		if !ok {
			return observed == nil && len(d) == 0
		}
		if len(o) < len(d) {
			return false
		}
		for i := range d {
			if !covers(o[i], d[i]) {
				return false
			}
		}
		return true
	default:
		if observed == nil {
			return isZero(desired)
		}
		return reflect.DeepEqual(observed, desired)
	}
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

// ToObject fills into, a typed object, from an apply configuration, for
// Create. Both share one JSON shape, and an apply configuration serializes
// only the fields that are set.
func ToObject(applyConfiguration, into any) error {
	b, err := json.Marshal(applyConfiguration)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}
