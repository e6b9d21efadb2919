package backup

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
)

const toolsImage = "registry.example/database-controller:v1"

func store() *dbv1alpha1.ObjectStore {
	return &dbv1alpha1.ObjectStore{Endpoint: "https://s3.example", Bucket: "backups", Prefix: "team-a",
		CredentialsSecret: dbv1alpha1.LocalSecretReference{Name: "store-keys"}}
}

// startedInStore is b as the runner leaves it once its Job is made, for
// the Database's object store.
func startedInStore(b *dbv1alpha1.DatabaseBackup) *dbv1alpha1.DatabaseBackup {
	s := started(b)
	s.Status.Volume = ""
	s.Status.ObjectStore = store()
	s.Status.Path = "team-a/default/orders/orders-uid/dumps/" + b.Name + ".pgdump"
	s.Status.Method = dbv1alpha1.BackupMethodDump
	return s
}

// storeJob is the Job that takes b, a dump, of db to the store;
// baseJob, b's, a base backup.
func storeJob(t *testing.T, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database) *batchv1.Job {
	return jobOf(t, builder.NewObjectStoreBackupJob, b, db)
}

func baseJob(t *testing.T, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database) *batchv1.Job {
	return jobOf(t, builder.NewBaseBackupJob, b, db)
}

func jobOf(t *testing.T, build func(*dbv1alpha1.DatabaseBackup, *dbv1alpha1.Database, engine.Engine, string, string, *dbv1alpha1.ObjectStore, string) *batchv1ac.JobApplyConfiguration,
	b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database) *batchv1.Job {
	e, err := registry.Lookup("postgresql")
	if err != nil {
		t.Fatal(err)
	}
	j := &batchv1.Job{}
	if err := builder.Convert(build(b, db, e, "postgres:16", toolsImage, b.Status.ObjectStore, b.Status.Path), j); err != nil {
		t.Fatal(err)
	}
	return j
}

// A backup of a Database with an object store: no backup volume, the
// finalizer, the Job that streams to the store, and the store and key in
// the status, under the Database's namespace, name and UID.
func TestObjectStoreBackupStarts(t *testing.T) {
	f := &fixture{t: t, toolsImage: toolsImage}
	db := database(&dbv1alpha1.BackupSpec{ObjectStore: store()})
	b := onDemand("mine", "")
	f.seed(b, serving())
	f.actions = append(f.actions, core.NewPatchAction(backupsResource, "default", "mine", types.JSONPatchType,
		finalizerPatch("5", nil, []string{dbv1alpha1.FinalizerBackupFile})))
	s := startedInStore(b)
	f.kubeactions = append(f.kubeactions, core.NewCreateAction(jobsResource, "default", storeJob(t, s, db)))
	s.ResourceVersion = "6" // written over what the finalizer's patch returned
	f.expectUpdateStatus(s)
	f.events = []string{"Normal Started Backing up postgresql 16 orders with Job mine"}
	f.run(db)
}

// Without --tools-image, a backup to an object store fails at once, saying
// what to do, and nothing is made.
func TestObjectStoreBackupWithoutToolsImage(t *testing.T) {
	f := &fixture{t: t}
	db := database(&dbv1alpha1.BackupSpec{ObjectStore: store()})
	b := onDemand("mine", "")
	f.seed(b, serving())
	failed := b.DeepCopy()
	msg := "spec.backup.objectStore needs the controller's own image in its pods, and this controller runs without --tools-image: start it with --tools-image=<its image>"
	failed.Status = dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupFailed, CompletionTime: ptr.To(metav1.NewTime(now)), Message: msg}
	f.expectUpdateStatus(failed)
	f.events = []string{"Warning BackupFailed " + msg}
	f.run(db)
}

