package backup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/fake"
	informers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions"
	"github.com/dbcontroller/database-controller/pkg/names"
)

var now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

var (
	jobsResource    = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	claimsResource  = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	backupsResource = schema.GroupVersionResource{Group: "dbcontroller.io", Version: "v1alpha1", Resource: "databasebackups"}
)

// fixture seeds the listers and the fake clientsets, runs one Sync, and
// compares the API actions with the expected ones, one by one.
type fixture struct {
	t           *testing.T
	objects     []runtime.Object // Database API objects
	kubeobjects []runtime.Object
	backups     []*dbv1alpha1.DatabaseBackup
	jobs        []*batchv1.Job
	pods        []*corev1.Pod
	claims      []*corev1.PersistentVolumeClaim

	actions     []core.Action
	kubeactions []core.Action
	events      []string
	// wantNext is the schedule's next tick Sync must return.
	wantNext time.Duration
	// toolsImage is the controller's --tools-image.
	toolsImage string
}

func (f *fixture) seed(objs ...runtime.Object) {
	for _, o := range objs {
		switch o := o.(type) {
		case *dbv1alpha1.DatabaseBackup:
			f.backups = append(f.backups, o)
			f.objects = append(f.objects, o)
		case *batchv1.Job:
			f.jobs = append(f.jobs, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.Pod:
			f.pods = append(f.pods, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.PersistentVolumeClaim:
			f.claims = append(f.claims, o)
			f.kubeobjects = append(f.kubeobjects, o)
		default:
			f.t.Fatalf("cannot seed %T", o)
		}
	}
}

// run syncs the backups of db (or of the Database "orders" when db is nil).
func (f *fixture) run(db *dbv1alpha1.Database) {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	r, s := f.newRunner()
	next, err := r.Sync(ctx, "default", "orders", db)
	if err != nil {
		f.t.Fatalf("Sync: %v", err)
	}
	if next != f.wantNext {
		f.t.Errorf("next tick in %s, want %s", next, f.wantNext)
	}
	f.check(s)
}

// seen is what a fixture's Runner works over: its clientsets, its
// DatabaseBackups' cache, its event recorder.
type seen struct {
	client   *fake.Clientset
	kube     *k8sfake.Clientset
	backups  cache.Indexer
	recorder *record.FakeRecorder
}

// check compares what the Runner did, since the clientsets' actions were
// last cleared, with the fixture's expected actions and events.
func (f *fixture) check(s seen) {
	f.t.Helper()
	actiontest.CheckActions(f.t, "database clientset", f.actions, s.client.Actions())
	actiontest.CheckActions(f.t, "kube clientset", f.kubeactions, s.kube.Actions())
	actiontest.CheckEvents(f.t, f.events, s.recorder)
}

// newRunner makes the clientsets and the caches from what was seeded, and a
// Runner over them.
func (f *fixture) newRunner() (*Runner, seen) {
	f.t.Helper()
	client := fake.NewSimpleClientset(f.objects...)
	actiontest.ResourceVersions(client)
	kube := k8sfake.NewClientset(f.kubeobjects...)
	dbI := informers.NewSharedInformerFactory(client, 0)
	kI := kubeinformers.NewSharedInformerFactory(kube, 0)
	backups := dbI.Dbcontroller().V1alpha1().DatabaseBackups().Informer()
	if err := backups.AddIndexers(cache.Indexers{IndexDatabase: IndexByDatabase}); err != nil {
		f.t.Fatal(err)
	}
	for _, b := range f.backups {
		_ = backups.GetIndexer().Add(b)
	}
	for _, j := range f.jobs {
		_ = kI.Batch().V1().Jobs().Informer().GetIndexer().Add(j)
	}
	for _, p := range f.pods {
		_ = kI.Core().V1().Pods().Informer().GetIndexer().Add(p)
	}
	for _, c := range f.claims {
		_ = kI.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(c)
	}
	recorder := record.NewFakeRecorder(100)
	r := New(Config{
		KubeClient: kube, DBClient: client,
		Backups: backups.GetIndexer(),
		Jobs:    kI.Batch().V1().Jobs().Lister(), Pods: kI.Core().V1().Pods().Lister(),
		Claims:   kI.Core().V1().PersistentVolumeClaims().Lister(),
		Recorder: recorder, Clock: testclock.NewFakePassiveClock(now), FieldManager: "database-controller",
		ToolsImage: f.toolsImage,
	})
	return r, seen{client: client, kube: kube, backups: backups.GetIndexer(), recorder: recorder}
}

func database(backup *dbv1alpha1.BackupSpec) *dbv1alpha1.Database {
	return &dbv1alpha1.Database{
		TypeMeta: metav1.TypeMeta{APIVersion: "dbcontroller.io/v1alpha1", Kind: "Database"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default", UID: "orders-uid",
			CreationTimestamp: metav1.NewTime(now.Add(-48 * time.Hour))},
		Spec: dbv1alpha1.DatabaseSpec{Engine: "postgresql", Version: "16", Replicas: ptr.To[int32](1),
			Storage: dbv1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}, Backup: backup},
		Status: dbv1alpha1.DatabaseStatus{Phase: dbv1alpha1.PhaseRunning, ReadyReplicas: 1, CurrentVersion: "16"},
	}
}

// serving is the ready pod orders-0: the Database serves.
func serving() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func onDemand(name string, phase dbv1alpha1.BackupPhase) *dbv1alpha1.DatabaseBackup {
	return &dbv1alpha1.DatabaseBackup{
		TypeMeta: metav1.TypeMeta{APIVersion: "dbcontroller.io/v1alpha1", Kind: "DatabaseBackup"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), ResourceVersion: "5",
			CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec:   dbv1alpha1.DatabaseBackupSpec{Database: "orders"},
		Status: dbv1alpha1.DatabaseBackupStatus{Phase: phase},
	}
}

// started is b as the runner leaves it once its Job is made.
func started(b *dbv1alpha1.DatabaseBackup) *dbv1alpha1.DatabaseBackup {
	s := b.DeepCopy()
	s.Finalizers = []string{dbv1alpha1.FinalizerBackupFile}
	s.Status = dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupRunning,
		StartTime: ptr.To(metav1.NewTime(now)), Engine: "postgresql", Version: "16", Image: "postgres:16",
		Volume: "orders-backups", Path: b.Name + ".pgdump", Method: dbv1alpha1.BackupMethodDump}
	return s
}

