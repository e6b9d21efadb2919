// Package backup runs the DatabaseBackups of a Database: it starts each
// one as a Job, one at a time, reports how it ended, makes the scheduled
// ones, prunes them to the retention, and deletes a backup's file before
// the DatabaseBackup goes. The reconciler (package reconcile) makes the
// final backup of a Database being deleted; this package runs it like any
// other.
//
// A sync reads only from the listers, and writes only what changed: a
// Database with backups that are all finished costs no API call.
package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
)

// Reasons of the events on DatabaseBackups.
const (
	ReasonStarted          = "Started"
	ReasonCompleted        = "Completed"
	ReasonFailed           = "BackupFailed"
	ReasonPruned           = "Pruned"
	ReasonFileDeleteFailed = "FileDeleteFailed"
	ReasonPruningWAL       = "PruningWAL"
	ReasonWALPruneFailed   = "WALPruneFailed"
	ReasonVerifying        = "Verifying"
	ReasonRestorable       = "Restorable"
	ReasonNotRestorable    = "NotRestorable"
)

// IndexDatabase is the name of the DatabaseBackup informer's index by
// the Database they back up ("namespace/name").
const IndexDatabase = "database"

// IndexByDatabase indexes a DatabaseBackup by namespace/spec.database.
func IndexByDatabase(obj interface{}) ([]string, error) {
	b, ok := obj.(*dbv1alpha1.DatabaseBackup)
	if !ok {
		return nil, nil
	}
	return []string{b.Namespace + "/" + b.Spec.Database}, nil
}

// Config is what a Runner reads and writes through.
type Config struct {
	// KubeClient writes Jobs and the backup claim.
	KubeClient kubernetes.Interface
	// DBClient writes DatabaseBackups.
	DBClient clientset.Interface
	// Backups is the DatabaseBackup informer's indexer, with IndexDatabase.
	Backups cache.Indexer
	// Jobs, Pods and Claims are listers of informers limited to the objects
	// labelled as managed by this controller.
	Jobs   batchlisters.JobLister
	Pods   corelisters.PodLister
	Claims corelisters.PersistentVolumeClaimLister
	// ToolsImage is the controller's own image, whose binary the pods of
	// the backups in an object store run; without it they cannot be taken.
	ToolsImage string
	// Recorder emits events on DatabaseBackups.
	Recorder record.EventRecorder
	// Clock reads the schedule and stamps the status.
	Clock clock.PassiveClock
	// FieldManager names the writes.
	FieldManager string
}

// Runner syncs the backups of one Database at a time. It is safe for
// concurrent use by several workers, each on its own Database.
type Runner struct {
	cfg     Config
	volume  *VolumeTarget
	store   *StoreTarget
	created *createdSet
	written writtenSet

	// pruneFailures are the failed WAL prune Jobs reported already, by UID:
	// each is reported once (once more after a restart of the controller).
	mu            sync.Mutex
	pruneFailures map[types.UID]bool
}

// New returns a Runner over cfg.
func New(cfg Config) *Runner {
	created := newCreatedSet(cfg.Clock)
	return &Runner{cfg: cfg, created: created, written: newWrittenSet(cfg.Clock), pruneFailures: map[types.UID]bool{},
		volume: &VolumeTarget{client: cfg.KubeClient, claims: cfg.Claims, fieldManager: cfg.FieldManager, created: created},
		store:  &StoreTarget{toolsImage: cfg.ToolsImage},
	}
}

// targetFor is where the next backups of db go: its object store, or its
// backup volume.
func (r *Runner) targetFor(db *dbv1alpha1.Database) Target {
	if db.Spec.Backup != nil && db.Spec.Backup.ObjectStore != nil {
		return r.store
	}
	return r.volume
}

// targetOf is where b's file was written.
func (r *Runner) targetOf(b *dbv1alpha1.DatabaseBackup) Target {
	if b.Status.ObjectStore != nil {
		return r.store
	}
	return r.volume
}