// Completed in the store: the event names the bucket and the key.
func TestObjectStoreBackupCompletes(t *testing.T) {
	f := &fixture{t: t, toolsImage: toolsImage}
	db := database(&dbv1alpha1.BackupSpec{ObjectStore: store()})
	b := startedInStore(onDemand("mine", ""))
	job := finished(storeJob(t, b, db), true)
	f.seed(b, job, jobPod(job, corev1.PodSucceeded, "size=42"))
	done := b.DeepCopy()
	done.Status.Phase = dbv1alpha1.BackupCompleted
	done.Status.CompletionTime = ptr.To(metav1.NewTime(now))
	done.Status.SizeBytes = ptr.To[int64](42)
	f.expectUpdateStatus(done)
	f.events = []string{"Normal Completed Backed up 42 bytes to team-a/default/orders/orders-uid/dumps/mine.pgdump in bucket backups of https://s3.example"}
	f.run(db)
}

// A Job whose pod cannot start (the store's Secret is missing) would wait
// for ever: the backup fails with the kubelet's words, and the Job goes.
func TestObjectStoreBackupWhosePodCannotStart(t *testing.T) {
	f := &fixture{t: t, toolsImage: toolsImage}
	db := database(&dbv1alpha1.BackupSpec{ObjectStore: store()})
	b := startedInStore(onDemand("mine", ""))
	job := storeJob(t, b, db)
	job.UID = "job-uid"
	pod := jobPod(job, corev1.PodPending, "")
	pod.Status.ContainerStatuses = nil
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "install-tools", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CreateContainerConfigError", Message: `secret "store-keys" not found`}}}}
	f.seed(b, job, pod)
	bg := metav1.DeletePropagationBackground
	f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(jobsResource, "default", "mine",
		metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("job-uid")}}))
	failed := b.DeepCopy()
	failed.Status.Phase = dbv1alpha1.BackupFailed
	failed.Status.CompletionTime = ptr.To(metav1.NewTime(now))
	failed.Status.Message = `its pod mine-x cannot start container install-tools: secret "store-keys" not found`
	f.expectUpdateStatus(failed)
	f.events = []string{"Warning BackupFailed " + failed.Status.Message}
	f.run(db)
}

// Deleting a DatabaseBackup in a store deletes its file with a Job of the
// tools image, even with its Database gone, and only then lets it go.
func TestDeletedObjectStoreBackupDeletesItsFile(t *testing.T) {
	db := database(&dbv1alpha1.BackupSpec{ObjectStore: store()})
	b := startedInStore(onDemand("mine", ""))
	b.Status.Phase = dbv1alpha1.BackupCompleted
	b.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	del := &batchv1.Job{}
	if err := builder.Convert(builder.NewObjectStoreDeleteJob(b, toolsImage), del); err != nil {
		t.Fatal(err)
	}
	if c := del.Spec.Template.Spec.Containers[0]; c.Image != toolsImage || len(c.Args) != 3 || c.Args[2] != b.Status.Path {
		t.Fatalf("delete Job runs %s %v", c.Image, c.Args)
	}

	f := &fixture{t: t, toolsImage: toolsImage}
	f.seed(b, finished(storeJob(t, b, db), true))
	f.kubeactions = append(f.kubeactions, core.NewCreateAction(jobsResource, "default", del))
	f.run(nil)

	t.Run("the file is deleted: the finalizer goes", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(b, finished(del, true))
		f.actions = append(f.actions, core.NewPatchAction(backupsResource, "default", "mine", types.JSONPatchType,
			finalizerPatch("5", []string{dbv1alpha1.FinalizerBackupFile}, nil)))
		f.run(nil)
	})
	t.Run("its pod cannot start: said once, and the file is not given up", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		pod := jobPod(del, corev1.PodPending, "")
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "backup-delete", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CreateContainerConfigError", Message: `secret "store-keys" not found`}}}}
		f.seed(b, del, pod)
		said := b.DeepCopy()
		said.Status.Message = `its pod mine-delete-x cannot start container backup-delete: secret "store-keys" not found`
		f.expectUpdateStatus(said)
		f.events = []string{"Warning FileDeleteFailed Cannot delete team-a/default/orders/orders-uid/dumps/mine.pgdump in bucket backups of https://s3.example: " +
			said.Status.Message + "; the DatabaseBackup is kept until it can be (or remove its finalizer dbcontroller.io/backup-file, and the file stays)"}
		f.run(nil)

		f = &fixture{t: t, toolsImage: toolsImage}
		f.seed(said, del, pod)
		f.run(nil)
	})
}