func backupClaim(db *dbv1alpha1.Database) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{}
	if err := builder.Convert(builder.NewBackupClaim(db, db.Spec.Storage.Size), c); err != nil {
		panic(err)
	}
	return c
}

func backupJob(t *testing.T, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database) *batchv1.Job {
	e, err := registry.Lookup("postgresql")
	if err != nil {
		t.Fatal(err)
	}
	j := &batchv1.Job{}
	if err := builder.Convert(builder.NewBackupJob(b, db, e, "postgres:16"), j); err != nil {
		t.Fatal(err)
	}
	return j
}

func finished(j *batchv1.Job, succeeded bool) *batchv1.Job {
	j = j.DeepCopy()
	c := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	if !succeeded {
		c = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}
	}
	j.Status.Conditions = []batchv1.JobCondition{c}
	return j
}

func jobPod(j *batchv1.Job, phase corev1.PodPhase, message string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-x", Namespace: j.Namespace, Labels: j.Spec.Template.Labels,
			CreationTimestamp: metav1.NewTime(now.Add(-time.Second))},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: message}}}}},
	}
}

func finalizerPatch(rv string, old, new []string) []byte {
	p, err := FinalizersPatch(rv, old, new)
	if err != nil {
		panic(err)
	}
	return p
}

func (f *fixture) expectUpdateStatus(b *dbv1alpha1.DatabaseBackup) {
	f.actions = append(f.actions, core.NewUpdateSubresourceAction(backupsResource, "status", b.Namespace, b))
}

