package reconcile

import (
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// A settled Database is not passed over again while nothing it depends on
// has a new resourceVersion: a drift that no resourceVersion shows (which
// a real API server never makes) proves the pass was skipped. A new
// resourceVersion, and the end of SettledTTL, each bring a full
// pass back, which repairs it.
func TestSettledDatabaseIsSkippedUntilSomethingChanges(t *testing.T) {
	for _, tt := range []struct {
		name string
		// change is done to the drifted StatefulSet and the clock before the last sync.
		change func(f *fixture, sts *appsv1.StatefulSet)
	}{
		{"the StatefulSet's resourceVersion changes", func(_ *fixture, sts *appsv1.StatefulSet) { sts.ResourceVersion = "99" }},
		{"the settled state is older than SettledTTL", func(f *fixture, _ *appsv1.StatefulSet) {
			f.clock.SetTime(testNow.Add(SettledTTL + time.Second))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts, _, _, _ := f.convergedAtVersions(db)
			r, recorder := f.newReconciler()
			sync := func(wantSkipped bool) {
				t.Helper()
				f.syncAndCheck(ctx, r, recorder, ref(db), map[bool]outcome{true: skipped, false: synced}[wantSkipped])
			}
			sync(false) // the first pass finds nothing to do: settled
			sync(true)

			drifted := sts.DeepCopy()
			drifted.Spec.Template.Spec.Containers[0].Image = "postgres:latest"
			drifted.Generation++ // as the API server does with every change of a spec
			if err := f.caches.StatefulSets.Update(drifted); err != nil {
				t.Fatal(err)
			}
			sync(true)

			tt.change(f, drifted)
			if err := f.caches.StatefulSets.Update(drifted); err != nil {
				t.Fatal(err)
			}
			f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
			sync(false)
		})
	}
}

// A pass that asks to look again depends on the clock, which no
// resourceVersion shows: it never settles, and the next sync is a full pass.
func TestRecheckedDatabaseIsNeverSkipped(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.ResourceVersion = "10"
	sts := notReadyStatefulSet(t, db)
	pod := startingPod(db)
	headless, svc, secret := expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw")
	for i, o := range []metav1.Object{sts, headless, svc, secret, pod} {
		o.SetResourceVersion(fmt.Sprint(i + 1))
	}
	f.seed(db, sts, headless, svc, secret, pod)
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	r, recorder := f.newReconciler()
	f.syncAndCheck(ctx, r, recorder, ref(db), recheckDue)
	// The lister still holds the status before the write; the pass works
	// from the status as written (written.go), so it writes nothing, and
	// its outcome, to look again soon, shows that it was a full pass.
	f.actions = nil
	f.syncAndCheck(ctx, r, recorder, ref(db), recheckDue)
}

// Every input a settled pass read unsettles the Database when it changes:
// for each read the pass recorded, in each of the states below, a change of
// what it returns (a new resourceVersion of the object read, an object
// where there was none, or one more object under the index key) makes the
// next Sync a full pass. Each state names the inputs it must have read, so
// that a read that stops being recorded fails here too.
func TestEveryInputOfASettledPassUnsettlesIt(t *testing.T) {
	scheduled := func(db *dbv1alpha1.Database) *dbv1alpha1.DatabaseBackup {
		b := backup.NewFinalBackup(db)
		b.Name, b.Labels[dbv1alpha1.LabelBackupTrigger] = "orders-20261122-0300", dbv1alpha1.BackupTriggerSchedule
		b.Annotations = map[string]string{backup.AnnotationScheduledTime: "2026-11-22T03:00:00Z"}
		b.Status.Phase = dbv1alpha1.BackupCompleted
		return b
	}
	for _, tt := range []struct {
		name string
		// seed seeds the state, and returns its Database.
		seed func(t *testing.T, f *fixture) *dbv1alpha1.Database
		// inputs are the sources the settled pass must have read.
		inputs []source
	}{
		{"running, with its claim and pod", func(t *testing.T, f *fixture) *dbv1alpha1.Database {
			db := newDatabase("orders", "postgresql", "16", 1)
			f.converged(db)
			f.seed(claim(db, 0, "1Gi"), startedPod(db))
			return db
		}, []source{srcStatefulSets, srcServices, srcSecrets, srcClaims, srcPods}},
		{"a claim waiting for its volume", func(t *testing.T, f *fixture) *dbv1alpha1.Database {
			db := newDatabase("orders", "postgresql", "16", 1)
			f.seed(db, notReadyStatefulSet(t, db), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
			pending := claim(db, 0, "1Gi")
			pending.UID, pending.Status.Phase = "claim-uid", corev1.ClaimPending
			f.seed(pending)
			return db
		}, []source{srcClaims, srcPods, srcClaimEvents}},
		{"backups on a schedule", func(t *testing.T, f *fixture) *dbv1alpha1.Database {
			db := newDatabase("orders", "postgresql", "16", 1)
			db.Spec.Backup = &dbv1alpha1.BackupSpec{Schedule: "0 3 * * *"}
			f.converged(db)
			f.seed(scheduled(db))
			return db
		}, []source{srcBackups}},
		{"a restore going on", func(t *testing.T, f *fixture) *dbv1alpha1.Database {
			db := restoring(newDatabase("copy", "postgresql", "16", 1))
			f.seed(db, sourceBackup("15"))
			return db
		}, []source{srcBackups}},
		{"a featureCompatibilityVersion Job running", func(t *testing.T, f *fixture) *dbv1alpha1.Database {
			db := newDatabase("orders", "mongodb", "7.0", 1)
			f.converged(db)
			db.Status.FeatureCompatibilityVersion = "6.0"
			job := actiontest.Object[batchv1.Job](t, builder.NewFeatureCompatibilityJob(db, profile(t, db), "mongo:7.0", "7.0", 1))
			f.seed(job)
			return db
		}, []source{srcJobs}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			settle := func() (*fixture, *Reconciler, *dbv1alpha1.Database, []read) {
				t.Helper()
				f := newFixture(t)
				db := tt.seed(t, f)
				f.stampResourceVersions()
				r, _ := f.newReconciler()
				if skipped, err := r.Sync(ctx, db); skipped || err != nil {
					t.Fatalf("the first pass: skipped %v, %v; want a pass that settles", skipped, err)
				}
				last, ok := r.settled.Get(ref(db))
				if !ok {
					t.Fatal("the first pass did not settle")
				}
				reads, ok := last.reads.reads(ref(db))
				if !ok {
					t.Fatalf("the settled pass's record does not decode: %q", last.reads)
				}
				return f, r, db, reads
			}
			f, r, db, reads := settle()
			// Nothing changed: skipped.
			if skipped, err := r.Sync(ctx, db); !skipped || err != nil {
				t.Fatalf("a Sync with nothing changed: skipped %v, %v; want skipped", skipped, err)
			}
			for _, src := range tt.inputs {
				if !slices.ContainsFunc(reads, func(rd read) bool { return rd.src == src }) {
					t.Errorf("the settled pass read no %s; its reads: %v", resources[src].Resource, reads)
				}
			}
			for i, rd := range reads {
				f, r, db, _ := settle()
				f.change(rd, i)
				if skipped, _ := r.Sync(ctx, db); skipped {
					t.Errorf("%v changed, and the next Sync was skipped", rd)
				}
			}
			_ = f
		})
	}
}

// startedPod is db's first pod, ready.
func startedPod(db *dbv1alpha1.Database) *corev1.Pod {
	pod := startingPod(db)
	pod.Status.ContainerStatuses[0].Ready = true
	return pod
}

// stampResourceVersions gives every seeded object a resourceVersion, as
// an API server would.
func (f *fixture) stampResourceVersions() {
	n := 100
	for _, objs := range [][]metav1.Object{objects(f.dbLister), objects(f.statefulSetLister), objects(f.serviceLister),
		objects(f.secretLister), objects(f.claimLister), objects(f.podLister), objects(f.jobLister), objects(f.backupLister),
		objects(f.claimEventLister), objects(f.budgetLister), objects(f.nodeLister)} {
		for _, o := range objs {
			n++
			o.SetResourceVersion(fmt.Sprint(n))
		}
	}
}

func objects[T metav1.Object](in []T) []metav1.Object {
	out := make([]metav1.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

// change changes what rd returns from the caches: the object read gets a
// new resourceVersion; where there was none, one appears; under an index
// key, one more object appears. n makes the new objects' names unique.
func (f *fixture) change(rd read, n int) {
	f.t.Helper()
	indexer := f.caches.indexers()[rd.src]
	if rd.index == "" {
		obj, exists, err := indexer.GetByKey(rd.key)
		if err != nil {
			f.t.Fatal(err)
		}
		if exists {
			changed := obj.(runtime.Object).DeepCopyObject()
			changed.(metav1.Object).SetResourceVersion("changed")
			if node, ok := changed.(*corev1.Node); ok {
				// What a pass reads of a node.
				node.Spec.Unschedulable = !node.Spec.Unschedulable
			}
			f.update(indexer, changed)
			return
		}
		namespace, name, _ := cache.SplitMetaNamespaceKey(rd.key)
		f.add(indexer, newOf(rd.src, metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: "new"}))
		return
	}
	// An object that the index files under the key read.
	namespace, rest, _ := strings.Cut(rd.key, "/")
	meta := metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("new-%d", n), ResourceVersion: "new",
		Labels: map[string]string{names.LabelInstance: rest}}
	obj := newOf(rd.src, meta)
	switch o := obj.(type) {
	case *dbv1alpha1.DatabaseBackup:
		o.Spec.Database = rest
	case *corev1.Event:
		claimName, uid, _ := strings.Cut(rest, "/")
		o.InvolvedObject = corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: claimName, UID: types.UID(uid)}
	}
	if keys, err := indexer.GetIndexers()[rd.index](obj); err != nil || !slices.Contains(keys, rd.key) {
		f.t.Fatalf("the new object is filed under %v, not %s", keys, rd.key)
	}
	f.add(indexer, obj)
}

