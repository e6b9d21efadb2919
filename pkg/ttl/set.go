// Package ttl holds what a controller remembers of its own writes and
// decisions for a bounded time: until the informers show them, or until
// they are too old to trust.
package ttl

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Set holds values by key for at most a TTL. Entries nobody asks about
// again (their object went away) are swept by a later Put or Get, at most
// once a TTL, so a set in use never outgrows what was put in two TTLs.
type Set[K comparable, V any] struct {
	clock clock.PassiveClock
	ttl   time.Duration
	// epoch is when the set was made: an entry holds when it was put
	// as the time since, 8 bytes where a time.Time takes 24 (a set may
	// hold several entries per Database).
	epoch     time.Time
	mu        sync.Mutex
	entries   map[K]entry[V]
	lastSweep time.Time
}

type entry[V any] struct {
	at    time.Duration // since epoch
	value V
}

// NewSet returns an empty set whose entries live for ttl on clk.
func NewSet[K comparable, V any](clk clock.PassiveClock, ttl time.Duration) *Set[K, V] {
	now := clk.Now()
	return &Set[K, V]{clock: clk, ttl: ttl, epoch: now, entries: map[K]entry[V]{}, lastSweep: now}
}

// expired reports whether e is older than the TTL at now.
func (s *Set[K, V]) expired(e entry[V], now time.Time) bool {
	return now.Sub(s.epoch)-e.at > s.ttl
}

// Put holds v for k from now.
func (s *Set[K, V]) Put(k K, v V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.entries[k] = entry[V]{at: now.Sub(s.epoch), value: v}
	s.sweep(now)
}

// sweep forgets every expired entry, once a TTL. s.mu is held.
func (s *Set[K, V]) sweep(now time.Time) {
	if now.Sub(s.lastSweep) <= s.ttl {
		return
	}
	for key, e := range s.entries {
		if s.expired(e, now) {
			delete(s.entries, key)
		}
	}
	s.lastSweep = now
	s.release()
}

// release gives the memory of an emptied set back: a Go map keeps room for
// the most entries it ever held, and some sets are full only for a while
// (the children created while a thousand Databases are, until the
// informers show them). s.mu is held.
func (s *Set[K, V]) release() {
	if len(s.entries) == 0 {
		s.entries = map[K]entry[V]{}
	}
}

// Get returns the value of k, unless it is older than the TTL.
func (s *Set[K, V]) Get(k K) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.sweep(now)
	e, ok := s.entries[k]
	if ok && s.expired(e, now) {
		delete(s.entries, k)
		s.release()
		var zero V
		return zero, false
	}
	return e.value, ok
}

// Has reports whether k is held and not older than the TTL.
func (s *Set[K, V]) Has(k K) bool {
	_, ok := s.Get(k)
	return ok
}

// Remove forgets k.
func (s *Set[K, V]) Remove(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[k]; ok {
		delete(s.entries, k)
		s.release()
	}
}

// Len is the number of entries held, current or expired but not swept.
func (s *Set[K, V]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