// An on-demand backup of a Database that serves: the backup volume, the
// finalizer, the Job, then Running.
func TestOnDemandBackupStarts(t *testing.T) {
	f := &fixture{t: t}
	db := database(nil)
	b := onDemand("mine", "")
	f.seed(b, serving())
	f.kubeactions = append(f.kubeactions, core.NewCreateAction(claimsResource, "default", backupClaim(db)))
	f.actions = append(f.actions, core.NewPatchAction(backupsResource, "default", "mine", types.JSONPatchType,
		finalizerPatch("5", nil, []string{dbv1alpha1.FinalizerBackupFile})))
	f.kubeactions = append(f.kubeactions, core.NewCreateAction(jobsResource, "default", backupJob(t, b, db)))
	s := started(b)
	s.ResourceVersion = "6" // written over what the finalizer's patch returned
	f.expectUpdateStatus(s)
	f.events = []string{"Normal Started Backing up postgresql 16 orders with Job mine"}
	f.run(db)
}

// The passes right after a backup started, on a cache that does not show
// the status written yet, write nothing: from what the cache shows they
// would start it again, and write its status over an older version, which
// the API server refuses (an error and a retry for every backup, seen in
// the kwok suite). Once the cache shows it, the backup is followed.
func TestBackupStartedIsNotStartedAgainFromABehindCache(t *testing.T) {
	f, ctx, r, s := startingBackup(t)
	if _, err := r.Sync(ctx, "default", "orders", database(nil)); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := len(s.client.Actions()); got != 2 {
		t.Fatalf("%d actions of the database clientset, want the finalizer and the status written", got)
	}
	actiontest.Drain(s.recorder)
	written, err := s.client.DbcontrollerV1alpha1().DatabaseBackups("default").Get(ctx, "mine", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.syncAgain(ctx, r, s, "the cache behind both writes")
	for _, step := range []struct {
		name  string
		shows *dbv1alpha1.DatabaseBackup
	}{
		{"the cache showing the finalizer only", patchedFinalizer(f.backups[0])},
		{"the cache showing the status", written},
	} {
		if err := s.backups.Update(step.shows); err != nil {
			t.Fatal(err)
		}
		f.syncAgain(ctx, r, s, step.name)
	}
}

// A backup whose Job could not be created after its finalizer was added
// waits for the cache to show the finalizer: from the copy without it, the
// pass would add it again, over an older version (refused).
func TestBackupFinalizerAddedIsNotAddedAgainFromABehindCache(t *testing.T) {
	f, ctx, r, s := startingBackup(t)
	s.kube.PrependReactor("create", "jobs", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is away")
	})
	if _, err := r.Sync(ctx, "default", "orders", database(nil)); err == nil || !strings.Contains(err.Error(), "the API server is away") {
		t.Fatalf("Sync: %v, want the Job's create failed", err)
	}
	f.syncAgain(ctx, r, s, "the cache behind the finalizer")
}

// startingBackup is a fixture of an on-demand backup, "mine", of the
// Database "orders" that serves, and a Runner over it that has not synced.
func startingBackup(t *testing.T) (*fixture, context.Context, *Runner, seen) {
	f := &fixture{t: t}
	f.seed(onDemand("mine", ""), serving())
	_, ctx := ktesting.NewTestContext(t)
	r, s := f.newRunner()
	return f, ctx, r, s
}

// syncAgain syncs "orders" once more with r, and checks what it did
// against the fixture's expectations.
func (f *fixture) syncAgain(ctx context.Context, r *Runner, s seen, step string) {
	f.t.Helper()
	s.client.ClearActions()
	s.kube.ClearActions()
	if _, err := r.Sync(ctx, "default", "orders", database(nil)); err != nil {
		f.t.Errorf("%s: Sync: %v", step, err)
	}
	f.check(s)
}

// patchedFinalizer is b as the finalizer's patch left it in the fixture's
// API server.
func patchedFinalizer(b *dbv1alpha1.DatabaseBackup) *dbv1alpha1.DatabaseBackup {
	p := b.DeepCopy()
	p.Finalizers = []string{dbv1alpha1.FinalizerBackupFile}
	p.ResourceVersion = "6"
	return p
}

// A backup waits for its Database to serve, saying so once.
func TestBackupWaitsForTheDatabase(t *testing.T) {
	f := &fixture{t: t}
	db := database(nil)
	db.Status = dbv1alpha1.DatabaseStatus{Phase: dbv1alpha1.PhaseProvisioning}
	b := onDemand("mine", "")
	f.seed(b)
	w := b.DeepCopy()
	w.Status = dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupPending,
		Message: "waiting for Database orders to serve: its pod orders-0 does not exist"}
	f.expectUpdateStatus(w)
	f.run(db)

	t.Run("said once", func(t *testing.T) {
		f := &fixture{t: t}
		f.seed(w)
		f.run(db)
	})
}

