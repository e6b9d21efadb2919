package ha

import "fmt"

// Diverged is why replica, which does not stream from primary, cannot
// until it is rewound: it applied changes of an earlier timeline past the
// point where the primary's history left that timeline (a promotion that
// it did not follow, after it had received more of the old primary's
// changes than the promoted replica had). Its server retries for ever and
// never says so over SQL. "" when it did not diverge, or the engine keeps
// no timelines.
func Diverged(primary, replica Facts, t Terms) string {
	if primary.Timeline == 0 || replica.Timeline == 0 || replica.Timeline >= primary.Timeline {
		return ""
	}
	end, ok := primary.TimelineEnds[replica.Timeline]
	if !ok {
		return fmt.Sprintf("it is on timeline %d, which is not in the history of the primary's timeline %d", replica.Timeline, primary.Timeline)
	}
	if replica.Applied <= end {
		return ""
	}
	return fmt.Sprintf("it applied %s of timeline %d up to %s, past %s where the primary's history left that timeline: it diverged",
		t.log(), replica.Timeline, t.position(replica.Applied), t.position(end))
}
