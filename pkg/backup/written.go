package backup

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// writtenSet remembers the resourceVersion of each DatabaseBackup this
// process last wrote (its status, its finalizers) until the cache shows
// it, for createdTTL at most. A pass on a cache behind such a write would
// decide from what the write replaced: start a backup again, write its
// status over an older version, which the API server refuses.
type writtenSet struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	by    map[string]writtenVersion
}

type writtenVersion struct {
	resourceVersion string
	at              time.Time
}

func newWrittenSet(c clock.PassiveClock) *writtenSet {
	return &writtenSet{clock: c, by: map[string]writtenVersion{}}
}

// add remembers b as a write returned it; it forgets what is too old.
func (s *writtenSet) add(b *dbv1alpha1.DatabaseBackup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for k, w := range s.by {
		if now.Sub(w.at) > createdTTL {
			delete(s.by, k)
		}
	}
	s.by[b.Namespace+"/"+b.Name] = writtenVersion{resourceVersion: b.ResourceVersion, at: now}
}

// behind reports whether cached is older than this process's last write
// of it; once it is not, the write is forgotten.
func (s *writtenSet) behind(cached *dbv1alpha1.DatabaseBackup) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := cached.Namespace + "/" + cached.Name
	w, ok := s.by[key]
	if !ok {
		return false
	}
	if c, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, w.resourceVersion); err == nil && c < 0 &&
		s.clock.Since(w.at) <= createdTTL {
		return true
	}
	delete(s.by, key)
	return false
}
