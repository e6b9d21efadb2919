package cached

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// A UID reads back as it was given, whether held as a UUID's bytes or as
// its text.
func TestUIDReadsAsGiven(t *testing.T) {
	for _, tc := range []struct {
		uid     types.UID
		compact bool
	}{
		{"", false},
		{"uid", false},
		{"0f6a37b2-5c1e-4d8a-9b3f-7e2d1c4a5b69", true},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{"00000000-0000-0000-0000-000000000001", true},
		{"00000000-0000-0000-0000-000000000000", false},
		{"0F6A37B2-5C1E-4D8A-9B3F-7E2D1C4A5B69", false},
		{"0f6a37b2-5c1e-4d8a-9b3f-7e2d1c4a5b6", false},
		{"0f6a37b2-5c1e-4d8a-9b3f-7e2d1c4a5b690", false},
		{"0f6a37b2x5c1e-4d8a-9b3f-7e2d1c4a5b69", false},
		{"0f6a37b2-5c1e-4d8a-9b3f-7e2d1c4a5b6g", false},
	} {
		u := newUID(tc.uid)
		if got := u.text(); got != tc.uid {
			t.Errorf("newUID(%q).text() = %q", tc.uid, got)
		}
		if compact := u.other == ""; compact != (tc.compact || tc.uid == "") {
			t.Errorf("newUID(%q) held as bytes: %v, want %v", tc.uid, compact, tc.compact)
		}
	}
}
