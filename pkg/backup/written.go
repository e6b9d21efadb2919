package backup

import (
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/ttl"
)

// createdTTL bounds how long a create or a write of this process is
// trusted over a cache that does not show it.
const createdTTL = 5 * time.Minute

// createdSet remembers, by namespace/name, the objects this process created
// that the informers may not show yet, so that a lagging cache is not
// mistaken for an object deleted or never made.
type createdSet = ttl.Set[string, struct{}]

func newCreatedSet(c clock.PassiveClock) *createdSet {
	return ttl.NewSet[string, struct{}](c, createdTTL)
}

// writtenSet remembers the resourceVersion of each DatabaseBackup this
// process last wrote (its status, its finalizers) until the cache shows
// it. A pass on a cache behind such a write would decide from what the
// write replaced: start a backup again, write its status over an older
// version, which the API server refuses.
type writtenSet struct {
	versions *ttl.Set[string, string]
}

func newWrittenSet(c clock.PassiveClock) writtenSet {
	return writtenSet{versions: ttl.NewSet[string, string](c, createdTTL)}
}

// add remembers b as a write returned it.
func (s writtenSet) add(b *dbv1alpha1.DatabaseBackup) {
	s.versions.Put(b.Namespace+"/"+b.Name, b.ResourceVersion)
}

// behind reports whether cached is older than this process's last write
// of it; once it is not, the write is forgotten.
func (s writtenSet) behind(cached *dbv1alpha1.DatabaseBackup) bool {
	key := cached.Namespace + "/" + cached.Name
	written, ok := s.versions.Get(key)
	if !ok {
		return false
	}
	if c, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, written); err == nil && c < 0 {
		return true
	}
	s.versions.Remove(key)
	return false
}
