package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/dbcontroller/database-controller/pkg/builder"
)

func TestCovers(t *testing.T) {
	tests := []struct {
		name     string
		observed any
		desired  any
		want     bool
	}{
		{"equal scalars", map[string]any{"a": 1}, map[string]any{"a": 1}, true},
		{"different scalar", map[string]any{"a": 1}, map[string]any{"a": 2}, false},
		{"extra observed key", map[string]any{"a": 1, "b": 2}, map[string]any{"a": 1}, true},
		{"missing non-zero key", map[string]any{}, map[string]any{"a": 1}, false},
		{"missing zero key", map[string]any{}, map[string]any{"a": false, "b": "", "c": 0}, true},
		{"nested map", map[string]any{"m": map[string]any{"x": "y", "z": 1}}, map[string]any{"m": map[string]any{"x": "y"}}, true},
		{"nested drift", map[string]any{"m": map[string]any{"x": "n"}}, map[string]any{"m": map[string]any{"x": "y"}}, false},
		{"list appended by others", map[string]any{"l": []any{1, 2, 3}}, map[string]any{"l": []any{1, 2}}, true},
		{"list shorter than desired", map[string]any{"l": []any{1}}, map[string]any{"l": []any{1, 2}}, false},
		{"list reordered", map[string]any{"l": []any{2, 1}}, map[string]any{"l": []any{1, 2}}, false},
		{"missing list", map[string]any{}, map[string]any{"l": []any{1}}, false},
		{"type mismatch", map[string]any{"m": "x"}, map[string]any{"m": map[string]any{"x": "y"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Covers(tt.observed, tt.desired)
			if err != nil || got != tt.want {
				t.Fatalf("Covers() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// A typed object as the API server returns it, with defaults filled in,
// covers the apply configuration it was created from.
func TestCoversTypedObjectWithDefaults(t *testing.T) {
	desired := corev1ac.Service("db", "ns").
		WithLabels(map[string]string{"a": "b"}).
		WithSpec(corev1ac.ServiceSpec().
			WithPublishNotReadyAddresses(false).
			WithPorts(corev1ac.ServicePort().WithName("pg").WithPort(5432)))
	var svc corev1.Service
	if err := builder.Convert(desired, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.ClusterIP = "10.0.0.7"
	svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
	svc.Spec.Ports[0].Protocol = corev1.ProtocolTCP
	svc.Labels["added-by-someone"] = "x"
	svc.Annotations = map[string]string{"note": "kept"}
	if ok, err := Covers(&svc, desired); err != nil || !ok {
		t.Fatalf("Covers(defaulted, desired) = %v, %v; want true", ok, err)
	}
	svc.Spec.Ports[0].Port = 5433
	if ok, _ := Covers(&svc, desired); ok {
		t.Fatal("Covers() = true after the port drifted")
	}
}

func TestFirstDifference(t *testing.T) {
	tests := []struct {
		observed, desired any
		want              string
	}{
		{map[string]any{"a": 1}, map[string]any{"a": 1}, ""},
		{map[string]any{"spec": map[string]any{"l": []any{map[string]any{"image": "x"}}}},
			map[string]any{"spec": map[string]any{"l": []any{map[string]any{"image": "y"}}}}, ".spec.l[0].image"},
		{map[string]any{}, map[string]any{"b": 1, "a": 2}, ".a"},
		{map[string]any{"a": 1, "m": map[string]any{"x": []any{map[string]any{"p": 1}, map[string]any{"p": 2}}}},
			map[string]any{"a": 1, "m": map[string]any{"x": []any{map[string]any{"p": 1}, map[string]any{"p": 3}}}}, ".m.x[1].p"},
		{map[string]any{"l": []any{}}, map[string]any{"l": []any{1}}, ".l"},
		{"x", "y", "."},
	}
	for _, tt := range tests {
		got, err := FirstDifference(tt.observed, tt.desired)
		if err != nil || got != tt.want {
			t.Errorf("FirstDifference(%v, %v) = %q, %v; want %q", tt.observed, tt.desired, got, err, tt.want)
		}
	}
}

// Read as the observed type holds it, a pointer field set to false that
// observed lacks is a difference; a plain field the type omits when false
// is not, since the API server omits it too.
func TestFirstDifferenceTypedZeroValues(t *testing.T) {
	desired := corev1ac.Service("db", "ns").WithSpec(corev1ac.ServiceSpec().
		WithPublishNotReadyAddresses(false).      // bool, omitted when false
		WithAllocateLoadBalancerNodePorts(false)) // *bool, kept when false
	var svc corev1.Service
	if err := builder.Convert(desired, &svc); err != nil {
		t.Fatal(err)
	}
	if got, err := FirstDifference(&svc, desired); err != nil || got != "" {
		t.Fatalf("FirstDifference(as created) = %q, %v; want none", got, err)
	}
	svc.Spec.AllocateLoadBalancerNodePorts = nil
	if got, _ := FirstDifference(&svc, desired); got != ".spec.allocateLoadBalancerNodePorts" {
		t.Fatalf("FirstDifference(cleared) = %q, want .spec.allocateLoadBalancerNodePorts", got)
	}
	// Untyped, the old rule holds: a zero value may be absent.
	if got, _ := FirstDifference(map[string]any{}, map[string]any{"a": false}); got != "" {
		t.Fatalf("FirstDifference(untyped) = %q, want none", got)
	}
}

func TestDigest(t *testing.T) {
	a := corev1ac.Service("db", "ns").WithLabels(map[string]string{"a": "b"})
	b := corev1ac.Service("db", "ns").WithLabels(map[string]string{"a": "c"})
	if Digest(a) == Digest(b) || Digest(a) != Digest(corev1ac.Service("db", "ns").WithLabels(map[string]string{"a": "b"})) || len(Digest(a)) != 16 {
		t.Fatalf("Digest: %s %s", Digest(a), Digest(b))
	}
}

// Digest is the first eight bytes of the SHA-256 of the apply
// configuration's JSON as json.Marshal writes it: the digest the children
// made before were stamped with, which must not change (each would be
// applied again).
func TestDigestIsOfTheMarshalledJSON(t *testing.T) {
	for _, ac := range []any{
		corev1ac.Service("db", "ns").WithLabels(map[string]string{"a": "<b>&"}).
			WithSpec(corev1ac.ServiceSpec().WithPorts(corev1ac.ServicePort().WithName("pg").WithPort(5432))),
		corev1ac.Secret("s", "ns").WithData(map[string][]byte{"k": []byte("v")}),
		corev1ac.Service("", ""),
	} {
		b, err := json.Marshal(ac)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got, want := Digest(ac), hex.EncodeToString(sum[:8]); got != want {
			t.Errorf("Digest(%s) = %s, want %s", b, got, want)
		}
	}
}