// List returns the DatabaseBackups of the Database namespace/name, oldest first.
func List(backups cache.Indexer, namespace, name string) ([]*dbv1alpha1.DatabaseBackup, error) {
	objs, err := backups.ByIndex(IndexDatabase, namespace+"/"+name)
	if err != nil {
		return nil, err
	}
	out := make([]*dbv1alpha1.DatabaseBackup, 0, len(objs))
	for _, o := range objs {
		if b, ok := o.(*dbv1alpha1.DatabaseBackup); ok {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) {
			return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Sync runs the backups of the Database namespace/name; db is nil when it
// does not exist (its backups are still deleted with their files). It
// returns how long until it has to look again: the schedule's next tick,
// or a failed WAL prune's retry, whichever is sooner (0: no need).
func (r *Runner) Sync(ctx context.Context, namespace, name string, db *dbv1alpha1.Database) (time.Duration, error) {
	all, err := List(r.cfg.Backups, namespace, name)
	if err != nil {
		return 0, err
	}
	for _, b := range all {
		if r.written.behind(b) {
			// The cache shows this backup's new version soon, and that
			// brings another pass.
			klog.FromContext(ctx).V(4).Info("Waiting for the cache to show the last write", "backup", klog.KObj(b))
			return 0, nil
		}
	}
	var live []*dbv1alpha1.DatabaseBackup
	for _, b := range all {
		if b.DeletionTimestamp != nil {
			if err := r.deleteFile(ctx, b); err != nil {
				return 0, err
			}
			continue
		}
		live = append(live, b)
	}
	if db != nil && db.Spec.Backup != nil && db.DeletionTimestamp == nil {
		// The volume is made with spec.backup, so that a volume that cannot
		// be provisioned shows before the first backup needs it.
		if err := r.targetFor(db).Ensure(ctx, db); err != nil {
			return 0, err
		}
	}
	running := false
	for _, b := range live {
		if b.Status.Phase == dbv1alpha1.BackupRunning {
			running = true
			if err := r.follow(ctx, b); err != nil {
				return 0, err
			}
		}
	}
	if !running {
		for _, b := range live {
			if b.Status.Phase == "" || b.Status.Phase == dbv1alpha1.BackupPending {
				// One at a time: the oldest waiting backup, and only it.
				if err := r.start(ctx, b, db); err != nil {
					return 0, err
				}
				break
			}
		}
	}
	if db == nil || db.Spec.Backup == nil || db.DeletionTimestamp != nil {
		return 0, nil
	}
	if err := r.verify(ctx, db, live, running); err != nil {
		return 0, err
	}
	if err := r.prune(ctx, db, live); err != nil {
		return 0, err
	}
	retry, err := r.pruneWAL(ctx, db, live)
	if err != nil {
		return 0, err
	}
	next, err := r.schedule(ctx, db, live)
	if retry > 0 && (next == 0 || retry < next) {
		next = retry
	}
	return next, err
}

// start starts a waiting backup: its Job, once the Database serves.
func (r *Runner) start(ctx context.Context, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database) error {
	logger := klog.FromContext(ctx)
	if db == nil {
		return r.finish(ctx, b, dbv1alpha1.BackupFailed, fmt.Sprintf("Database %s does not exist in namespace %s", b.Spec.Database, b.Namespace), nil)
	}
	e, err := registry.Lookup(string(db.Spec.Engine))
	if err != nil {
		return r.finish(ctx, b, dbv1alpha1.BackupFailed, err.Error(), nil)
	}
	version, image, why, err := Served(db, e)
	switch {
	case err != nil:
		return r.finish(ctx, b, dbv1alpha1.BackupFailed, err.Error(), nil)
	case why != "":
		return r.wait(ctx, b, why)
	}
	if why, err := r.notServing(db); err != nil || why != "" {
		if err != nil {
			return err
		}
		return r.wait(ctx, b, why)
	}
	method := MethodFor(b, db)
	if why := baseBackupRefused(method, b, db, e); why != "" {
		return r.finish(ctx, b, dbv1alpha1.BackupFailed, why, nil)
	}
	if why := archiveFails(db); why != "" && method == dbv1alpha1.BackupMethodBaseBackup {
		return r.wait(ctx, b, why)
	}
	target := r.targetFor(db)
	if why := target.Unusable(); why != "" {
		return r.finish(ctx, b, dbv1alpha1.BackupFailed, why, nil)
	}
	if err := target.Ensure(ctx, db); err != nil {
		return err
	}
	// The status is written over the object the finalizer's patch returned:
	// over the one listed, the API server would refuse it (its
	// resourceVersion is no longer the stored one).
	if b, err = r.addFinalizer(ctx, b); err != nil {
		return err
	}
	st := b.Status.DeepCopy()
	st.Method = method
	target.Record(st, b, db, e)
	recorded := b.DeepCopy()
	recorded.Status = *st
	job, err := jobObject(target.BackupJob(recorded, db, e, image))
	if err != nil {
		return err
	}
	if err := r.createJob(ctx, job); err != nil {
		return err
	}
	logger.V(2).Info("Started backup", "backup", klog.KObj(b))
	st.Phase = dbv1alpha1.BackupRunning
	now := metav1.NewTime(r.cfg.Clock.Now())
	st.StartTime = &now
	st.Engine = db.Spec.Engine
	st.Version = version
	st.Image = image
	st.Message = ""
	if err := r.writeStatus(ctx, b, st); err != nil {
		return err
	}
	r.cfg.Recorder.Eventf(b, corev1.EventTypeNormal, ReasonStarted, "Backing up %s %s %s with Job %s", db.Spec.Engine, version, db.Name, job.Name)
	return nil
}

// notServing says why db cannot be backed up now, or "": the Job dumps
// names.BackupSourcePod, so its pod must be ready. (Its readiness, not the
// Database's status, which this very sync may have just written.)
func (r *Runner) notServing(db *dbv1alpha1.Database) (string, error) {
	name := names.BackupSourcePod(db)
	pod, err := r.cfg.Pods.Pods(db.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("waiting for Database %s to serve: its pod %s does not exist", db.Name, name), nil
	}
	if err != nil {
		return "", err
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return "", nil
		}
	}
	return fmt.Sprintf("waiting for Database %s to serve: its pod %s is not ready", db.Name, name), nil
}

// wait keeps b Pending with why, written only when it changes.
func (r *Runner) wait(ctx context.Context, b *dbv1alpha1.DatabaseBackup, why string) error {
	if b.Status.Phase == dbv1alpha1.BackupPending && b.Status.Message == why {
		return nil
	}
	st := b.Status.DeepCopy()
	st.Phase = dbv1alpha1.BackupPending
	st.Message = why
	return r.writeStatus(ctx, b, st)
}

// follow reports a running backup's end, read from its Job and its pods'
// termination messages.
func (r *Runner) follow(ctx context.Context, b *dbv1alpha1.DatabaseBackup) error {
	name := names.BackupJobName(b.Name)
	job, err := r.cfg.Jobs.Jobs(b.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		if r.created.Has(b.Namespace + "/" + name) {
			return nil // made by this process; the cache has not shown it yet
		}
		return r.finish(ctx, b, dbv1alpha1.BackupFailed, fmt.Sprintf("its Job %s was deleted before it finished", name), nil)
	}
	if err != nil {
		return err
	}
	r.created.Remove(b.Namespace + "/" + name)
	if !metav1.IsControlledBy(job, b) {
		return r.finish(ctx, b, dbv1alpha1.BackupFailed, fmt.Sprintf("Job %s/%s exists and is not this backup's; it is left untouched", b.Namespace, name), nil)
	}
	finished, succeeded, why := builder.JobFinished(job)
	if !finished {
		stuck, err := r.cannotStart(b, builder.JobBackup)
		if err != nil || stuck == "" {
			return err
		}
		// Such as the store's credentials Secret missing: the kubelet would
		// try for ever, and the backup would stay Running.
		if err := r.deleteJob(ctx, job); err != nil {
			return err
		}
		return r.finish(ctx, b, dbv1alpha1.BackupFailed, stuck, nil)
	}
	message, err := r.terminationMessage(b, builder.JobBackup, succeeded)
	if err != nil {
		return err
	}
	if succeeded {
		// The Job's script exits 0 only once the file is in place; the size
		// is a report. (kwok's fake pods complete without one.)
		if b.Status.Method == dbv1alpha1.BackupMethodBaseBackup && b.Status.BaseBackup != nil {
			if size, base, ok := objectstore.ParseBaseBackupLine(message); ok {
				done := b.DeepCopy()
				done.Status.BaseBackup.Timeline = int64(base.Timeline)
				done.Status.BaseBackup.StartLSN, done.Status.BaseBackup.StopLSN = base.Start.String(), base.Stop.String()
				return r.finish(ctx, done, dbv1alpha1.BackupCompleted, "", &size)
			}
			return r.finish(ctx, b, dbv1alpha1.BackupCompleted, "the Job succeeded but did not report the base backup's size and WAL range", nil)
		}
		if size, ok := builder.ParseBackupTerminationMessage(message); ok {
			return r.finish(ctx, b, dbv1alpha1.BackupCompleted, "", &size)
		}
		return r.finish(ctx, b, dbv1alpha1.BackupCompleted, "the Job succeeded but did not report the file's size", nil)
	}
	if message == "" {
		message = why
	}
	return r.finish(ctx, b, dbv1alpha1.BackupFailed, message, nil)
}

// cannotStart says why a pod of b's Job job cannot start its containers,
// for a cause that waiting does not mend (a Secret or a key of it that is
// missing), or "".
func (r *Runner) cannotStart(b *dbv1alpha1.DatabaseBackup, job string) (string, error) {
	pods, err := r.cfg.Pods.Pods(b.Namespace).List(labels.SelectorFromSet(labels.Set{
		names.LabelBackup: names.BackupJobName(b.Name), builder.LabelJob: job}))
	if err != nil {
		return "", err
	}
	for _, p := range pods {
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" {
				return fmt.Sprintf("its pod %s cannot start container %s: %s", p.Name, cs.Name, w.Message), nil
			}
		}
	}
	return "", nil
}

