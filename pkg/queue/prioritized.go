// Package queue holds the order in which the controller's work queue hands
// out Databases to its workers.
package queue

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Prioritized is the storage of a client-go work queue (a workqueue.Queue)
// that hands out first the keys marked with Prefer, in the order they were
// added, and then the others, in theirs.
//
// The controller prefers a Database when one of its children changed. Such
// a sync is follow-up work on a Database that already runs: most often it
// writes one status or nothing at all. A new Database's first sync creates
// its four children, each through the rate-limited client. In a plain FIFO
// a burst of new Databases puts every follow-up behind all of them, and a
// Database whose server became ready waits for the others to be created
// before it is reported Running.
//
// So that a stream of follow-ups cannot hold the other keys back for ever,
// at most maxRun preferred keys are handed out in a row while another key
// waits; then one of those is.
type Prioritized[T comparable] struct {
	mu sync.Mutex
	// preferred holds the keys marked by Prefer and not handed out since.
	preferred map[T]struct{}
	// first and rest hold the keys in the order they came; a key may also
	// have a stale entry in rest, left there when Touch moved it to first.
	// in says where each key held lives.
	first, rest fifo[T]
	in          map[T]bool // true: first
	nFirst      int
	run, maxRun int
}

var _ workqueue.Queue[string] = &Prioritized[string]{}

// NewPrioritized returns an empty queue that hands out at most maxRun
// preferred keys in a row while another waits (at least 1).
func NewPrioritized[T comparable](maxRun int) *Prioritized[T] {
	return &Prioritized[T]{preferred: map[T]struct{}{}, in: map[T]bool{}, maxRun: max(maxRun, 1)}
}

// Prefer marks key to be handed out before the keys that are not marked,
// from its next Add (or now, if it waits in the queue) until it is handed
// out. Call it before the work queue's Add.
func (q *Prioritized[T]) Prefer(key T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.preferred[key] = struct{}{}
}

// Push adds a key that the queue does not hold. The work queue calls it.
func (q *Prioritized[T]) Push(key T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.preferred[key]; ok {
		q.first.push(key)
		q.in[key] = true
		q.nFirst++
		return
	}
	q.rest.push(key)
	q.in[key] = false
}

// Touch is called by the work queue when a key it holds is added again: a
// key preferred since it was pushed moves ahead.
func (q *Prioritized[T]) Touch(key T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.preferred[key]; !ok {
		return
	}
	if inFirst, held := q.in[key]; held && !inFirst {
		q.first.push(key)
		q.in[key] = true
		q.nFirst++
	}
}

// Holds reports whether key waits in the queue to be handed out.
func (q *Prioritized[T]) Holds(key T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, held := q.in[key]
	return held
}

// Len is the number of keys held.
func (q *Prioritized[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.in)
}

// Pop hands out the next key. The work queue calls it only when Len > 0.
func (q *Prioritized[T]) Pop() T {
	q.mu.Lock()
	defer q.mu.Unlock()
	others := len(q.in) - q.nFirst
	var key T
	switch {
	case q.nFirst > 0 && (others == 0 || q.run < q.maxRun):
		key = q.popFrom(&q.first, true)
		q.nFirst--
		if others > 0 {
			q.run++
		} else {
			q.run = 0
		}
	default:
		key = q.popFrom(&q.rest, false)
		q.run = 0
	}
	delete(q.in, key)
	delete(q.preferred, key)
	if len(q.in) == 0 {
		// A Go map keeps room for the most keys it held: a queue that
		// held every Database while they were created gives it back.
		q.in = map[T]bool{}
	}
	if len(q.preferred) == 0 {
		q.preferred = map[T]struct{}{}
	}
	return key
}

// popFrom pops f until it finds a key that still lives there.
func (q *Prioritized[T]) popFrom(f *fifo[T], first bool) T {
	for {
		key := f.pop()
		if inFirst, held := q.in[key]; held && inFirst == first {
			return key
		}
	}
}

// fifo is a slice used as a first-in first-out queue.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) push(v T) { f.items = append(f.items, v) }

func (f *fifo[T]) pop() T {
	var zero T
	v := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	switch {
	case f.head == len(f.items) && cap(f.items) > 64:
		f.items, f.head = nil, 0
	case f.head == len(f.items):
		f.items, f.head = f.items[:0], 0
	case f.head > 64 && f.head*2 > len(f.items):
		// Let go of the consumed front.
		f.items = append(f.items[:0:0], f.items[f.head:]...)
		f.head = 0
	}
	return v
}