// archiving is a Database that archives its WAL to the store.
func archiving() *dbv1alpha1.Database {
	return database(&dbv1alpha1.BackupSpec{ObjectStore: store(), Continuous: &dbv1alpha1.ContinuousArchiving{}})
}

// baseBackup is an on-demand base backup.
func baseBackup(name string) *dbv1alpha1.DatabaseBackup {
	b := onDemand(name, "")
	b.Spec.Method = dbv1alpha1.BackupMethodBaseBackup
	return b
}

// startedBase is b, a base backup, as the runner leaves it once its Job
// is made: under base/, with the archive of its WAL.
func startedBase(b *dbv1alpha1.DatabaseBackup) *dbv1alpha1.DatabaseBackup {
	s := startedInStore(b)
	s.Status.Method = dbv1alpha1.BackupMethodBaseBackup
	s.Status.Path = "team-a/default/orders/orders-uid/base/" + b.Name + ".tar"
	s.Status.BaseBackup = &dbv1alpha1.BaseBackupStatus{Archive: "team-a/default/orders/orders-uid"}
	return s
}

// A backup of a Database that archives is a base backup unless it asks
// for a dump: the Job that streams pg_basebackup's copy to base/ in the
// store, and the archive its WAL is in, in the status; completed, the WAL
// range its Job reports.
func TestBaseBackup(t *testing.T) {
	f := &fixture{t: t, toolsImage: toolsImage}
	db := archiving()
	b := onDemand("mine", "")
	f.seed(b, serving())
	f.actions = append(f.actions, core.NewPatchAction(backupsResource, "default", "mine", types.JSONPatchType,
		finalizerPatch("5", nil, []string{dbv1alpha1.FinalizerBackupFile})))
	s := startedBase(b)
	f.kubeactions = append(f.kubeactions, core.NewCreateAction(jobsResource, "default", baseJob(t, s, db)))
	s.ResourceVersion = "6" // written over what the finalizer's patch returned
	f.expectUpdateStatus(s)
	f.events = []string{"Normal Started Backing up postgresql 16 orders with Job mine"}
	f.run(db)

	t.Run("completed", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		b := startedBase(baseBackup("mine"))
		job := finished(baseJob(t, b, db), true)
		f.seed(b, job, jobPod(job, corev1.PodSucceeded, "size=23758336 timeline=2 start=0/D000028 stop=0/D000100\n"))
		done := b.DeepCopy()
		done.Status.Phase = dbv1alpha1.BackupCompleted
		done.Status.CompletionTime = ptr.To(metav1.NewTime(now))
		done.Status.SizeBytes = ptr.To[int64](23758336)
		done.Status.BaseBackup.Timeline, done.Status.BaseBackup.StartLSN, done.Status.BaseBackup.StopLSN = 2, "0/D000028", "0/D000100"
		f.expectUpdateStatus(done)
		f.events = []string{"Normal Completed Backed up 23758336 bytes to team-a/default/orders/orders-uid/base/mine.tar in bucket backups of https://s3.example"}
		f.run(db)
	})
}

