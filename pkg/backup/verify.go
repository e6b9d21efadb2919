package backup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/wal"
)

// verify proves db's base backups restorable when its spec asks
// (spec.backup.verifyRestore): it follows the verification that runs, or
// else, while no backup runs, starts one of the newest Completed base
// backup of db's archive that has none. One at a time: an older base
// backup that a newer one overtook before its turn is not verified.
func (r *Runner) verify(ctx context.Context, db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup, backupRunning bool) error {
	for _, b := range backups {
		if v := b.Status.Verification; v != nil && v.Phase == dbv1alpha1.VerificationRunning {
			return r.followVerify(ctx, db, b)
		}
	}
	if !db.Spec.Backup.VerifyRestore || backupRunning || r.cfg.ToolsImage == "" {
		return nil
	}
	newest := newestBase(db, backups)
	if newest == nil || newest.Status.Verification != nil {
		return nil
	}
	return r.startVerify(ctx, db, newest)
}

// newestBase is the newest (by where its WAL begins) of db's Completed
// base backups in its archive that are not being deleted; nil when there
// is none.
func newestBase(db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) *dbv1alpha1.DatabaseBackup {
	b, _ := ownBase(db, backups, func(a, b wal.Base) bool { return startsBefore(b, a) })
	return b
}

// startVerify makes the Job that restores b into a throw-away server,
// and records that it runs.
func (r *Runner) startVerify(ctx context.Context, db *dbv1alpha1.Database, b *dbv1alpha1.DatabaseBackup) error {
	e, err := registry.Lookup(string(db.Spec.Engine))
	if err != nil || e.Runtime().Archiving == nil || e.Runtime().Archiving.Verify == "" {
		return nil // no base backup of such an engine completes
	}
	key, from, ok := BaseFile(b)
	if !ok {
		return r.endVerify(ctx, db, b, dbv1alpha1.VerificationNotRestorable,
			fmt.Sprintf("its file %s is not in its archive %s", b.Status.Path, b.Status.BaseBackup.Archive))
	}
	job, err := jobObject(builder.NewVerifyJob(b, db, e, b.Status.Image, r.cfg.ToolsImage, key, from))
	if err != nil {
		return err
	}
	if err := r.createJob(ctx, job); err != nil {
		return err
	}
	st := b.Status.DeepCopy()
	now := metav1.NewTime(r.cfg.Clock.Now())
	st.Verification = &dbv1alpha1.VerificationStatus{Phase: dbv1alpha1.VerificationRunning, StartTime: &now}
	if err := r.writeStatus(ctx, b, st); err != nil {
		return err
	}
	r.cfg.Recorder.Eventf(b, corev1.EventTypeNormal, ReasonVerifying,
		"Restoring base backup %s into a throw-away server with Job %s, to prove it restorable", b.Name, job.Name)
	return nil
}

// followVerify reports the end of b's verification, read from its Job and
// its pod's termination message. A Job deleted before it ended is made
// again.
func (r *Runner) followVerify(ctx context.Context, db *dbv1alpha1.Database, b *dbv1alpha1.DatabaseBackup) error {
	name := names.BackupVerifyJobName(b.Name)
	job, err := r.cfg.Jobs.Jobs(b.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if r.created.Has(b.Namespace + "/" + name) {
			return nil // made by this process; the cache has not shown it yet
		}
		st := b.Status.DeepCopy()
		st.Verification = nil
		return r.writeStatus(ctx, b, st)
	case err != nil:
		return err
	case !metav1.IsControlledBy(job, b):
		klog.FromContext(ctx).V(2).Info("A Job of the verification's name is not this backup's; it is left untouched", "backup", klog.KObj(b), "job", name)
		return nil
	}
	r.created.Remove(b.Namespace + "/" + name)
	finished, succeeded, why := builder.JobFinished(job)
	if !finished {
		return nil
	}
	message, err := r.terminationMessage(b, builder.JobBackupVerify, succeeded)
	if err != nil {
		return err
	}
	if message == "" {
		message = why
	}
	phase := dbv1alpha1.VerificationNotRestorable
	if succeeded {
		phase = dbv1alpha1.VerificationRestorable
	}
	return r.endVerify(ctx, db, b, phase, message)
}

// endVerify records the verification's end, with an event on b, and on db
// too when b cannot be restored.
func (r *Runner) endVerify(ctx context.Context, db *dbv1alpha1.Database, b *dbv1alpha1.DatabaseBackup, phase dbv1alpha1.VerificationPhase, message string) error {
	st := b.Status.DeepCopy()
	now := metav1.NewTime(r.cfg.Clock.Now())
	v := &dbv1alpha1.VerificationStatus{Phase: phase, StartTime: &now, CompletionTime: &now, Message: message}
	if st.Verification != nil && st.Verification.StartTime != nil {
		v.StartTime = st.Verification.StartTime
	}
	st.Verification = v
	if err := r.writeStatus(ctx, b, st); err != nil {
		return err
	}
	if phase == dbv1alpha1.VerificationRestorable {
		r.cfg.Recorder.Eventf(b, corev1.EventTypeNormal, ReasonRestorable, "Base backup %s restored into a throw-away server: %s", b.Name, message)
		return nil
	}
	r.cfg.Recorder.Eventf(b, corev1.EventTypeWarning, ReasonNotRestorable, "Base backup %s could not be restored: %s", b.Name, message)
	r.cfg.Recorder.Eventf(db, corev1.EventTypeWarning, ReasonNotRestorable, "Base backup %s could not be restored: %s", b.Name, message)
	return nil
}
