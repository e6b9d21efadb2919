package ha

import (
	"fmt"
	"testing"
)

// A replica diverged when it applied changes of an earlier timeline past
// where the primary's history left it; not when it stopped short of that
// point, is on the primary's timeline, or the engine has no timelines.
func TestDiverged(t *testing.T) {
	terms := Terms{Log: "WAL", Position: func(n uint64) string { return fmt.Sprintf("0/%X", n) }}
	primary := Facts{Timeline: 3, TimelineEnds: map[uint32]uint64{1: 0x5000000, 2: 0x7000000}}
	for _, tt := range []struct {
		name             string
		primary, replica Facts
		want             string
	}{
		{"past the end of its timeline", primary, Facts{Timeline: 2, Applied: 0x7000001},
			"it applied WAL of timeline 2 up to 0/7000001, past 0/7000000 where the primary's history left that timeline: it diverged"},
		{"an older timeline, past its end", primary, Facts{Timeline: 1, Applied: 0x6000000},
			"it applied WAL of timeline 1 up to 0/6000000, past 0/5000000 where the primary's history left that timeline: it diverged"},
		{"at the end of its timeline: it follows", primary, Facts{Timeline: 2, Applied: 0x7000000}, ""},
		{"short of the end: it follows", primary, Facts{Timeline: 1, Applied: 0x4000000}, ""},
		{"on the primary's timeline", primary, Facts{Timeline: 3, Applied: 0x9000000}, ""},
		{"a timeline the primary's history does not have", Facts{Timeline: 3, TimelineEnds: map[uint32]uint64{1: 0x5000000}}, Facts{Timeline: 2, Applied: 0x6000000},
			"it is on timeline 2, which is not in the history of the primary's timeline 3"},
		{"no timelines (MySQL)", Facts{Written: 10}, Facts{Applied: 20}, ""},
		{"the replica's timeline unknown", primary, Facts{Applied: 0x9000000}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diverged(tt.primary, tt.replica, terms); got != tt.want {
				t.Errorf("Diverged = %q, want %q", got, tt.want)
			}
		})
	}
}