// A Database that archives takes a dump when one is asked for.
func TestDumpOfAnArchivingDatabase(t *testing.T) {
	f := &fixture{t: t, toolsImage: toolsImage}
	db := archiving()
	b := onDemand("mine", "")
	b.Spec.Method = dbv1alpha1.BackupMethodDump
	f.seed(b, serving())
	f.actions = append(f.actions, core.NewPatchAction(backupsResource, "default", "mine", types.JSONPatchType,
		finalizerPatch("5", nil, []string{dbv1alpha1.FinalizerBackupFile})))
	s := startedInStore(b)
	f.kubeactions = append(f.kubeactions, core.NewCreateAction(jobsResource, "default", storeJob(t, s, db)))
	s.ResourceVersion = "6" // written over what the finalizer's patch returned
	f.expectUpdateStatus(s)
	f.events = []string{"Normal Started Backing up postgresql 16 orders with Job mine"}
	f.run(db)
}

// While the Database's archiving fails, a base backup waits, saying why:
// pg_basebackup would wait for ever for its WAL to be archived.
func TestBaseBackupWaitsForTheArchive(t *testing.T) {
	f := &fixture{t: t, toolsImage: toolsImage}
	db := archiving()
	db.Status.Conditions = []metav1.Condition{{Type: dbv1alpha1.ConditionContinuousArchiving, Status: metav1.ConditionFalse,
		Reason: "ArchivingFailed", Message: "archiving 000000010000000000000003 fails: Access Denied."}}
	b := onDemand("mine", "")
	f.seed(b, serving())
	waiting := b.DeepCopy()
	waiting.Status.Phase = dbv1alpha1.BackupPending
	waiting.Status.Message = "waiting for Database orders to archive its WAL, which a base backup needs to complete: archiving 000000010000000000000003 fails: Access Denied."
	f.expectUpdateStatus(waiting)
	f.run(db)
}

// A base backup that cannot be taken fails at once, saying why and what
// to do, and nothing is made: of a Database that does not archive its
// WAL, and of an engine that takes none.
func TestBaseBackupRefused(t *testing.T) {
	mysql := archiving()
	mysql.Spec.Engine, mysql.Spec.Version = "mysql", "8.4"
	for _, tc := range []struct {
		name string
		db   *dbv1alpha1.Database
		want string
	}{
		{"no archive", database(&dbv1alpha1.BackupSpec{ObjectStore: store()}),
			"DatabaseBackup mine asks for a base backup (spec.method), which restores only with the WAL archived after it, and Database orders does not archive its WAL: set spec.backup.objectStore and spec.backup.continuous, or back it up with method Dump"},
		{"MySQL", mysql,
			"DatabaseBackup mine asks for a base backup (spec.method), which only PostgreSQL takes, and Database orders runs mysql: back it up with method Dump"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fixture{t: t, toolsImage: toolsImage}
			b := baseBackup("mine")
			f.seed(b, serving())
			failed := b.DeepCopy()
			failed.Status = dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupFailed, CompletionTime: ptr.To(metav1.NewTime(now)), Message: tc.want}
			f.expectUpdateStatus(failed)
			f.events = []string{"Warning BackupFailed " + tc.want}
			f.run(tc.db)
		})
	}
}

// completedBase is a Completed base backup of the archiving Database whose
// WAL begins at start.
func completedBase(name, start string) *dbv1alpha1.DatabaseBackup {
	b := startedBase(baseBackup(name))
	b.Status.Phase = dbv1alpha1.BackupCompleted
	b.Status.CompletionTime = ptr.To(metav1.NewTime(now))
	b.Status.BaseBackup.Timeline, b.Status.BaseBackup.StartLSN, b.Status.BaseBackup.StopLSN = 1, start, start[:len(start)-3]+"100"
	return b
}

func walPruneJob(t *testing.T, db *dbv1alpha1.Database, first string) *batchv1.Job {
	j := &batchv1.Job{}
	if err := builder.Convert(builder.NewWALPruneJob(db, toolsImage, first), j); err != nil {
		t.Fatal(err)
	}
	return j
}