// terminationMessage is the message of the newest pod of b's Job of kind
// job (builder.LabelJob) that ended as the Job did.
func (r *Runner) terminationMessage(b *dbv1alpha1.DatabaseBackup, job string, succeeded bool) (string, error) {
	pods, err := r.cfg.Pods.Pods(b.Namespace).List(labels.SelectorFromSet(labels.Set{
		names.LabelBackup: names.BackupJobName(b.Name), builder.LabelJob: job}))
	if err != nil {
		return "", err
	}
	want := corev1.PodFailed
	if succeeded {
		want = corev1.PodSucceeded
	}
	var newest *corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == want && (newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp)) {
			newest = p
		}
	}
	if newest == nil {
		return "", nil
	}
	for _, cs := range newest.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.Message != "" {
			return t.Message, nil
		}
	}
	return "", nil
}

// finish writes b's end: Completed with its size, or Failed with why.
func (r *Runner) finish(ctx context.Context, b *dbv1alpha1.DatabaseBackup, phase dbv1alpha1.BackupPhase, message string, size *int64) error {
	st := b.Status.DeepCopy()
	st.Phase = phase
	st.Message = message
	st.SizeBytes = size
	now := metav1.NewTime(r.cfg.Clock.Now())
	st.CompletionTime = &now
	if err := r.writeStatus(ctx, b, st); err != nil {
		return err
	}
	switch {
	case phase == dbv1alpha1.BackupCompleted && size != nil:
		r.cfg.Recorder.Eventf(b, corev1.EventTypeNormal, ReasonCompleted, "Backed up %d bytes to %s", *size, Where(st))
	case phase == dbv1alpha1.BackupCompleted:
		r.cfg.Recorder.Eventf(b, corev1.EventTypeNormal, ReasonCompleted, "Backed up to %s (%s)", Where(st), message)
	default:
		r.cfg.Recorder.Event(b, corev1.EventTypeWarning, ReasonFailed, message)
	}
	return nil
}

