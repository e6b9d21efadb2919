package backup

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// createdTTL bounds how long a create of this process is trusted over a
// cache that does not show it.
const createdTTL = 5 * time.Minute

// createdSet remembers the objects this process created that the informers
// may not show yet, so that a lagging cache is not mistaken for an object
// deleted or never made.
type createdSet struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	at    map[string]time.Time
}

func newCreatedSet(c clock.PassiveClock) *createdSet {
	return &createdSet{clock: c, at: map[string]time.Time{}}
}

func (s *createdSet) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[key] = s.clock.Now()
}

func (s *createdSet) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, key)
}

func (s *createdSet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[key]
	if ok && s.clock.Since(t) > createdTTL {
		delete(s.at, key)
		return false
	}
	return ok
}
