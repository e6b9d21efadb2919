package wal

import (
	"errors"
	"reflect"
	"testing"
)

const seg = DefaultSegmentSize

func TestParseLSN(t *testing.T) {
	for in, want := range map[string]LSN{"0/3000060": 0x3000060, "16/B374D848": 0x16B374D848, "FFFFFFFF/FFFFFFFF": 1<<64 - 1, "0/0": 0} {
		got, err := ParseLSN(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseLSN(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3000060", "x/1", "1/", "/1", "123456789/0", "0/123456789", "0/-1"} {
		if got, err := ParseLSN(in); err == nil {
			t.Errorf("ParseLSN(%q) = %s, want an error", in, got)
		}
	}
}

func TestSegmentNames(t *testing.T) {
	for name, want := range map[string]Segment{
		"000000010000000000000001": {1, 1},
		"00000002000000010000003F": {2, 256 + 63},
		"0000000A00000000000000FF": {10, 255},
	} {
		got, ok := ParseSegment(name, seg)
		if !ok || got != want || got.Name(seg) != name {
			t.Errorf("ParseSegment(%q) = %+v, %v (named %s); want %+v", name, got, ok, got.Name(seg), want)
		}
	}
	for _, name := range []string{
		"00000001000000000000001", "0000000100000000000000011", "00000001000000000000000a",
		"000000000000000000000001", "000000010000000000000100", "00000002.history",
		"000000010000000000000005.partial", "00000001000000000000000G",
	} {
		if got, ok := ParseSegment(name, seg); ok {
			t.Errorf("ParseSegment(%q) = %+v, want no segment", name, got)
		}
	}
	if got := SegmentOf(3, 0x16B374D848, seg); got.Name(seg) != "0000000300000016000000B3" || got.Start(seg) != 0x16B3000000 {
		t.Errorf("SegmentOf(3, 16/B374D848) = %s starting at %s", got.Name(seg), got.Start(seg))
	}
	// 1 GiB segments (initdb --wal-segsize=1024): four per log id.
	if got, ok := ParseSegment("000000010000000200000003", 1<<30); !ok || got.No != 11 {
		t.Errorf("a 1 GiB segment: %+v, %v; want number 11", got, ok)
	}
	if tl, ok := ParseHistoryName(HistoryName(12)); !ok || tl != 12 || HistoryName(12) != "0000000C.history" {
		t.Errorf("history name of 12: %s, read back %d %v", HistoryName(12), tl, ok)
	}
	for _, name := range []string{"00000001.history", "0000000c.history", "00000002.historyx", "2.history"} {
		if _, ok := ParseHistoryName(name); ok {
			t.Errorf("ParseHistoryName(%q) is a history file, want not", name)
		}
	}
}

// Timeline 3's history: timeline 1 ended at 0/5000060 (a failover mid
// segment 5), timeline 2 at 0/9000000 (at the start of segment 9).
const history3 = "1\t0/5000060\tno recovery target specified\n\n2\t0/9000000\tno recovery target specified\n"

func TestHistory(t *testing.T) {
	h, err := ParseHistory(3, history3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Switch{{1, 0x5000060}, {2, 0x9000000}}; !reflect.DeepEqual(h.Switches, want) {
		t.Errorf("switches %+v, want %+v", h.Switches, want)
	}
	for l, want := range map[LSN]uint32{0: 1, 0x500005F: 1, 0x5000060: 2, 0x8FFFFFF: 2, 0x9000000: 3, 0x20000000: 3} {
		if got := h.TimelineAt(l); got != want {
			t.Errorf("TimelineAt(%s) = %d, want %d", l, got, want)
		}
	}
	// Segment 5 holds the switch from 1 to 2: it is read from timeline 2.
	for no, want := range map[uint64]uint32{1: 1, 4: 1, 5: 2, 8: 2, 9: 3, 40: 3} {
		if got := h.SegmentTimeline(no, seg); got != want {
			t.Errorf("SegmentTimeline(%d) = %d, want %d", no, got, want)
		}
	}
	for tl, want := range map[uint32]bool{1: true, 2: true, 3: true, 4: false} {
		if h.Follows(tl) != want {
			t.Errorf("Follows(%d) = %v", tl, !want)
		}
	}
	if one, err := ParseHistory(1, ""); err != nil || one.SegmentTimeline(7, seg) != 1 || one.TimelineAt(0x7000000) != 1 {
		t.Errorf("timeline 1: %+v, %v", one, err)
	}
	for name, text := range map[string]string{
		"no switch point":        "1\n",
		"a parent not a number":  "one\t0/5000060\n",
		"a bad point":            "1\t5000060\n",
		"a parent not below":     "3\t0/5000060\n",
		"parents not increasing": "2\t0/5000060\n1\t0/6000000\n",
		"points going back":      "1\t0/5000060\n2\t0/4000000\n",
	} {
		if _, err := ParseHistory(3, text); err == nil {
			t.Errorf("%s: ParseHistory(3, %q) is accepted, want an error", name, text)
		}
	}
}

func TestChain(t *testing.T) {
	h3, err := ParseHistory(3, history3)
	if err != nil {
		t.Fatal(err)
	}
	h1, _ := ParseHistory(1, "")
	// Timeline 1 up to its partial last segment, 2 from that segment on,
	// 3 from segment 9; timeline 1 went on past its end (an old primary
	// that kept writing) and a stray file: both ignored on h3's way.
	full := []string{
		"000000010000000000000001", "000000010000000000000002", "000000010000000000000003",
		"000000010000000000000003.00000028.backup", "000000010000000000000004",
		"000000010000000000000005.partial", "000000010000000000000006", "00000002.history",
		"000000020000000000000005", "000000020000000000000006", "000000020000000000000007",
		"000000020000000000000008", "00000003.history", "000000030000000000000009",
		"00000003000000000000000A", "notes.txt",
	}
	without := func(name string) []string {
		var out []string
		for _, n := range full {
			if n != name {
				out = append(out, n)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		names    []string
		h        History
		from     uint64
		wantLast string
		wantErr  *MissingError
	}{
		{"across two switches to the end", full, h3, 2, "00000003000000000000000A", nil},
		// Timeline 1's segment 5 is there as a .partial only, which a
		// restore never reads: its segment 6 is beyond a gap.
		{"timeline 1 alone: its last segment partial", full, h1, 1, "",
			&MissingError{Segment: "000000010000000000000005", Next: "000000010000000000000006"}},
		{"timeline 1 alone, to its own end", full[:5], h1, 1, "000000010000000000000004", nil},
		{"the segment of a switch missing", without("000000020000000000000005"), h3, 2, "",
			&MissingError{Segment: "000000020000000000000005", Next: "000000020000000000000006"}},
		{"the first segment missing", without("000000010000000000000002"), h3, 2, "",
			&MissingError{Segment: "000000010000000000000002", Next: "000000010000000000000003"}},
		{"two missing: the first named", append(without("000000020000000000000007")[:10], full[12:]...), h3, 2, "",
			&MissingError{Segment: "000000020000000000000007", Next: "000000030000000000000009"}},
		{"the newest missing is the end, not a gap", without("00000003000000000000000A"), h3, 2, "000000030000000000000009", nil},
		{"nothing from the start on", full[:3], h3, 4, "", &MissingError{Segment: "000000010000000000000004"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last, err := NewArchive(tc.names, seg).Chain(tc.h, tc.from)
			var missing *MissingError
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Chain: %v, want it to reach %s", err, tc.wantLast)
			case tc.wantErr == nil && last.Name(seg) != tc.wantLast:
				t.Errorf("Chain reaches %s, want %s", last.Name(seg), tc.wantLast)
			case tc.wantErr != nil && (!errors.As(err, &missing) || *missing != *tc.wantErr):
				t.Errorf("Chain: %v (reaching %s), want %v", err, last.Name(seg), tc.wantErr)
			}
		})
	}
}

func TestPrunable(t *testing.T) {
	names := []string{
		"00000002.history", "000000010000000000000003", "000000010000000000000003.00000028.backup",
		"000000010000000000000004", "000000010000000000000005.partial", "000000020000000000000004",
		"000000020000000000000005", "000000020000000000000006", "000000010000000000000004.note",
		"000000010000000000000004.0000002.backup",
	}
	// The oldest kept base backup starts in segment 5 (on any timeline).
	want := []string{
		"000000010000000000000003", "000000010000000000000003.00000028.backup",
		"000000010000000000000004", "000000020000000000000004",
	}
	if got := Prunable(names, []uint64{9, 5, 7}, seg); !reflect.DeepEqual(got, want) {
		t.Errorf("Prunable = %q, want %q", got, want)
	}
	if got := Prunable(names, nil, seg); got != nil {
		t.Errorf("Prunable with no kept base backup = %q, want nothing", got)
	}
}
