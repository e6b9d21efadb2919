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
// foreign object. Entries whose Database went away before its next sync
// are swept out at most once a TTL.
type Expectations struct {
	clock     clock.PassiveClock
	ttl       time.Duration
	mu        sync.Mutex
	at        map[ChildKey]time.Time
	lastSweep time.Time
}

// NewExpectations returns empty expectations whose entries live for ttl.
func NewExpectations(clk clock.PassiveClock, ttl time.Duration) *Expectations {
	return &Expectations{clock: clk, ttl: ttl, at: map[ChildKey]time.Time{}, lastSweep: clk.Now()}
}

// Created records that this process created k.
func (e *Expectations) Created(k ChildKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	e.at[k] = now
	if now.Sub(e.lastSweep) > e.ttl {
		for key, t := range e.at {
			if now.Sub(t) > e.ttl {
				delete(e.at, key)
			}
		}
		e.lastSweep = now
	}
}

// Observed records that the cache shows k: nothing is pending for it.
func (e *Expectations) Observed(k ChildKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.at, k)
}

// Pending reports whether k was created by this process within the TTL and
// not observed since.
func (e *Expectations) Pending(k ChildKey) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.at[k]
	if ok && e.clock.Since(t) > e.ttl {
		delete(e.at, k)
		return false
	}
	return ok
}

// Len is the number of entries held, pending or expired but not swept.
func (e *Expectations) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.at)
}
