package mysqlsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// gtidSet is a set of MySQL global transaction identifiers, as
// @@gtid_executed and Retrieved_Gtid_Set print it:
// "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,<uuid>:<tag>:1-3". Its
// key is the source's uuid, with the tag after a colon when there is one.
type gtidSet map[string][]interval

// interval is a range of transaction numbers, both ends included.
type interval struct{ first, last uint64 }

// parseGTIDSet reads s. Whitespace (the server puts a newline after each
// comma) is ignored.
func parseGTIDSet(s string) (gtidSet, error) {
	set := gtidSet{}
	s = strings.Join(strings.Fields(s), "")
	if s == "" {
		return set, nil
	}
	for _, part := range strings.Split(s, ",") {
		fields := strings.Split(part, ":")
		if len(fields) < 2 || fields[0] == "" {
			return nil, fmt.Errorf("GTID set %q: %q has no transactions", s, part)
		}
		key := strings.ToLower(fields[0])
		for _, f := range fields[1:] {
			first, last, isRange := strings.Cut(f, "-")
			a, err := strconv.ParseUint(first, 10, 64)
			if err != nil {
				if strings.Contains(f, "-") || f == "" {
					return nil, fmt.Errorf("GTID set %q: bad interval %q", s, f)
				}
				// A tag (MySQL 8.3 and later): the intervals after it are
				// the tag's.
				key = strings.ToLower(fields[0]) + ":" + f
				continue
			}
			b := a
			if isRange {
				if b, err = strconv.ParseUint(last, 10, 64); err != nil || b < a {
					return nil, fmt.Errorf("GTID set %q: bad interval %q", s, f)
				}
			}
			set[key] = append(set[key], interval{a, b})
		}
	}
	for k := range set {
		set[k] = merge(set[k])
	}
	return set, nil
}

// merge sorts intervals and joins those that overlap or touch.
func merge(in []interval) []interval {
	in = slices.Clone(in)
	slices.SortFunc(in, func(a, b interval) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	out := in[:0]
	for _, iv := range in {
		if n := len(out); n > 0 && iv.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, iv.last)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// union is every transaction of s and of o.
func (s gtidSet) union(o gtidSet) gtidSet {
	u := gtidSet{}
	for _, set := range []gtidSet{s, o} {
		for k, ivs := range set {
			u[k] = append(u[k], ivs...)
		}
	}
	for k := range u {
		u[k] = merge(u[k])
	}
	return u
}

// count is how many transactions s holds. In one Database's history, which
// no server has diverged from, a server that holds more has applied more:
// it is the position package ha compares.
func (s gtidSet) count() uint64 {
	var n uint64
	for _, ivs := range s {
		for _, iv := range ivs {
			n += iv.last - iv.first + 1
		}
	}
	return n
}