func (r *Runner) writeStatus(ctx context.Context, b *dbv1alpha1.DatabaseBackup, st *dbv1alpha1.DatabaseBackupStatus) error {
	updated := b.DeepCopy()
	updated.Status = *st
	written, err := r.cfg.DBClient.DbcontrollerV1alpha1().DatabaseBackups(b.Namespace).UpdateStatus(ctx, updated,
		metav1.UpdateOptions{FieldManager: r.cfg.FieldManager})
	if err != nil {
		return fmt.Errorf("updating the status of DatabaseBackup %s: %w", b.Name, err)
	}
	r.written.add(written)
	return nil
}

// schedule makes the backup of the newest tick due since the last one, and
// returns how long until the next tick.
func (r *Runner) schedule(ctx context.Context, db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) (time.Duration, error) {
	s, err := ScheduleOf(db)
	if err != nil {
		// No backup is made on a schedule that does not parse: the Backup
		// condition names the error (Status), with a Warning event.
		klog.FromContext(ctx).V(2).Info("Not scheduling backups", "err", err)
		return 0, nil
	}
	if s == nil {
		return 0, nil
	}
	now := r.cfg.Clock.Now()
	tick, due, next := Due(s, LastTick(backups, db.CreationTimestamp.Time), now)
	if due {
		b := newScheduledBackup(db, tick)
		_, err := r.cfg.DBClient.DbcontrollerV1alpha1().DatabaseBackups(db.Namespace).Create(ctx, b, metav1.CreateOptions{FieldManager: r.cfg.FieldManager})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("creating scheduled DatabaseBackup %s: %w", b.Name, err)
		}
	}
	if next.IsZero() {
		return 0, nil
	}
	return next.Sub(now), nil
}

