package reconcile

import (
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
type Expectations struct {
	created *ttl.Set[ChildKey, struct{}]
}

// NewExpectations returns empty expectations whose entries live for lifetime.
func NewExpectations(clk clock.PassiveClock, lifetime time.Duration) *Expectations {
	return &Expectations{created: ttl.NewSet[ChildKey, struct{}](clk, lifetime)}
}

// Created records that this process created k.
func (e *Expectations) Created(k ChildKey) { e.created.Put(k, struct{}{}) }

// Observed records that the cache shows k: nothing is pending for it.
func (e *Expectations) Observed(k ChildKey) { e.created.Remove(k) }

// Pending reports whether k was created by this process within the TTL and
// not observed since.
func (e *Expectations) Pending(k ChildKey) bool {
	_, ok := e.created.Get(k)
	return ok
}

// Len is the number of entries held, pending or expired but not swept.
func (e *Expectations) Len() int { return e.created.Len() }
