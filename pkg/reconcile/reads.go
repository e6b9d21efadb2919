package reconcile

import (
	"encoding/binary"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/cached"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// A pass reads the cluster from the informer caches through a reader, and
// only so: the reader records every read and sums up what it returned. A
// pass that settles (settled.go) keeps that record, and the next Sync of
// the Database replays the same reads: when they return the same
// resourceVersions, the pass would find the same and is skipped. The
// record is the reads themselves, so a step that starts reading something
// new is covered by the settled check with no list to keep beside it.

// source is one informer cache a pass reads.
type source uint8

const (
	srcStatefulSets source = iota
	srcServices
	srcSecrets
	srcJobs
	srcBackups
	srcClaims
	srcPods
	srcClaimEvents
	srcBudgets
	srcNodes
	srcConfigMaps
	srcTLSSecrets
	srcPodMonitors
	numSources
)

// resources name the sources in the NotFound errors a read by name returns.
var resources = [numSources]schema.GroupResource{
	srcStatefulSets: {Group: "apps", Resource: "statefulsets"},
	srcServices:     {Resource: "services"},
	srcSecrets:      {Resource: "secrets"},
	srcJobs:         {Group: "batch", Resource: "jobs"},
	srcBackups:      {Group: "dbcontroller.io", Resource: "databasebackups"},
	srcClaims:       {Resource: "persistentvolumeclaims"},
	srcPods:         {Resource: "pods"},
	srcClaimEvents:  {Resource: "events"},
	srcBudgets:      {Group: "policy", Resource: "poddisruptionbudgets"},
	srcNodes:        {Resource: "nodes"},
	srcConfigMaps:   {Resource: "configmaps"},
	srcTLSSecrets:   {Resource: "secrets"},
	srcPodMonitors:  {Group: "monitoring.coreos.com", Resource: "podmonitors"},
}

// Caches are the indexers of the informers a pass reads, each limited to
// the objects labelled as managed by this controller (the events: to those
// about claims; the nodes: to what tells whether they are cordoned).
// Claims, Pods and Jobs have the index IndexInstance, Backups
// backup.IndexDatabase, and ClaimEvents IndexClaim. Nodes is nil when the
// controller does not watch nodes: no node reads as cordoned then.
// ConfigMaps are those labelled dbcontroller.io/parameters: "true" (nil: no
// ConfigMap is found), and TLSSecrets those labelled dbcontroller.io/tls:
// "true" (nil: none is found). PodMonitors are the Prometheus Operator's,
// as unstructured objects, labelled as managed by this controller: nil
// when the cluster has not their API, and the Databases get none.
type Caches struct {
	StatefulSets, Services, Secrets, Jobs, Backups, Claims, Pods, ClaimEvents, Budgets, Nodes, ConfigMaps, TLSSecrets, PodMonitors cache.Indexer
}

func (c Caches) indexers() [numSources]cache.Indexer {
	return [numSources]cache.Indexer{
		srcStatefulSets: c.StatefulSets, srcServices: c.Services, srcSecrets: c.Secrets, srcJobs: c.Jobs,
		srcBackups: c.Backups, srcClaims: c.Claims, srcPods: c.Pods, srcClaimEvents: c.ClaimEvents,
		srcBudgets: c.Budgets, srcNodes: c.Nodes, srcConfigMaps: c.ConfigMaps, srcTLSSecrets: c.TLSSecrets,
		srcPodMonitors: c.PodMonitors,
	}
}

// read is one read of a cache: of one object by its key (index ""), or of
// the objects an index holds under key.
type read struct {
	src   source
	index string
	key   string
}

// reader reads from the caches, and records each distinct read (reads)
// and what it returned (sum). It is one pass's, and not safe for
// concurrent use.
type reader struct {
	caches *[numSources]cache.Indexer
	reads  []read
	sum    uint64
	// ok is false once a read failed or returned an object with no
	// resourceVersion (one never read from an API server): what such a
	// pass read cannot be compared later.
	ok bool
	// login is the Generation of the login Verdict the pass read, if any.
	login uint64
}

func newReader(caches *[numSources]cache.Indexer) *reader {
	return &reader{caches: caches, sum: fnvOffset, ok: true}
}

// record adds rd to the reads, once, and mixes what it returned into the
// sum: the first time only, so that a replay, which reads each once, sums
// the same.
func (r *reader) record(rd read, hash uint64, ok bool) {
	for _, seen := range r.reads {
		if seen == rd {
			return
		}
	}
	r.reads = append(r.reads, rd)
	r.sum = (r.sum ^ hash) * fnvPrime
	r.ok = r.ok && ok
}

// get reads the object of src at namespace/name: nil, with a NotFound
// error as a lister's, when the cache does not hold it.
func (r *reader) get(src source, namespace, name string) (any, error) {
	key := cache.NewObjectName(namespace, name).String()
	if r.caches[src] == nil {
		// A cache the controller does not keep holds nothing.
		r.record(read{src: src, key: key}, hashStrings(key, "absent"), true)
		return nil, apierrors.NewNotFound(resources[src], name)
	}
	obj, exists, err := r.caches[src].GetByKey(key)
	if err != nil {
		r.ok = false
		return nil, err
	}
	rd := read{src: src, key: key}
	if !exists {
		r.record(rd, hashStrings(key, "absent"), true)
		return nil, apierrors.NewNotFound(resources[src], name)
	}
	h, ok := hashObject(obj)
	if node, isNode := obj.(*corev1.Node); isNode {
		// A node's status changes all the time; a pass reads only
		// whether it is cordoned.
		h, ok = hashStrings(key, string(node.UID), strconv.FormatBool(node.Spec.Unschedulable)), true
	}
	r.record(rd, h, ok)
	return obj, nil
}

// byIndex reads the objects index holds under key in src. All of them are
// summed, whatever the caller keeps of them.
func (r *reader) byIndex(src source, index, key string) ([]any, error) {
	objs, err := r.caches[src].ByIndex(index, key)
	if err != nil {
		r.ok = false
		return nil, err
	}
	// Listed in no particular order: summed, not mixed in order.
	set, ok := uint64(0), true
	for _, obj := range objs {
		h, objOK := hashObject(obj)
		set += h
		ok = ok && objOK
	}
	r.record(read{src: src, index: index, key: key}, hashStrings(index, key)^set, ok)
	return objs, nil
}

// A readRecord is the reads of a settled pass, as it is kept until the next
// Sync replays them: in one string, each key a Database's own (its name,
// or its name and a suffix, in its namespace: its children's names) kept
// as the suffix alone. Kept as a slice of reads, the reads of one
// Database took half a kilobyte to a kilobyte: the slice, grown by
// appends, and a string for each key (BenchmarkSettledRecord). Each read
// is its source, its index (length first: none when by key), and its key:
// a byte that says which prefix it lacks (keyWhole, keyInNamespace: the
// Database's namespace and a slash; keyOfDatabase: that and the
// Database's name), then the rest (length first).
type readRecord string

// The prefixes a key in a record lacks.
const (
	keyWhole byte = iota
	keyInNamespace
	keyOfDatabase
)

// encodeReads is the record of reads by a pass over the Database db.
func encodeReads(db types.NamespacedName, reads []read) readRecord {
	inNamespace := db.Namespace + "/"
	ofDatabase := inNamespace + db.Name
	var b []byte
	for _, rd := range reads {
		prefix, rest := keyWhole, rd.key
		if r, ok := strings.CutPrefix(rd.key, ofDatabase); ok {
			prefix, rest = keyOfDatabase, r
		} else if r, ok := strings.CutPrefix(rd.key, inNamespace); ok {
			prefix, rest = keyInNamespace, r
		}
		b = append(b, byte(rd.src))
		b = binary.AppendUvarint(b, uint64(len(rd.index)))
		b = append(b, rd.index...)
		b = append(b, prefix)
		b = binary.AppendUvarint(b, uint64(len(rest)))
		b = append(b, rest...)
	}
	// Held in one allocation of its length, not the buffer's.
	return readRecord(strings.Clone(string(b)))
}

// reads are the reads of rec, by a pass over the Database db, in the order
// the pass made them; false with what was decoded when rec is not a
// record (never, as only encodeReads makes them).
func (rec readRecord) reads(db types.NamespacedName) ([]read, bool) {
	var reads []read
	s := string(rec)
	str := func() (string, bool) {
		n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		if w <= 0 || uint64(len(s)-w) < n {
			return "", false
		}
		v := s[w : w+int(n)]
		s = s[w+int(n):]
		return v, true
	}
	for s != "" {
		rd := read{src: source(s[0])}
		s = s[1:]
		index, ok := str()
		if !ok || s == "" || rd.src >= numSources {
			return reads, false
		}
		rd.index = index
		prefix := s[0]
		s = s[1:]
		rest, ok := str()
		if !ok {
			return reads, false
		}
		switch prefix {
		case keyWhole:
			rd.key = rest
		case keyInNamespace:
			rd.key = db.Namespace + "/" + rest
		case keyOfDatabase:
			rd.key = db.Namespace + "/" + db.Name + rest
		default:
			return reads, false
		}
		reads = append(reads, rd)
	}
	return reads, true
}

// replay does reads again, and returns the sum a reader that did them
// would have; ok false when one failed or returned an object with no
// resourceVersion.
func replay(caches *[numSources]cache.Indexer, reads []read) (sum uint64, ok bool) {
	r := newReader(caches)
	for _, rd := range reads {
		var err error
		if rd.index == "" {
			namespace, name, _ := cache.SplitMetaNamespaceKey(rd.key)
			_, err = r.get(rd.src, namespace, name)
		} else {
			_, err = r.byIndex(rd.src, rd.index, rd.key)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, false
		}
	}
	return r.sum, r.ok
}

// hashObject hashes what identifies one version of obj; ok is false when
// it has no resourceVersion.
func hashObject(obj any) (uint64, bool) {
	o, isObject := obj.(metav1.Object)
	if !isObject {
		return 0, false
	}
	rv := o.GetResourceVersion()
	return hashStrings(o.GetNamespace(), o.GetName(), string(o.GetUID()), rv), rv != ""
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hashStrings hashes strings with 64-bit FNV-1a, without allocating.
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

// Typed reads, one per kind a pass reads.

// as is obj as a T: itself, or the object its compact form stands for
// (cached.Whole).
func as[T any](obj any) (T, bool) {
	t, ok := cached.Whole(obj).(T)
	return t, ok
}

func getAs[T any](r *reader, src source, namespace, name string) (T, error) {
	var zero T
	obj, err := r.get(src, namespace, name)
	if err != nil {
		return zero, err
	}
	t, ok := as[T](obj)
	if !ok {
		return zero, apierrors.NewNotFound(resources[src], name)
	}
	return t, nil
}

func (r *reader) statefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	return getAs[*appsv1.StatefulSet](r, srcStatefulSets, namespace, name)
}

func (r *reader) service(namespace, name string) (*corev1.Service, error) {
	return getAs[*corev1.Service](r, srcServices, namespace, name)
}

// secret reads a Secret as the cache holds it: with no data.
func (r *reader) secret(namespace, name string) (*corev1.Secret, error) {
	return getAs[*corev1.Secret](r, srcSecrets, namespace, name)
}

func (r *reader) budget(namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	return getAs[*policyv1.PodDisruptionBudget](r, srcBudgets, namespace, name)
}

// cordoned reports whether the node is cordoned (unschedulable), as the
// nodes' cache says: a node it does not hold is not.
func (r *reader) cordoned(node string) bool {
	if node == "" {
		return false
	}
	n, err := getAs[*corev1.Node](r, srcNodes, "", node)
	return err == nil && n.Spec.Unschedulable
}

// parametersConfigMap reads a ConfigMap labelled dbcontroller.io/parameters.
func (r *reader) parametersConfigMap(namespace, name string) (*corev1.ConfigMap, error) {
	return getAs[*corev1.ConfigMap](r, srcConfigMaps, namespace, name)
}

// userTLSSecret reads a Secret labelled dbcontroller.io/tls, without its
// data.
func (r *reader) userTLSSecret(namespace, name string) (*corev1.Secret, error) {
	return getAs[*corev1.Secret](r, srcTLSSecrets, namespace, name)
}

// podMonitor reads a PodMonitor labelled as managed by this controller.
func (r *reader) podMonitor(namespace, name string) (*unstructured.Unstructured, error) {
	return getAs[*unstructured.Unstructured](r, srcPodMonitors, namespace, name)
}

func (r *reader) job(namespace, name string) (*batchv1.Job, error) {
	return getAs[*batchv1.Job](r, srcJobs, namespace, name)
}

func (r *reader) backup(namespace, name string) (*dbv1alpha1.DatabaseBackup, error) {
	return getAs[*dbv1alpha1.DatabaseBackup](r, srcBackups, namespace, name)
}

// indexedAs reads what index holds under key in src, of it the objects of
// type T that selector matches (every one when selector is nil).
func indexedAs[T metav1.Object](r *reader, src source, index, key string, selector labels.Selector) ([]T, error) {
	objs, err := r.byIndex(src, index, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := as[T](o)
		if ok && (selector == nil || selector.Matches(labels.Set(t.GetLabels()))) {
			out = append(out, t)
		}
	}
	return out, nil
}

func instanceKey(db *dbv1alpha1.Database) string { return db.Namespace + "/" + db.Name }

// ownClaims are db's data volume claims: its selector labels.
func (r *reader) ownClaims(db *dbv1alpha1.Database) ([]*corev1.PersistentVolumeClaim, error) {
	return indexedAs[*corev1.PersistentVolumeClaim](r, srcClaims, IndexInstance, instanceKey(db), labels.SelectorFromSet(names.SelectorLabels(db)))
}

// ownPods are db's StatefulSet's pods: its selector labels, not its backups' pods.
func (r *reader) ownPods(db *dbv1alpha1.Database) ([]*corev1.Pod, error) {
	return indexedAs[*corev1.Pod](r, srcPods, IndexInstance, instanceKey(db), labels.SelectorFromSet(names.SelectorLabels(db)))
}

// backupsOf are the DatabaseBackups of db.
func (r *reader) backupsOf(db *dbv1alpha1.Database) ([]*dbv1alpha1.DatabaseBackup, error) {
	return indexedAs[*dbv1alpha1.DatabaseBackup](r, srcBackups, backup.IndexDatabase, instanceKey(db), nil)
}

// eventsOf are the cached events about claim: those recorded on its name,
// of them those of this claim and not of an earlier one of the same name
// (the reference's UID), and those that name no UID.
func (r *reader) eventsOf(claim *corev1.PersistentVolumeClaim) ([]*corev1.Event, error) {
	name := cache.MetaObjectToName(claim)
	events, err := indexedAs[*corev1.Event](r, srcClaimEvents, IndexClaim, claimEventsKey(name, claim.UID), nil)
	if err != nil || claim.UID == "" {
		return events, err
	}
	noUID, err := indexedAs[*corev1.Event](r, srcClaimEvents, IndexClaim, claimEventsKey(name, ""), nil)
	return append(events, noUID...), err
}

// backupsNamed are the DatabaseBackups of the Database namespace/name,
// which may be gone.
func (r *reader) backupsNamed(namespace, name string) ([]*dbv1alpha1.DatabaseBackup, error) {
	return indexedAs[*dbv1alpha1.DatabaseBackup](r, srcBackups, backup.IndexDatabase, namespace+"/"+name, nil)
}