// newScheduledBackup is the DatabaseBackup of db for the schedule's tick.
func newScheduledBackup(db *dbv1alpha1.Database, tick time.Time) *dbv1alpha1.DatabaseBackup {
	l := names.BackupLabels(db.Name)
	l[dbv1alpha1.LabelBackupTrigger] = dbv1alpha1.BackupTriggerSchedule
	return &dbv1alpha1.DatabaseBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name:        names.ScheduledBackupName(db.Name, tick),
			Namespace:   db.Namespace,
			Labels:      l,
			Annotations: map[string]string{AnnotationScheduledTime: tick.UTC().Format(time.RFC3339)},
		},
		Spec: dbv1alpha1.DatabaseBackupSpec{Database: db.Name},
	}
}

// NewFinalBackup is the DatabaseBackup taken before db is deleted.
func NewFinalBackup(db *dbv1alpha1.Database) *dbv1alpha1.DatabaseBackup {
	l := names.BackupLabels(db.Name)
	l[dbv1alpha1.LabelBackupTrigger] = dbv1alpha1.BackupTriggerFinal
	return &dbv1alpha1.DatabaseBackup{
		ObjectMeta: metav1.ObjectMeta{Name: names.FinalBackupName(db), Namespace: db.Namespace, Labels: l},
		Spec:       dbv1alpha1.DatabaseBackupSpec{Database: db.Name},
	}
}

// NewMajorUpgradeBackup is the DatabaseBackup named name taken of db before
// an in-place major upgrade, by the method MethodFor picks.
func NewMajorUpgradeBackup(db *dbv1alpha1.Database, name string) *dbv1alpha1.DatabaseBackup {
	l := names.BackupLabels(db.Name)
	l[dbv1alpha1.LabelBackupTrigger] = dbv1alpha1.BackupTriggerMajorUpgrade
	return &dbv1alpha1.DatabaseBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.Namespace, Labels: l},
		Spec:       dbv1alpha1.DatabaseBackupSpec{Database: db.Name},
	}
}