// The archive keeps the WAL from the first segment the oldest Completed
// base backup needs, and a Job of the tools image deletes what lies
// before it: once for each oldest base backup. A Job of an earlier one is
// deleted once finished; with no base backup, nothing is pruned.
func TestWALPrune(t *testing.T) {
	db := archiving()
	older, newer := completedBase("older", "0/D000028"), completedBase("newer", "0/1A000028")
	t.Run("a Job for the oldest base backup", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(newer, older)
		f.kubeactions = append(f.kubeactions, core.NewCreateAction(jobsResource, "default", walPruneJob(t, db, "00000001000000000000000D")))
		f.events = []string{"Normal PruningWAL Deleting the archived WAL before 00000001000000000000000D, which no kept base backup needs, with Job orders-wal-prune"}
		f.run(db)
	})
	t.Run("its Job is there: nothing", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(newer, older, finished(walPruneJob(t, db, "00000001000000000000000D"), true))
		f.run(db)
	})
	t.Run("the oldest went: the finished Job of the older one goes", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		job := finished(walPruneJob(t, db, "00000001000000000000000D"), true)
		job.UID = "job-uid"
		f.seed(newer, job)
		bg := metav1.DeletePropagationBackground
		f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(jobsResource, "default", "orders-wal-prune",
			metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("job-uid")}}))
		f.run(db)
	})
	t.Run("the older one's Job still runs: it is waited for", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(newer, walPruneJob(t, db, "00000001000000000000000D"))
		f.run(db)
	})
	t.Run("its Job failed: a Warning, and a look again once an hour has passed since", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		job := failedAt(finished(walPruneJob(t, db, "00000001000000000000000D"), false), now.Add(-10*time.Minute))
		f.seed(newer, older, job)
		f.events = []string{"Warning WALPruneFailed Job orders-wal-prune could not delete the archived WAL before 00000001000000000000000D " +
			"(BackoffLimitExceeded: Job has reached the specified backoff limit; its pods' logs say why): the archive keeps it, which costs storage only; " +
			"the prune is tried again at 2026-11-22T10:50:00Z"}
		f.wantNext = 50 * time.Minute
		f.run(db)
	})
	t.Run("its Job failed an hour ago: it goes, for a new one", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		job := failedAt(finished(walPruneJob(t, db, "00000001000000000000000D"), false), now.Add(-time.Hour))
		job.UID = "job-uid"
		f.seed(newer, older, job)
		bg := metav1.DeletePropagationBackground
		f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(jobsResource, "default", "orders-wal-prune",
			metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("job-uid")}}))
		f.events = []string{"Warning WALPruneFailed Job orders-wal-prune could not delete the archived WAL before 00000001000000000000000D " +
			"(BackoffLimitExceeded: Job has reached the specified backoff limit; its pods' logs say why): the archive keeps it, which costs storage only; " +
			"the prune is tried again at 2026-11-22T10:00:00Z"}
		f.run(db)
	})
	t.Run("no Completed base backup: nothing is pruned", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		running := startedBase(baseBackup("running"))
		f.seed(running, baseJob(t, running, db))
		f.run(db)
	})
}

// failedAt is the failed Job j, failed at t.
func failedAt(j *batchv1.Job, t time.Time) *batchv1.Job {
	j.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t)
	return j
}

// A failed prune Job is reported once, however many passes see it.
func TestWALPruneFailureReportedOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	recorder := record.NewFakeRecorder(10)
	r := New(Config{Recorder: recorder, Clock: testclock.NewFakePassiveClock(now)})
	db := archiving()
	job := failedAt(finished(walPruneJob(t, db, "00000001000000000000000D"), false), now.Add(-10*time.Minute))
	job.UID = "job-uid"
	for range 3 {
		if retry, err := r.pruneFailed(ctx, db, job, "00000001000000000000000D", "BackoffLimitExceeded"); err != nil || retry != 50*time.Minute {
			t.Fatalf("pruneFailed: %s, %v; want 50m0s", retry, err)
		}
	}
	if n := len(recorder.Events); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}
