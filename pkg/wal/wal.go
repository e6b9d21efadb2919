// Package wal knows PostgreSQL's write-ahead log as an archive holds it:
// positions (LSNs), segment and timeline history file names, and, from
// the names an archive holds, which segments a restore from a base backup
// needs (and the first one missing), and which segments no kept base
// backup needs. It reads names only, never the files: it is pure.
package wal

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// LSN is a position in the write-ahead log.
type LSN uint64

// ParseLSN reads a position as PostgreSQL prints it: "16/B374D848".
func ParseLSN(s string) (LSN, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok || hi == "" || lo == "" || len(hi) > 8 || len(lo) > 8 {
		return 0, fmt.Errorf("%q is not a WAL position (such as 0/3000060)", s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%q is not a WAL position (such as 0/3000060)", s)
	}
	return LSN(h<<32 | l), nil
}

// String prints the position as PostgreSQL does.
func (l LSN) String() string { return fmt.Sprintf("%X/%X", uint64(l)>>32, uint32(l)) }

// DefaultSegmentSize is initdb's WAL segment size, the one the
// controller's servers use.
const DefaultSegmentSize = 16 << 20

// Segment is one WAL segment file: its timeline and its number, the
// position of its first byte divided by the segment size.
type Segment struct {
	Timeline uint32
	No       uint64
}

// segmentsPerID is how many segments one "log id" (the middle eight
// hexadecimal digits of a name, 4 GiB of WAL) holds.
func segmentsPerID(segSize uint64) uint64 { return 0x100000000 / segSize }

// Name is the segment's file name: 24 hexadecimal digits, the timeline,
// the log id and the segment within it.
func (s Segment) Name(segSize uint64) string {
	per := segmentsPerID(segSize)
	return fmt.Sprintf("%08X%08X%08X", s.Timeline, s.No/per, s.No%per)
}

// SegmentOf is the segment of timeline tl that holds position l.
func SegmentOf(tl uint32, l LSN, segSize uint64) Segment {
	return Segment{Timeline: tl, No: uint64(l) / segSize}
}

// Start is the position of the segment's first byte.
func (s Segment) Start(segSize uint64) LSN { return LSN(s.No * segSize) }

// ParseSegment reads a segment's file name; ok is false for any other
// name (a history file, a backup label, a partial segment).
func ParseSegment(name string, segSize uint64) (Segment, bool) {
	if len(name) != 24 || strings.ToUpper(name) != name {
		return Segment{}, false
	}
	tl, err1 := strconv.ParseUint(name[:8], 16, 32)
	id, err2 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err3 := strconv.ParseUint(name[16:], 16, 32)
	if err1 != nil || err2 != nil || err3 != nil || tl == 0 || seg >= segmentsPerID(segSize) {
		return Segment{}, false
	}
	return Segment{Timeline: uint32(tl), No: id*segmentsPerID(segSize) + seg}, true
}

// HistoryName is the file name of timeline tl's history: 00000002.history.
func HistoryName(tl uint32) string { return fmt.Sprintf("%08X.history", tl) }

// ParseHistoryName reads a history file's name.
func ParseHistoryName(name string) (uint32, bool) {
	hex, ok := strings.CutSuffix(name, ".history")
	if !ok || len(hex) != 8 || strings.ToUpper(hex) != hex {
		return 0, false
	}
	tl, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || tl < 2 {
		return 0, false
	}
	return uint32(tl), true
}

// Switch is one line of a timeline history file: the timeline Parent
// ended at Point, where its child began.
type Switch struct {
	Parent uint32
	Point  LSN
}

// History is timeline Timeline's ancestry, oldest first: the timelines
// it came from and where each ended. Timeline 1's is empty.
type History struct {
	Timeline uint32
	Switches []Switch
}

// ParseHistory reads the history file of timeline tl, as PostgreSQL
// writes it: "parentTLI<tab>switchpoint<tab>reason" lines, oldest first,
// comments (#) and blank lines ignored. The parents must grow and stay
// below tl, and the switch points must not go back.
func ParseHistory(tl uint32, text string) (History, error) {
	h := History{Timeline: tl}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return History{}, fmt.Errorf("%s line %d: %q is not \"parent<tab>switchpoint<tab>reason\"", HistoryName(tl), i+1, line)
		}
		parent, err := strconv.ParseUint(fields[0], 10, 32)
		if err != nil {
			return History{}, fmt.Errorf("%s line %d: parent timeline %q: %v", HistoryName(tl), i+1, fields[0], err)
		}
		point, err := ParseLSN(fields[1])
		if err != nil {
			return History{}, fmt.Errorf("%s line %d: %v", HistoryName(tl), i+1, err)
		}
		if n := len(h.Switches); uint32(parent) >= tl || n > 0 && (uint32(parent) <= h.Switches[n-1].Parent || point < h.Switches[n-1].Point) {
			return History{}, fmt.Errorf("%s line %d: timeline %d at %s does not follow what came before", HistoryName(tl), i+1, parent, point)
		}
		h.Switches = append(h.Switches, Switch{Parent: uint32(parent), Point: point})
	}
	return h, nil
}

// TimelineAt is the timeline that holds the WAL at position l on the
// way to h's timeline.
func (h History) TimelineAt(l LSN) uint32 {
	return h.newest(func(point LSN) bool { return point <= l })
}