// prune deletes the Completed scheduled backups beyond the retention; their
// finalizer deletes their files.
func (r *Runner) prune(ctx context.Context, db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) error {
	retention := Retention(db)
	var window time.Duration
	if d := db.Spec.Backup.RecoveryWindowDays; d != nil {
		window = time.Duration(*d) * 24 * time.Hour
	}
	for _, b := range ToPrune(backups, retention, window, r.cfg.Clock.Now()) {
		uid := b.UID
		err := r.cfg.DBClient.DbcontrollerV1alpha1().DatabaseBackups(b.Namespace).Delete(ctx, b.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("pruning DatabaseBackup %s: %w", b.Name, err)
		}
		if window > 0 {
			r.cfg.Recorder.Eventf(b, corev1.EventTypeNormal, ReasonPruned, "Deleted: beyond the retention of %d scheduled backups and the recovery window of %d days of %s",
				retention, *db.Spec.Backup.RecoveryWindowDays, db.Name)
			continue
		}
		r.cfg.Recorder.Eventf(b, corev1.EventTypeNormal, ReasonPruned, "Deleted: beyond the retention of %d scheduled backups of %s", retention, db.Name)
	}
	return nil
}

// WALPruneRetry is how long a failed WAL prune Job is kept before the
// prune is tried again with a new one: a failed prune costs only storage,
// and its Job's pods hold the words for why.
const WALPruneRetry = time.Hour

// pruneWAL deletes from db's WAL archive, with a Job of the tools image,
// what no base backup of it that is kept needs (WALKeptFrom): once for
// each oldest base backup, as retention deletes older ones. A Job of an
// earlier one that has finished is deleted first; one that runs is waited
// for. Nothing is pruned before a base backup completed. A Job that
// failed is reported with a Warning event, and replaced WALPruneRetry
// after it failed; retry is how long until then.
func (r *Runner) pruneWAL(ctx context.Context, db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) (retry time.Duration, err error) {
	if db.Spec.Backup.Continuous == nil || db.Spec.Backup.ObjectStore == nil || r.cfg.ToolsImage == "" {
		return 0, nil
	}
	first := WALKeptFrom(db, backups)
	if first == "" {
		return 0, nil
	}
	name := builder.WALPruneJobName(db)
	job, err := r.cfg.Jobs.Jobs(db.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if r.created.Has(db.Namespace + "/" + name) {
			return 0, nil // made by this process; the cache has not shown it yet
		}
	case err != nil:
		return 0, err
	case !metav1.IsControlledBy(job, db):
		return 0, nil
	case job.Labels[builder.LabelWALKeptFrom] == first:
		if finished, succeeded, why := builder.JobFinished(job); finished && !succeeded {
			return r.pruneFailed(ctx, db, job, first, why)
		}
		return 0, nil
	default:
		if finished, _, _ := builder.JobFinished(job); !finished {
			return 0, nil
		}
		r.created.Remove(db.Namespace + "/" + name)
		return 0, r.deleteJob(ctx, job)
	}
	obj, err := jobObject(builder.NewWALPruneJob(db, r.cfg.ToolsImage, first))
	if err != nil {
		return 0, err
	}
	if err := r.createJob(ctx, obj); err != nil {
		return 0, err
	}
	r.cfg.Recorder.Eventf(db, corev1.EventTypeNormal, ReasonPruningWAL,
		"Deleting the archived WAL before %s, which no kept base backup needs, with Job %s", first, name)
	return 0, nil
}

// createJob creates job, one of this process's own (an existing one of
// its name is no error), and remembers that it made it until the cache
// shows it.
func (r *Runner) createJob(ctx context.Context, job *batchv1.Job) error {
	if _, err := r.cfg.KubeClient.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{FieldManager: r.cfg.FieldManager}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Job %s: %w", job.Name, err)
	}
	r.created.Put(job.Namespace+"/"+job.Name, struct{}{})
	return nil
}