// A backup of a Database that does not exist fails, with the reason.
func TestBackupOfNoDatabaseFails(t *testing.T) {
	f := &fixture{t: t}
	b := onDemand("mine", "")
	f.seed(b)
	failed := b.DeepCopy()
	failed.Status = dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupFailed, CompletionTime: ptr.To(metav1.NewTime(now)),
		Message: "Database orders does not exist in namespace default"}
	f.expectUpdateStatus(failed)
	f.events = []string{"Warning BackupFailed Database orders does not exist in namespace default"}
	f.run(nil)
}

// One backup at a time: while one runs, the next waits, untouched.
func TestOneBackupAtATime(t *testing.T) {
	f := &fixture{t: t}
	db := database(nil)
	first := started(onDemand("first", ""))
	second := onDemand("second", "")
	second.CreationTimestamp = metav1.NewTime(now)
	f.seed(first, second, backupJob(t, first, db), backupClaim(db))
	f.run(db)
}

// A Job that completed: the size from its pod's termination message.
func TestBackupCompletes(t *testing.T) {
	f := &fixture{t: t}
	db := database(nil)
	b := started(onDemand("mine", ""))
	job := finished(backupJob(t, b, db), true)
	f.seed(b, job, jobPod(job, corev1.PodSucceeded, "size=123456"), backupClaim(db))
	done := b.DeepCopy()
	done.Status.Phase = dbv1alpha1.BackupCompleted
	done.Status.CompletionTime = ptr.To(metav1.NewTime(now))
	done.Status.SizeBytes = ptr.To[int64](123456)
	f.expectUpdateStatus(done)
	f.events = []string{"Normal Completed Backed up 123456 bytes to mine.pgdump on volume orders-backups"}
	f.run(db)
}

// A Job that failed after its retries: the dump tool's last error line.
func TestBackupFails(t *testing.T) {
	f := &fixture{t: t}
	db := database(nil)
	b := started(onDemand("mine", ""))
	job := finished(backupJob(t, b, db), false)
	msg := `pg_dump: error: connection to server failed: FATAL:  password authentication failed for user "postgres"`
	f.seed(b, job, jobPod(job, corev1.PodFailed, msg), backupClaim(db))
	failed := b.DeepCopy()
	failed.Status.Phase = dbv1alpha1.BackupFailed
	failed.Status.CompletionTime = ptr.To(metav1.NewTime(now))
	failed.Status.Message = msg
	f.expectUpdateStatus(failed)
	f.events = []string{"Warning BackupFailed " + msg}
	f.run(db)
}

// A schedule's tick makes a scheduled backup named after it; the runner
// returns when the next tick is.
func TestScheduleTick(t *testing.T) {
	f := &fixture{t: t}
	db := database(&dbv1alpha1.BackupSpec{Schedule: "0 3 * * *"})
	// The newest scheduled backup is of yesterday's tick; today's (03:00) is due.
	old := scheduled("orders-202611210300", "2026-11-21T03:00:00Z", dbv1alpha1.BackupCompleted)
	old.Namespace, old.Spec.Database = "default", "orders"
	f.seed(old, backupClaim(db))
	tick := mustTime("2026-11-22T03:00:00Z")
	want := newScheduledBackup(db, tick)
	if want.Name != "orders-202611220300" || want.Labels[dbv1alpha1.LabelBackupTrigger] != "schedule" {
		t.Fatalf("scheduled backup %s %v", want.Name, want.Labels)
	}
	f.actions = append(f.actions, core.NewCreateAction(backupsResource, "default", want))
	f.wantNext = 17 * time.Hour // 2026-11-23T03:00
	f.run(db)

	t.Run("taken: nothing until the next tick", func(t *testing.T) {
		f := &fixture{t: t}
		taken := want.DeepCopy()
		taken.Status.Phase = dbv1alpha1.BackupCompleted
		f.seed(old, taken, backupClaim(db))
		f.wantNext = 17 * time.Hour
		f.run(db)
	})
}

