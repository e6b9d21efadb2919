package ttl

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestSetForgetsWhatIsOlderThanItsTTL(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(start)
	s := NewSet[string, int](clk, time.Minute)

	if _, ok := s.Get("a"); ok {
		t.Fatal("an empty set holds a")
	}
	s.Put("a", 1)
	clk.SetTime(start.Add(time.Minute))
	if v, ok := s.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) at the TTL = %d, %v; want 1, true", v, ok)
	}
	s.Put("a", 2)
	clk.SetTime(start.Add(2 * time.Minute))
	if v, ok := s.Get("a"); !ok || v != 2 {
		t.Fatalf("Get(a) a TTL after it was put again = %d, %v; want 2, true", v, ok)
	}
	clk.SetTime(start.Add(2*time.Minute + time.Second))
	if s.Has("a") {
		t.Fatal("a is held past its TTL")
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("Len = %d after the expired entry was looked at, want 0", n)
	}

	s.Put("b", 3)
	s.Remove("b")
	if s.Has("b") {
		t.Fatal("b is held after Remove")
	}
}

// An entry nobody asks about again is swept by a later Put, at most once a
// TTL.
func TestSetSweepsOnPut(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(start)
	s := NewSet[string, struct{}](clk, time.Minute)
	s.Put("gone", struct{}{})

	clk.SetTime(start.Add(30 * time.Second))
	s.Put("a", struct{}{})
	if n := s.Len(); n != 2 {
		t.Fatalf("Len = %d before any entry expired, want 2", n)
	}

	clk.SetTime(start.Add(2*time.Minute + time.Second))
	s.Put("b", struct{}{})
	if n := s.Len(); n != 1 {
		t.Fatalf("Len = %d after a sweep, want 1 (only the new entry)", n)
	}
}

// A set only read from, as the credentials listed at a restart are, is
// swept by a Get of another key once a TTL.
func TestSetSweepsOnGet(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(start)
	s := NewSet[string, int](clk, time.Minute)
	s.Put("never-asked", 1)
	s.Put("asked", 2)

	clk.SetTime(start.Add(30 * time.Second))
	if _, ok := s.Get("other"); ok {
		t.Fatal("Get(other) found a value never put")
	}
	if n := s.Len(); n != 2 {
		t.Fatalf("Len = %d before any entry expired, want 2", n)
	}

	clk.SetTime(start.Add(time.Minute + time.Second))
	if _, ok := s.Get("other"); ok {
		t.Fatal("Get(other) found a value never put")
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("Len = %d after a Get a TTL later, want 0 (both entries expired)", n)
	}
}

// BenchmarkSetEmptied reports the heap a set holds once the entries it
// held are removed: six children of a thousand Databases created, then
// seen by the informers (as Expectations do).
func BenchmarkSetEmptied(b *testing.B) {
	type key struct{ Kind, Namespace, Name string }
	clk := testclock.NewFakePassiveClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	keys := make([]key, 6000)
	for i := range keys {
		keys[i] = key{"Secret", "bench", fmt.Sprintf("orders-%d-%d", i/6, i%6)}
	}
	var held float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := NewSet[key, struct{}](clk, time.Minute)
		for _, k := range keys {
			s.Put(k, struct{}{})
		}
		for _, k := range keys {
			s.Remove(k)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		held = float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
	}
	b.ReportMetric(held, "bytes-held")
}