// pruneFailed reports the failed prune Job job of db once, and deletes it
// WALPruneRetry after it failed, so that the next pass makes a new one;
// until then, it returns how long is left.
func (r *Runner) pruneFailed(ctx context.Context, db *dbv1alpha1.Database, job *batchv1.Job, first, why string) (time.Duration, error) {
	failedAt := job.CreationTimestamp.Time
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			failedAt = c.LastTransitionTime.Time
		}
	}
	retryAt := failedAt.Add(WALPruneRetry)
	r.mu.Lock()
	reported := r.pruneFailures[job.UID]
	r.pruneFailures[job.UID] = true
	r.mu.Unlock()
	if !reported {
		r.cfg.Recorder.Eventf(db, corev1.EventTypeWarning, ReasonWALPruneFailed,
			"Job %s could not delete the archived WAL before %s (%s; its pods' logs say why): the archive keeps it, which costs storage only; the prune is tried again at %s",
			job.Name, first, why, retryAt.UTC().Format(time.RFC3339))
	}
	if now := r.cfg.Clock.Now(); now.Before(retryAt) {
		return retryAt.Sub(now), nil
	}
	r.mu.Lock()
	delete(r.pruneFailures, job.UID)
	r.mu.Unlock()
	r.created.Remove(db.Namespace + "/" + job.Name)
	return 0, r.deleteJob(ctx, job)
}

// deleteFile deletes the file of a DatabaseBackup being deleted, with a
// Job on its volume, then lets it go.
func (r *Runner) deleteFile(ctx context.Context, b *dbv1alpha1.DatabaseBackup) error {
	if !hasFinalizer(b.Finalizers) {
		return nil
	}
	if job, err := r.cfg.Jobs.Jobs(b.Namespace).Get(names.BackupJobName(b.Name)); err == nil && metav1.IsControlledBy(job, b) {
		if finished, _, _ := builder.JobFinished(job); !finished {
			// Stop the dump first, or it could write the file after it is deleted.
			return r.deleteJob(ctx, job)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	target := r.targetOf(b)
	if holds, err := target.Holds(b); err != nil || !holds {
		if err != nil {
			return err
		}
		return r.removeFinalizer(ctx, b) // never written, or gone with its volume
	}
	name := names.BackupDeleteJobName(b.Name)
	job, err := r.cfg.Jobs.Jobs(b.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if r.created.Has(b.Namespace + "/" + name) {
			return nil
		}
		uid := int64(999)
		if e, err := registry.Lookup(string(b.Status.Engine)); err == nil {
			uid = e.Runtime().UID
		}
		if why := target.Unusable(); why != "" {
			return fmt.Errorf("cannot delete the file of DatabaseBackup %s: %s", b.Name, why)
		}
		obj, err := jobObject(target.DeleteJob(b, uid))
		if err != nil {
			return err
		}
		_, err = r.cfg.KubeClient.BatchV1().Jobs(b.Namespace).Create(ctx, obj, metav1.CreateOptions{FieldManager: r.cfg.FieldManager})
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace goes, with the volume: nothing to delete.
			return r.removeFinalizer(ctx, b)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Job %s: %w", name, err)
		}
		r.created.Put(b.Namespace+"/"+name, struct{}{})
		return nil
	case err != nil:
		return err
	}
	r.created.Remove(b.Namespace + "/" + name)
	if !metav1.IsControlledBy(job, b) {
		return fmt.Errorf("job %s/%s exists and is not DatabaseBackup %s's: cannot delete its file", b.Namespace, name, b.Name)
	}
	finished, succeeded, why := builder.JobFinished(job)
	switch {
	case !finished:
		// A pod that cannot start (the store's Secret deleted first) is
		// said once; the file is never given up for it: the deletion
		// waits until the Secret is back, or a person removes the
		// finalizer, knowing the file stays.
		stuck, err := r.cannotStart(b, builder.JobBackupDelete)
		if err != nil || stuck == "" || b.Status.Message == stuck {
			return err
		}
		r.cfg.Recorder.Eventf(b, corev1.EventTypeWarning, ReasonFileDeleteFailed, "Cannot delete %s: %s; the DatabaseBackup is kept until it can be (or remove its finalizer %s, and the file stays)",
			Where(&b.Status), stuck, dbv1alpha1.FinalizerBackupFile)
		st := b.Status.DeepCopy()
		st.Message = stuck
		return r.writeStatus(ctx, b, st)
	case succeeded:
		return r.removeFinalizer(ctx, b)
	default:
		r.cfg.Recorder.Eventf(b, corev1.EventTypeWarning, ReasonFileDeleteFailed,
			"Job %s could not delete %s (%s); it is made again", name, Where(&b.Status), why)
		if err := r.deleteJob(ctx, job); err != nil {
			return err
		}
		return fmt.Errorf("deleting the file of DatabaseBackup %s failed: %s", b.Name, why)
	}
}

// Where says where the file of a backup whose status is st is.
func Where(st *dbv1alpha1.DatabaseBackupStatus) string {
	if s := st.ObjectStore; s != nil {
		return fmt.Sprintf("%s in bucket %s of %s", st.Path, s.Bucket, s.Endpoint)
	}
	return fmt.Sprintf("%s on volume %s", st.Path, st.Volume)
}

func (r *Runner) deleteJob(ctx context.Context, job *batchv1.Job) error {
	background := metav1.DeletePropagationBackground
	err := r.cfg.KubeClient.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &job.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Job %s: %w", job.Name, err)
	}
	return nil
}

