package queue

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

// The queue is driven by a script of operations: "a" pushes a, "+a"
// prefers a, "~a" touches a, and "." pops one key.
func TestPrioritizedOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		maxRun int
		script string
		want   string
	}{
		{"without preferences it is a FIFO", 3, "a b c . . .", "a b c"},
		{"a preferred key goes first", 3, "a b +c c . . .", "c a b"},
		{"preferred keys keep their order", 3, "a +b b +c c . . .", "b c a"},
		{"a preference is for one hand-out", 3, "+a a . a b . .", "a a b"},
		{"a preference set before the push counts", 3, "a +b b . .", "b a"},
		{"touching a preferred waiting key moves it ahead", 3, "a b c +c ~c . . .", "c a b"},
		{"touching a key not preferred changes nothing", 3, "a b c ~c . . .", "a b c"},
		{"touching a key already ahead changes nothing", 3, "a +b b ~b . .", "b a"},
		{"after maxRun preferred keys one other goes", 2, "a b +c c +d d +e e . . . . .", "c d a e b"},
		{"the run is counted only while others wait", 1, "+a a +b b . . c +d d . .", "a b d c"},
		{"a key touched ahead and pushed again after is handed out once", 3,
			"a b +b ~b . b . .", "b a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewPrioritized[string](tc.maxRun)
			var got []string
			for _, op := range strings.Fields(tc.script) {
				switch {
				case op == ".":
					if q.Len() == 0 {
						t.Fatalf("pop of an empty queue in %q", tc.script)
					}
					got = append(got, q.Pop())
				case op[0] == '+':
					q.Prefer(op[1:])
				case op[0] == '~':
					q.Touch(op[1:])
				default:
					q.Push(op)
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("handed out %q, want %q", g, tc.want)
			}
			if q.Len() != 0 {
				t.Errorf("Len() = %d after the script, want 0", q.Len())
			}
		})
	}
}

// Inside a client-go work queue, a key added again while it waits is
// touched, and one added while a worker has it comes back through Push:
// both keep the preference.
func TestPrioritizedInAWorkQueue(t *testing.T) {
	order := NewPrioritized[string](10)
	wq := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: order})
	defer wq.ShutDown()

	for _, k := range []string{"new-1", "new-2", "running"} {
		wq.Add(k)
	}
	// "running"'s StatefulSet changed while it waits behind the new ones.
	order.Prefer("running")
	wq.Add("running")
	first, _ := wq.Get()
	if first != "running" {
		t.Fatalf("first Get = %q, want the preferred key", first)
	}
	// Its pod changes while a worker syncs it: it is dirty, and comes back
	// ahead once the worker is done.
	order.Prefer("running")
	wq.Add("running")
	wq.Done("running")
	var rest []string
	for wq.Len() > 0 {
		k, _ := wq.Get()
		rest = append(rest, k)
		wq.Done(k)
	}
	if want := []string{"running", "new-1", "new-2"}; !slices.Equal(rest, want) {
		t.Fatalf("then %q, want %q", rest, want)
	}
}

// A stream of preferred keys never holds another key back for longer than
// maxRun hand-outs.
func TestPrioritizedDoesNotStarveOthers(t *testing.T) {
	q := NewPrioritized[int](4)
	q.Push(-1)
	for i := 0; i < 100; i++ {
		q.Prefer(i)
		q.Push(i)
	}
	for i := 0; i < 4; i++ {
		if k := q.Pop(); k != i {
			t.Fatalf("hand-out %d = %d, want preferred %d", i, k, i)
		}
	}
	if k := q.Pop(); k != -1 {
		t.Fatalf("after 4 preferred keys the waiting one must go, got %d", k)
	}
}

// BenchmarkPrioritizedEmptied reports the heap a queue holds once it has
// held five thousand keys, a tenth of them preferred, and handed them all
// out: what a controller's queue holds in the steady state after it
// converged as many Databases.
func BenchmarkPrioritizedEmptied(b *testing.B) {
	type key struct{ Namespace, Name string }
	keys := make([]key, 5000)
	for i := range keys {
		keys[i] = key{"bench", fmt.Sprintf("orders-%d", i)}
	}
	var held float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		q := NewPrioritized[key](3)
		for i, k := range keys {
			if i%10 == 0 {
				q.Prefer(k)
			}
			q.Push(k)
		}
		for q.Len() > 0 {
			q.Pop()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(q)
		held = float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
	}
	b.ReportMetric(held, "bytes-held")
}

// Holds says whether a key waits to be handed out: from its push, preferred
// or not, to its pop.
func TestPrioritizedHolds(t *testing.T) {
	q := NewPrioritized[string](3)
	if q.Holds("a") {
		t.Fatal("an empty queue holds a")
	}
	q.Push("a")
	q.Prefer("b")
	q.Push("b")
	if !q.Holds("a") || !q.Holds("b") {
		t.Fatalf("after their pushes: holds a %v, b %v; want both", q.Holds("a"), q.Holds("b"))
	}
	if got := q.Pop(); got != "b" || q.Holds("b") || !q.Holds("a") {
		t.Fatalf("popped %q: holds b %v, a %v; want b popped, a still held", got, q.Holds("b"), q.Holds("a"))
	}
}
