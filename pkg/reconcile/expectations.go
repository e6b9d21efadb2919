package reconcile

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTTL bounds how long a create this process made waits to show
// up in the informer cache before the controller stops trusting it.
const ExpectationsTTL = time.Minute

// ChildKey names one child object.
type ChildKey struct {
	Kind, Namespace, Name string
}

// Expectations remembers the children this process created until the
// informers show them, for at most a TTL, as kube-controller-manager's
// controllers expect their creates. Without it, a cache that lags behind a
// create looks like a missing child (and a second create), or like a
// foreign object.
type Expectations struct {
	created *ttlSet[ChildKey, struct{}]
}

// NewExpectations returns empty expectations whose entries live for ttl.
func NewExpectations(clk clock.PassiveClock, ttl time.Duration) *Expectations {
	return &Expectations{created: newTTLSet[ChildKey, struct{}](clk, ttl)}
}

// Created records that this process created k.
func (e *Expectations) Created(k ChildKey) { e.created.put(k, struct{}{}) }

// Observed records that the cache shows k: nothing is pending for it.
func (e *Expectations) Observed(k ChildKey) { e.created.remove(k) }

// Pending reports whether k was created by this process within the TTL and
// not observed since.
func (e *Expectations) Pending(k ChildKey) bool {
	_, ok := e.created.get(k)
	return ok
}

// Len is the number of entries held, pending or expired but not swept.
func (e *Expectations) Len() int { return e.created.len() }

// ttlSet holds values by key for at most a TTL. Entries nobody asks about
// again (their Database went away) are swept by a later put, at most once
// a TTL.
type ttlSet[K comparable, V any] struct {
	clock     clock.PassiveClock
	ttl       time.Duration
	mu        sync.Mutex
	entries   map[K]ttlEntry[V]
	lastSweep time.Time
}

type ttlEntry[V any] struct {
	at    time.Time
	value V
}

func newTTLSet[K comparable, V any](clk clock.PassiveClock, ttl time.Duration) *ttlSet[K, V] {
	return &ttlSet[K, V]{clock: clk, ttl: ttl, entries: map[K]ttlEntry[V]{}, lastSweep: clk.Now()}
}

func (s *ttlSet[K, V]) put(k K, v V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.entries[k] = ttlEntry[V]{at: now, value: v}
	if now.Sub(s.lastSweep) > s.ttl {
		for key, e := range s.entries {
			if now.Sub(e.at) > s.ttl {
				delete(s.entries, key)
			}
		}
		s.lastSweep = now
	}
}

// get returns the value of k, unless it is older than the TTL.
func (s *ttlSet[K, V]) get(k K) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[k]
	if ok && s.clock.Since(e.at) > s.ttl {
		delete(s.entries, k)
		var zero V
		return zero, false
	}
	return e.value, ok
}

func (s *ttlSet[K, V]) remove(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, k)
}

func (s *ttlSet[K, V]) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
