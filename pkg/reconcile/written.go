package reconcile

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// A pass reads its Database from the informer's cache, and the controller's
// own status writes reach that cache a little later: a pass that starts
// right after one that wrote (its key was queued again by the pods it
// changed) may read the status as it was before that write. For most of the
// status that costs one more write at most; for the replication status it
// is wrong, because it is the record a failover acts on. A pass on a cache
// that had not shown a switchover's last write found its target recorded
// again, finished it a second time, and said so twice (PrimaryChanged), on
// the real node.
//
// So the Reconciler remembers the status it last wrote to each Database
// until the cache shows that write or a later version, and a pass that
// reads an older version works from the status as written. Older is by
// the resourceVersions' order where the API server gives comparable ones
// (Kubernetes' own storage does: apimachinery's CompareResourceVersion),
// and else by the versions the controller itself saw its writes replace.

// writtenTTL bounds how long a written status is remembered when no pass
// comes to forget it: a cache behind by more than that is a broken watch,
// which its relist repairs.
const writtenTTL = time.Minute

// maxReplaced bounds the versions a written status remembers as older.
const maxReplaced = 8

// writtenStatus is the status this controller last wrote to a Database.
type writtenStatus struct {
	// made is the resourceVersion the write made; replaced are versions
	// older than it, newest first: the one the write replaced, and those
	// the writes before it made or replaced.
	made     string
	replaced []string
	status   dbv1alpha1.DatabaseStatus
}

// olderThan reports whether the Database version rv is older than the
// write w made.
func (w writtenStatus) olderThan(rv string) bool {
	if slices.Contains(w.replaced, rv) {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(rv, w.made)
	return err == nil && c < 0
}

// rememberWritten records status, written over the Database version
// replaced (as the pass knew it) and making version made.
func (r *Reconciler) rememberWritten(db *dbv1alpha1.Database, replaced, made string, status dbv1alpha1.DatabaseStatus) {
	older := []string{replaced}
	if prev, ok := r.written.Get(db.UID); ok {
		older = append(append(older, prev.made), prev.replaced...)
	}
	var kept []string
	for _, v := range older {
		if v != made && !slices.Contains(kept, v) && len(kept) < maxReplaced {
			kept = append(kept, v)
		}
	}
	r.written.Put(db.UID, writtenStatus{made: made, replaced: kept, status: *status.DeepCopy()})
}

// asWritten returns db with the status this controller last wrote to it
// when db is a version older than that write, and db otherwise.
func (r *Reconciler) asWritten(db *dbv1alpha1.Database) *dbv1alpha1.Database {
	w, ok := r.written.Get(db.UID)
	if !ok || !w.olderThan(db.ResourceVersion) {
		r.Observed(db)
		return db
	}
	fresh := db.DeepCopy()
	fresh.Status = *w.status.DeepCopy()
	return fresh
}

// Observed forgets the status last written to db once the cache shows it
// or a later version: the controller calls it as the cache receives each
// version, so that a Database no pass comes back to holds no copy.
func (r *Reconciler) Observed(db *dbv1alpha1.Database) {
	if w, ok := r.written.Get(db.UID); ok && !w.olderThan(db.ResourceVersion) {
		r.written.Remove(db.UID)
	}
}
