package reconcile

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// A Database is settled when its last pass found nothing left to do: it
// returned no error, no problem and no reason to look again soon. Every
// input of a pass is in the informer caches or derived from the clock,
// and a pass that depends on the clock asks to look again; so a pass over
// a settled Database whose inputs are all at the resourceVersions the last
// pass saw would plan the same children, find them as they were, and write
// nothing. Such a pass is skipped: a resync of an unchanged Database then
// reads a few cache entries instead of building and comparing its
// children (about 90 KB and 1,600 allocations each).
//
// The inputs are summed up in a fingerprint of resourceVersions: the
// Database's (spec, metadata and status), and those of every object the
// pass reads for it, present or absent. A child that leaves a filtered
// cache (its labels removed) changes the fingerprint as much as one that
// changes. A fingerprint is kept for SettledTTL at most, after which one
// full pass runs whatever the caches say.

// SettledTTL is how long a settled Database may go without a full pass.
const SettledTTL = time.Hour

// settledKey names a Database whose last pass settled.
type settledKey = types.NamespacedName

// fingerprint sums up the resourceVersions of what a pass over db reads. It
// returns ok false when an object has no resourceVersion (never one read
// from an API server) or a lister fails: such a pass is never skipped.
func (r *Reconciler) fingerprint(db *dbv1alpha1.Database) (sum uint64, ok bool) {
	f := fingerprinter{ok: true}
	f.add("Database", db.Name, string(db.UID), db.ResourceVersion)

	sts, err := r.statefulSets.cached(db.Namespace, names.StatefulSetName(db))
	f.addGot("StatefulSet", names.StatefulSetName(db), sts, err)
	for _, name := range []string{names.HeadlessServiceName(db), names.ServiceName(db)} {
		svc, err := r.services.cached(db.Namespace, name)
		f.addGot("Service", name, svc, err)
	}
	secret, err := r.secrets.Secrets(db.Namespace).Get(names.SecretName(db))
	f.addGot("Secret", names.SecretName(db), secret, err)
	if db.Spec.Restore != nil {
		b, err := r.backups.DatabaseBackups(db.Namespace).Get(db.Spec.Restore.Backup)
		f.addGot("DatabaseBackup", db.Spec.Restore.Backup, b, err)
	}

	claims, err := r.index.ownClaims(db)
	addListed(&f, "PersistentVolumeClaim", claims, err)
	for _, c := range claims {
		// Why a Pending claim waits is in its events (causes.go).
		if c.Status.Phase == corev1.ClaimPending {
			events, err := r.index.eventsOf(c)
			addListed(&f, "Event", events, err)
		}
	}
	pods, err := r.index.ownPods(db)
	addListed(&f, "Pod", pods, err)
	jobs, err := r.index.jobsOf(db)
	addListed(&f, "Job", jobs, err)
	backups, err := r.index.backupsOf(db, nil)
	addListed(&f, "DatabaseBackup", backups, err)
	return f.sum + f.set, f.ok
}

// fingerprinter hashes strings with 64-bit FNV-1a, without allocating.
// Objects read by name are hashed in a fixed order; objects listed are
// summed, as a lister lists them in no particular order.
type fingerprinter struct {
	sum, set uint64
	ok       bool
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashStrings(parts ...string) uint64 {
	h := uint64(fnvOffset)
	for _, s := range parts {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= fnvPrime
		}
		h ^= 0xff // a separator no string holds
		h *= fnvPrime
	}
	return h
}

// add mixes one object read by name into the ordered sum.
func (f *fingerprinter) add(kind, name, uid, resourceVersion string) {
	if resourceVersion == "" {
		f.ok = false
	}
	f.sum = (f.sum ^ hashStrings(kind, name, uid, resourceVersion)) * fnvPrime
}

// addGot mixes in the result of a lister's Get: the object, or its absence.
func (f *fingerprinter) addGot(kind, name string, obj metav1.Object, err error) {
	switch {
	case err == nil:
		f.add(kind, name, string(obj.GetUID()), obj.GetResourceVersion())
	case apierrors.IsNotFound(err):
		f.add(kind, name, "", "absent")
	default:
		f.ok = false
	}
}

// addListed adds the result of a lister's List to the unordered sum.
func addListed[T metav1.Object](f *fingerprinter, kind string, objs []T, err error) {
	if err != nil {
		f.ok = false
	}
	for _, obj := range objs {
		if obj.GetResourceVersion() == "" {
			f.ok = false
		}
		f.set += hashStrings(kind, obj.GetName(), string(obj.GetUID()), obj.GetResourceVersion())
	}
}

// Forget drops what is remembered of a Database that no longer exists.
func (r *Reconciler) Forget(namespace, name string) {
	r.settled.remove(settledKey{Namespace: namespace, Name: name})
}