func hasFinalizer(finalizers []string) bool {
	for _, f := range finalizers {
		if f == dbv1alpha1.FinalizerBackupFile {
			return true
		}
	}
	return false
}

// addFinalizer returns b as it is with the finalizer: b itself when it had
// it, else what the patch returned.
func (r *Runner) addFinalizer(ctx context.Context, b *dbv1alpha1.DatabaseBackup) (*dbv1alpha1.DatabaseBackup, error) {
	if hasFinalizer(b.Finalizers) {
		return b, nil
	}
	patched, err := r.patchFinalizers(ctx, b, append(append([]string(nil), b.Finalizers...), dbv1alpha1.FinalizerBackupFile))
	if err == nil && patched == nil {
		err = fmt.Errorf("DatabaseBackup %s is gone", b.Name)
	}
	return patched, err
}

func (r *Runner) removeFinalizer(ctx context.Context, b *dbv1alpha1.DatabaseBackup) error {
	var kept []string
	for _, f := range b.Finalizers {
		if f != dbv1alpha1.FinalizerBackupFile {
			kept = append(kept, f)
		}
	}
	_, err := r.patchFinalizers(ctx, b, kept)
	return err
}

// patchFinalizers replaces b's finalizers with a JSON patch that first
// tests they are still those read, so that another writer's change is never
// lost. It returns the patched object; nil when b is gone.
func (r *Runner) patchFinalizers(ctx context.Context, b *dbv1alpha1.DatabaseBackup, finalizers []string) (*dbv1alpha1.DatabaseBackup, error) {
	patch, err := FinalizersPatch(b.ResourceVersion, b.Finalizers, finalizers)
	if err != nil {
		return nil, err
	}
	patched, err := r.cfg.DBClient.DbcontrollerV1alpha1().DatabaseBackups(b.Namespace).Patch(ctx, b.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: r.cfg.FieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("updating the finalizers of DatabaseBackup %s: %w", b.Name, err)
	}
	r.written.add(patched)
	return patched, nil
}

// FinalizersPatch is a JSON patch that replaces the finalizers old with
// new, and fails when they are no longer old. When there were none, it
// tests the object's resourceVersion instead (a JSON patch cannot test
// that a member is absent).
func FinalizersPatch(resourceVersion string, old, new []string) ([]byte, error) {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var ops []op
	if len(old) == 0 {
		ops = append(ops, op{Op: "test", Path: "/metadata/resourceVersion", Value: resourceVersion},
			op{Op: "add", Path: "/metadata/finalizers", Value: nonNil(new)})
	} else {
		ops = append(ops, op{Op: "test", Path: "/metadata/finalizers", Value: old},
			op{Op: "replace", Path: "/metadata/finalizers", Value: nonNil(new)})
	}
	return json.Marshal(ops)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