// newOf is an empty object of src's kind, with meta.
func newOf(src source, meta metav1.ObjectMeta) runtime.Object {
	switch src {
	case srcStatefulSets:
		return &appsv1.StatefulSet{ObjectMeta: meta}
	case srcServices:
		return &corev1.Service{ObjectMeta: meta}
	case srcSecrets:
		return &corev1.Secret{ObjectMeta: meta}
	case srcJobs:
		return &batchv1.Job{ObjectMeta: meta}
	case srcBackups:
		return &dbv1alpha1.DatabaseBackup{ObjectMeta: meta}
	case srcClaims:
		return &corev1.PersistentVolumeClaim{ObjectMeta: meta}
	case srcPods:
		return &corev1.Pod{ObjectMeta: meta}
	case srcClaimEvents:
		return &corev1.Event{ObjectMeta: meta}
	case srcBudgets:
		return &policyv1.PodDisruptionBudget{ObjectMeta: meta}
	case srcNodes:
		return &corev1.Node{ObjectMeta: meta}
	}
	panic(fmt.Sprintf("no kind for source %d", src))
}

// A settled pass's reads read back as they were read from their record,
// whatever prefix their keys share with the Database's; a record cut
// short reads as no record.
func TestReadRecordReadsBackTheReads(t *testing.T) {
	db := types.NamespacedName{Namespace: "shop", Name: "orders"}
	reads := []read{
		{src: srcStatefulSets, key: "shop/orders"},
		{src: srcSecrets, key: "shop/orders-credentials"},
		{src: srcClaims, index: IndexInstance, key: "shop/orders"},
		{src: srcClaimEvents, index: IndexClaim, key: "shop/data-orders-0"},
		{src: srcTLSSecrets, key: "shop/orders-cert"},
		{src: srcTLSSecrets, key: "shop/billing-cert"},
		{src: srcNodes, key: "node-1"},
		{src: srcSecrets, key: "shopping/orders"},
		{src: srcServices, key: "shop/" + strings.Repeat("s", 300)},
		{src: srcPodMonitors, key: ""},
	}
	rec := encodeReads(db, reads)
	got, ok := rec.reads(db)
	if !ok || !slices.Equal(got, reads) {
		t.Fatalf("the record %q reads back as %v (%v), want %v", rec, got, ok, reads)
	}
	if len(rec) >= len(strings.Join(func() []string {
		var keys []string
		for _, rd := range reads {
			keys = append(keys, rd.key)
		}
		return keys
	}(), "")) {
		t.Errorf("the record takes %d bytes, as many as its keys at least: no key was kept as a suffix", len(rec))
	}
	for n := range len(rec) {
		if _, ok := rec[:n].reads(db); ok && n > 0 && !endsARead(db, reads, rec[:n]) {
			t.Errorf("the record cut to %d of its %d bytes reads as a record", n, len(rec))
		}
	}
	if got, ok := readRecord("").reads(db); !ok || len(got) != 0 {
		t.Errorf("the empty record reads as %v (%v), want no reads", got, ok)
	}
}