// Completed scheduled backups beyond the retention are deleted, oldest
// first, with a UID precondition.
func TestRetentionPrunes(t *testing.T) {
	f := &fixture{t: t}
	db := database(&dbv1alpha1.BackupSpec{Schedule: "0 3 * * *", Retention: ptr.To[int32](2)})
	var seeded []runtime.Object
	for d := 19; d <= 22; d++ {
		b := scheduled(fmt.Sprintf("orders-202611%d0300", d), fmt.Sprintf("2026-11-%dT03:00:00Z", d), dbv1alpha1.BackupCompleted)
		b.Namespace, b.Spec.Database, b.UID = "default", "orders", types.UID(b.Name)
		seeded = append(seeded, b)
	}
	f.seed(append(seeded, backupClaim(db))...)
	for _, name := range []string{"orders-202611190300", "orders-202611200300"} {
		uid := types.UID(name)
		f.actions = append(f.actions, core.NewDeleteActionWithOptions(backupsResource, "default", name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
	}
	f.events = []string{"Normal Pruned Deleted: beyond the retention of 2", "Normal Pruned Deleted: beyond the retention of 2"}
	f.wantNext = 17 * time.Hour
	f.run(db)
}

// Deleting a DatabaseBackup deletes its file with a Job on the volume, and
// only then lets it go.
func TestDeletedBackupDeletesItsFile(t *testing.T) {
	db := database(nil)
	b := started(onDemand("mine", ""))
	b.Status.Phase = dbv1alpha1.BackupCompleted
	b.DeletionTimestamp = ptr.To(metav1.NewTime(now))

	f := &fixture{t: t}
	f.seed(b, finished(backupJob(t, b, db), true), backupClaim(db))
	del := &batchv1.Job{}
	if err := builder.Convert(builder.NewBackupDeleteJob(b, 999), del); err != nil {
		t.Fatal(err)
	}
	f.kubeactions = append(f.kubeactions, core.NewCreateAction(jobsResource, "default", del))
	f.run(nil)

	t.Run("the file is deleted: the finalizer goes", func(t *testing.T) {
		f := &fixture{t: t}
		f.seed(b, finished(backupJob(t, b, db), true), finished(del, true), backupClaim(db))
		f.actions = append(f.actions, core.NewPatchAction(backupsResource, "default", "mine", types.JSONPatchType,
			finalizerPatch("5", []string{dbv1alpha1.FinalizerBackupFile}, nil)))
		f.run(nil)
	})
	t.Run("no volume: no file to delete", func(t *testing.T) {
		f := &fixture{t: t}
		f.seed(b)
		f.actions = append(f.actions, core.NewPatchAction(backupsResource, "default", "mine", types.JSONPatchType,
			finalizerPatch("5", []string{dbv1alpha1.FinalizerBackupFile}, nil)))
		f.run(nil)
	})
	t.Run("still running: the dump is stopped first", func(t *testing.T) {
		f := &fixture{t: t}
		running := b.DeepCopy()
		running.Status.Phase = dbv1alpha1.BackupRunning
		job := backupJob(t, running, db)
		job.UID = "job-uid"
		f.seed(running, job, backupClaim(db))
		bg := metav1.DeletePropagationBackground
		f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(jobsResource, "default", "mine",
			metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("job-uid")}}))
		f.run(nil)
	})
}

// A steady state costs nothing: finished backups, a schedule not yet due.
func TestSteadyStateMakesNoWrites(t *testing.T) {
	f := &fixture{t: t}
	db := database(&dbv1alpha1.BackupSpec{Schedule: "0 3 * * *"})
	done := scheduled("orders-202611220300", "2026-11-22T03:00:00Z", dbv1alpha1.BackupCompleted)
	done.Namespace, done.Spec.Database = "default", "orders"
	mine := started(onDemand("mine", ""))
	mine.Status.Phase = dbv1alpha1.BackupCompleted
	f.seed(done, mine, finished(backupJob(t, mine, db), true), backupClaim(db))
	f.wantNext = 17 * time.Hour
	f.run(db)

	if names.BackupClaimName(db) != "orders-backups" {
		t.Errorf("backup claim %s", names.BackupClaimName(db))
	}
}
