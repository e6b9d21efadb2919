package reconcile

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dbcontroller/database-controller/pkg/ttl"
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
//
// It also tells the informer's add of a child that is only the echo of
// this process's create (Echo), which no pass needs: the pass that created
// it went on with the object the create returned. A pass that finds a
// pending child missing from the cache waits for that add, so a pass marks
// its look (Look) before it reads the cache: either the add came before
// the look, and the read finds the child, or it comes after, and Echo sees
// the look and lets it through.
type Expectations struct {
	mu sync.Mutex
	// created holds the resourceVersion each create returned.
	created *ttl.Set[ChildKey, string]
	// looked holds the pending children a pass looked for.
	looked *ttl.Set[ChildKey, struct{}]
}

// NewExpectations returns empty expectations whose entries live for lifetime.
func NewExpectations(clk clock.PassiveClock, lifetime time.Duration) *Expectations {
	return &Expectations{
		created: ttl.NewSet[ChildKey, string](clk, lifetime),
		looked:  ttl.NewSet[ChildKey, struct{}](clk, lifetime),
	}
}

// Created records that this process created k, which the API server
// returned at resourceVersion.
func (e *Expectations) Created(k ChildKey, resourceVersion string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.created.Put(k, resourceVersion)
	e.looked.Remove(k)
}

// Observed records that the cache shows k: nothing is pending for it.
func (e *Expectations) Observed(k ChildKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.created.Remove(k)
	e.looked.Remove(k)
}

// Pending reports whether k was created by this process within the TTL and
// not observed since.
func (e *Expectations) Pending(k ChildKey) bool {
	return e.created.Has(k)
}

// Look records that a pass is about to read k from the cache, and will
// wait for its add if it is pending and missing. A pass calls it before
// the read.
func (e *Expectations) Look(k ChildKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.created.Has(k) {
		e.looked.Put(k, struct{}{})
	}
}

// Echo reports whether the informer's add of k at resourceVersion is the
// echo of this process's create, unchanged since and looked for by no
// pass: its Database need not be synced for it. k is then observed. An
// add that is not an echo, or that a pass may wait for, is left pending
// for the pass it brings.
func (e *Expectations) Echo(k ChildKey, resourceVersion string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	created, ok := e.created.Get(k)
	if !ok || created != resourceVersion || resourceVersion == "" {
		return false
	}
	if e.looked.Has(k) {
		e.looked.Remove(k)
		return false
	}
	e.created.Remove(k)
	return true
}

// Len is the number of entries held, pending or expired but not swept.
func (e *Expectations) Len() int { return e.created.Len() + e.looked.Len() }

// Echo reports whether the informer's add of the child k at
// resourceVersion is only the echo of this process's create, which no pass
// needs (Expectations.Echo).
func (r *Reconciler) Echo(k ChildKey, resourceVersion string) bool {
	return r.expectations.Echo(k, resourceVersion)
}
