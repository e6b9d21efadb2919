package reconcile

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// IndexInstance is the name of the index, on the pods, claims and Jobs
// informers, of objects by namespace and instance label: the Database they
// belong to. A lister's List with a label selector looks at every object
// of the namespace, and hands back a slice of all of them to filter; at a
// thousand Databases in one namespace that is the bulk of what a sync
// allocates. The index hands back a Database's own objects only.
const IndexInstance = "instance"

// IndexByInstance indexes an object by namespace/instance label; objects
// without the label are not indexed.
func IndexByInstance(obj interface{}) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	instance := o.GetLabels()[names.LabelInstance]
	if instance == "" {
		return nil, nil
	}
	return []string{o.GetNamespace() + "/" + instance}, nil
}

// IndexClaim is the name of the index, on the informer of claims' events, of
// events by the namespace and name of the claim they are about.
const IndexClaim = "claim"

// IndexByClaim indexes an event about a PersistentVolumeClaim by the
// claim's namespace/name; other events are not indexed.
func IndexByClaim(obj interface{}) ([]string, error) {
	e, ok := obj.(*corev1.Event)
	if !ok || e.InvolvedObject.Kind != "PersistentVolumeClaim" || e.InvolvedObject.Name == "" {
		return nil, nil
	}
	return []string{ClaimOf(e).String()}, nil
}

// ClaimOf names the claim an event is about: in the event's own namespace
// when the reference names none.
func ClaimOf(e *corev1.Event) cache.ObjectName {
	ns := e.InvolvedObject.Namespace
	if ns == "" {
		ns = e.Namespace
	}
	return cache.NewObjectName(ns, e.InvolvedObject.Name)
}

// indexed returns the objects of type T that index holds under key, of
// them those selector matches (every one when selector is nil).
func indexed[T metav1.Object](indexer cache.Indexer, index, key string, selector labels.Selector) ([]T, error) {
	objs, err := indexer.ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := o.(T)
		if ok && (selector == nil || selector.Matches(labels.Set(t.GetLabels()))) {
			out = append(out, t)
		}
	}
	return out, nil
}

// indexes are the indexers a pass reads a Database's own objects through.
type indexes struct {
	claims, pods, jobs, backups cache.Indexer
	// claimEvents holds the events of claims, with IndexClaim.
	claimEvents cache.Indexer
}

func instanceKey(db *dbv1alpha1.Database) string { return db.Namespace + "/" + db.Name }

// ownClaims are db's data volume claims: its selector labels.
func (x indexes) ownClaims(db *dbv1alpha1.Database) ([]*corev1.PersistentVolumeClaim, error) {
	return indexed[*corev1.PersistentVolumeClaim](x.claims, IndexInstance, instanceKey(db), labels.SelectorFromSet(names.SelectorLabels(db)))
}

// ownPods are db's StatefulSet's pods: its selector labels, not its backups' pods.
func (x indexes) ownPods(db *dbv1alpha1.Database) ([]*corev1.Pod, error) {
	return indexed[*corev1.Pod](x.pods, IndexInstance, instanceKey(db), labels.SelectorFromSet(names.SelectorLabels(db)))
}

// jobsOf are the Jobs labelled with db's instance: its backups' and its
// featureCompatibilityVersion's.
func (x indexes) jobsOf(db *dbv1alpha1.Database) ([]*batchv1.Job, error) {
	return indexed[*batchv1.Job](x.jobs, IndexInstance, instanceKey(db), nil)
}

// backupsOf are the DatabaseBackups of db, those selector matches.
func (x indexes) backupsOf(db *dbv1alpha1.Database, selector labels.Selector) ([]*dbv1alpha1.DatabaseBackup, error) {
	return indexed[*dbv1alpha1.DatabaseBackup](x.backups, backup.IndexDatabase, instanceKey(db), selector)
}

// eventsOf are the cached events about claim: those recorded on its name,
// of them those of this claim and not of an earlier one of the same name
// (the reference's UID, when it has one).
func (x indexes) eventsOf(claim *corev1.PersistentVolumeClaim) ([]*corev1.Event, error) {
	all, err := indexed[*corev1.Event](x.claimEvents, IndexClaim, cache.MetaObjectToName(claim).String(), nil)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, e := range all {
		if e.InvolvedObject.UID == "" || e.InvolvedObject.UID == claim.UID {
			out = append(out, e)
		}
	}
	return out, nil
}