// SegmentTimeline is the timeline a restore following h reads segment
// number no from. As PostgreSQL does, it reads the segment that holds a
// switch point from the new timeline, whose copy of it has the old
// timeline's WAL up to the switch.
func (h History) SegmentTimeline(no, segSize uint64) uint32 {
	return h.newest(func(point LSN) bool { return uint64(point)/segSize <= no })
}

// newest is the newest timeline of h whose switch point has been reached.
func (h History) newest(reached func(point LSN) bool) uint32 {
	tl := h.Timeline
	for i := len(h.Switches) - 1; i >= 0; i-- {
		if reached(h.Switches[i].Point) {
			return tl
		}
		tl = h.Switches[i].Parent
	}
	return tl
}

// Follows says whether timeline tl is h's timeline or one of its ancestors.
func (h History) Follows(tl uint32) bool {
	if tl == h.Timeline {
		return true
	}
	for _, s := range h.Switches {
		if s.Parent == tl {
			return true
		}
	}
	return false
}

// Archive is what an archive holds, by file name.
type Archive struct {
	segSize  uint64
	segments map[Segment]bool
}

// NewArchive reads the names an archive holds (file names, not paths);
// names of other files are ignored.
func NewArchive(names []string, segSize uint64) Archive {
	a := Archive{segSize: segSize, segments: map[Segment]bool{}}
	for _, n := range names {
		if s, ok := ParseSegment(n, segSize); ok {
			a.segments[s] = true
		}
	}
	return a
}

// MissingError names the first segment a restore needs that the archive
// does not hold.
type MissingError struct {
	Segment string
	// Next is the first later segment the archive holds on the way, or
	// "" when it holds none.
	Next string
}

func (e *MissingError) Error() string {
	if e.Next == "" {
		return fmt.Sprintf("the WAL archive holds no segment from %s on: a restore from this base backup has none of the WAL it needs", e.Segment)
	}
	return fmt.Sprintf("the WAL archive lacks segment %s (it holds %s, which comes later): a restore cannot pass it", e.Segment, e.Next)
}

// Chain checks the segments a restore along h needs from the segment
// from, inclusive, up to the last segment the archive holds on h's way
// (the latest point it can reach), and returns that last segment. When a
// segment is missing before a later one the archive holds, or the archive
// holds none from from on, the error is a *MissingError naming the first
// missing. The caller checks that last reaches the base backup's stop.
func (a Archive) Chain(h History, from uint64) (last Segment, err error) {
	var end uint64
	found := false
	for s := range a.segments {
		if s.No >= from && h.SegmentTimeline(s.No, a.segSize) == s.Timeline && (!found || s.No > end) {
			end, found = s.No, true
		}
	}
	if !found {
		return Segment{}, &MissingError{Segment: Segment{Timeline: h.SegmentTimeline(from, a.segSize), No: from}.Name(a.segSize)}
	}
	for no := from; no <= end; no++ {
		s := Segment{Timeline: h.SegmentTimeline(no, a.segSize), No: no}
		if !a.segments[s] {
			next := no + 1
			for !a.segments[Segment{Timeline: h.SegmentTimeline(next, a.segSize), No: next}] {
				next++
			}
			return Segment{}, &MissingError{Segment: s.Name(a.segSize), Next: Segment{Timeline: h.SegmentTimeline(next, a.segSize), No: next}.Name(a.segSize)}
		}
	}
	return Segment{Timeline: h.SegmentTimeline(end, a.segSize), No: end}, nil
}

// Prunable is, of the names an archive holds, the segments (whole,
// .partial, or a .backup label) that no kept base backup needs: those
// numbered below the oldest kept base backup's first segment, on any
// timeline. History files are always kept. With no kept base backup,
// nothing is prunable: WAL is never pruned before a base backup that
// makes it useless has completed.
func Prunable(names []string, keptFirst []uint64, segSize uint64) []string {
	if len(keptFirst) == 0 {
		return nil
	}
	oldest := keptFirst[0]
	for _, f := range keptFirst[1:] {
		oldest = min(oldest, f)
	}
	var out []string
	for _, n := range names {
		base := n
		if len(n) > 24 {
			base = n[:24]
			if rest := n[24:]; rest != ".partial" && !isBackupLabelSuffix(rest) {
				continue
			}
		}
		if s, ok := ParseSegment(base, segSize); ok && s.No < oldest {
			out = append(out, n)
		}
	}
	return out
}

// isBackupLabelSuffix is whether rest ends a backup history file's name
// after its segment: ".00000028.backup", the offset of the backup's start.
func isBackupLabelSuffix(rest string) bool {
	hex, ok := strings.CutSuffix(rest, ".backup")
	if !ok || len(hex) != 9 || hex[0] != '.' {
		return false
	}
	_, err := strconv.ParseUint(hex[1:], 16, 32)
	return err == nil
}

// Base is a completed base backup as a restore needs to know it: its
// name, the timeline it was taken on, where its WAL begins and where the
// copy became consistent (pg_backup_stop's position), and when.
type Base struct {
	Name     string
	Timeline uint32
	Start    LSN
	Stop     LSN
	StopTime time.Time
}

// Target is the point a restore recovers to: Latest (the end of the
// archive), or a time, or a position. Set one of Time and LSN, or neither
// for Latest.
type Target struct {
	Time *time.Time
	LSN  *LSN
}

func (t Target) String() string {
	switch {
	case t.Time != nil:
		return t.Time.UTC().Format(time.RFC3339Nano)
	case t.LSN != nil:
		return t.LSN.String()
	default:
		return "the latest point"
	}
}