// endsARead reports whether rec is the record of the first reads of reads.
func endsARead(db types.NamespacedName, reads []read, rec readRecord) bool {
	for k := range len(reads) + 1 {
		if encodeReads(db, reads[:k]) == rec {
			return true
		}
	}
	return false
}

// BenchmarkSettledRecord reports the heap the record of a settled pass
// over a running PostgreSQL Database, its claim and pod, holds: its reads
// as a record (what a settled Database keeps, for SettledTTL), and as the
// reader's slice of reads, for comparison.
func BenchmarkSettledRecord(b *testing.B) {
	// The fixture takes a *testing.T: a zero one records a failed check,
	// read below.
	t := &testing.T{}
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	f.seed(claim(db, 0, "1Gi"), startedPod(db))
	f.stampResourceVersions()
	r, _ := f.newReconciler()
	_, ctx := ktesting.NewTestContext(b)
	if skipped, err := r.Sync(ctx, db); skipped || err != nil {
		b.Fatalf("the first pass: skipped %v, %v; want a pass that settles", skipped, err)
	}
	last, ok := r.settled.Get(ref(db))
	if !ok || t.Failed() {
		b.Fatal("the first pass did not settle")
	}
	reads, _ := last.reads.reads(ref(db))
	const n = 1000
	held := func(keep func(i int) any) float64 {
		kept := make([]any, n)
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		for i := range kept {
			kept[i] = keep(i)
		}
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		goruntime.KeepAlive(kept)
		return float64(after.HeapAlloc-before.HeapAlloc) / n
	}
	// Each Database's keys are its own strings, as a reader makes them.
	asRead := func(i int) any {
		var rd reader
		for _, x := range reads {
			x.key = strings.Clone(x.key)
			rd.record(x, 0, true)
		}
		return rd.reads
	}
	slice, rec := held(asRead), held(func(i int) any { return encodeReads(ref(db), reads) })
	for b.Loop() {
		_ = encodeReads(ref(db), reads)
	}
	b.ReportMetric(float64(len(reads)), "reads")
	b.ReportMetric(slice, "bytes/slice")
	b.ReportMetric(rec, "bytes/record")
}
