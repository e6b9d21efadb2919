package reconcile

import (
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/status"
	"github.com/dbcontroller/database-controller/pkg/wal"
)

// restoreCompleted reports whether db's restore has completed (or there is none).
func restoreCompleted(db *dbv1alpha1.Database) bool {
	return db.Spec.Restore == nil ||
		(db.Status.Restore != nil && db.Status.Restore.CompletionTime != nil &&
			(db.Spec.Restore.Backup == "" || db.Status.Restore.Backup == db.Spec.Restore.Backup))
}

// restoreSource is where the pods initialise their data from while the
// restore has not completed: the Completed DatabaseBackup
// spec.restore.backup, a dump of the same engine and the same or an older
// series, or a base backup of the same series; or, for
// spec.restore.database, the base backup picked for the target, once
// (then sts, the observed StatefulSet, restores it). A backup that is not
// there or not Completed yet is waited for; one that cannot be restored
// here is refused. Nothing is created until then.
func (p *pass) restoreSource(sts *appsv1.StatefulSet) (*builder.RestoreSource, error) {
	db := p.db
	if restoreCompleted(db) {
		return nil, nil
	}
	spec := db.Spec.Restore
	name := spec.Backup
	if name == "" {
		var err error
		if name, err = p.pickedBase(sts); err != nil {
			return nil, err
		}
	}
	b, err := p.read.backup(db.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, &status.Problem{Reason: status.ReasonRestoreWaiting, Recheck: true, Message: fmt.Sprintf(
			"DatabaseBackup %s/%s does not exist; the Database waits for it before it creates anything (spec.restore cannot change: to restore another backup, delete this Database and create it again)",
			db.Namespace, name)}
	}
	if err != nil {
		return nil, err
	}
	switch b.Status.Phase {
	case dbv1alpha1.BackupCompleted:
	case dbv1alpha1.BackupFailed:
		return nil, &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(
			"DatabaseBackup %s failed (%s) and cannot be restored: delete this Database and create it again from another backup", name, b.Status.Message)}
	default:
		return nil, &status.Problem{Reason: status.ReasonRestoreWaiting, Recheck: true, Message: fmt.Sprintf(
			"DatabaseBackup %s is %s; the restore waits until it has Completed", name, phaseOrPending(b.Status.Phase))}
	}
	if b.Status.Engine != db.Spec.Engine {
		return nil, &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(
			"DatabaseBackup %s is a backup of %s, and this Database runs %s", name, b.Status.Engine, db.Spec.Engine)}
	}
	e, err := registry.Lookup(string(db.Spec.Engine))
	if err != nil {
		return nil, &status.Problem{Reason: status.ReasonUnknownVersion, Message: err.Error()}
	}
	if b.Status.Method == dbv1alpha1.BackupMethodBaseBackup {
		return p.baseRestoreSource(b, e)
	}
	if spec.TargetTime != nil || spec.TargetLSN != "" {
		return nil, &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(
			"spec.restore.targetTime and targetLSN restore a base backup to a point in time, and DatabaseBackup %s is a dump, which restores as it was taken: delete this Database and create it again without them, or from a base backup", name)}
	}
	if err := e.CheckRestore(b.Status.Version, db.Spec.Version); err != nil {
		return nil, &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(
			"DatabaseBackup %s cannot be restored into version %s: %v", name, db.Spec.Version, err)}
	}
	src := &builder.RestoreSource{Backup: name, Claim: b.Status.Volume, Path: b.Status.Path,
		SourceDatabase: engine.DatabaseName(b.Spec.Database)}
	if b.Status.ObjectStore != nil {
		if p.r.toolsImage == "" {
			return nil, noToolsImage(name)
		}
		src.Claim, src.ObjectStore, src.ToolsImage = "", b.Status.ObjectStore, p.r.toolsImage
	}
	return src, nil
}

func noToolsImage(backup string) *status.Problem {
	return &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(
		"DatabaseBackup %s is in an object store, and this controller runs without --tools-image, whose binary fetches it: start the controller with --tools-image=<its image>", backup)}
}

// pgTimestamp is how recovery_target_time reads a time, in UTC.
const pgTimestamp = "2006-01-02 15:04:05.999999+00"

// restoreTarget is spec.restore's target.
func restoreTarget(spec *dbv1alpha1.RestoreSpec) (wal.Target, error) {
	var t wal.Target
	if spec.TargetTime != nil {
		t.Time = &spec.TargetTime.Time
	}
	if spec.TargetLSN != "" {
		l, err := wal.ParseLSN(spec.TargetLSN)
		if err != nil {
			return t, &status.Problem{Reason: status.ReasonRestoreRefused, Message: "spec.restore.targetLSN: " + err.Error()}
		}
		t.LSN = &l
	}
	return t, nil
}

// pickedBase is the base backup a restore of spec.restore.database starts
// from: the one the pods already restore, or the one backup.PickBase picks
// for the target now.
func (p *pass) pickedBase(sts *appsv1.StatefulSet) (string, error) {
	db := p.db
	if name := basePicked(db, sts); name != "" {
		return name, nil
	}
	target, err := restoreTarget(db.Spec.Restore)
	if err != nil {
		return "", err
	}
	backups, err := p.read.backupsNamed(db.Namespace, db.Spec.Restore.Database)
	if err != nil {
		return "", err
	}
	b, err := backup.PickBase(backups, target)
	switch {
	case errors.Is(err, backup.ErrNoBase):
		return "", &status.Problem{Reason: status.ReasonRestoreWaiting, Recheck: true, Message: fmt.Sprintf(
			"Database %s has no Completed base backup in namespace %s to restore from; the Database waits for one before it creates anything (a Database that archives its WAL takes one with a DatabaseBackup of method BaseBackup)",
			db.Spec.Restore.Database, db.Namespace)}
	case err != nil:
		return "", &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(
			"cannot restore Database %s to %s: %v", db.Spec.Restore.Database, target, err)}
	}
	return b.Name, nil
}

// basePicked is the base backup picked already for a restore of
// spec.restore.database: the one the pods restore, or else the one the
// status names; "" before one is picked. It does not change while the
// restore runs, though a newer base backup completes.
func basePicked(db *dbv1alpha1.Database, sts *appsv1.StatefulSet) string {
	if name := builder.BaseRestoring(sts); name != "" {
		return name
	}
	if db.Status.Restore != nil {
		return db.Status.Restore.Backup
	}
	return ""
}

// baseRestoreSource is the restore of the base backup b, with e, to
// spec.restore's target: the point the copy became consistent when
// spec.restore names b, the latest point the archive holds when it names
// the Database.
func (p *pass) baseRestoreSource(b *dbv1alpha1.DatabaseBackup, e engine.Engine) (*builder.RestoreSource, error) {
	db := p.db
	spec := db.Spec.Restore
	refused := func(format string, a ...any) (*builder.RestoreSource, error) {
		return nil, &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(format, a...)}
	}
	if a := e.Runtime().Archiving; a == nil || a.Restore == "" {
		return refused("DatabaseBackup %s is a base backup, which %s does not restore", b.Name, db.Spec.Engine)
	}
	if have, want := engine.Series(b.Status.Version, 1), engine.Series(db.Spec.Version, 1); have != want {
		return refused("DatabaseBackup %s is a copy of the data directory of PostgreSQL %s, which only PostgreSQL %s reads: restore it into version %s, or restore a dump (method Dump)",
			b.Name, have, have, b.Status.Version)
	}
	base, ok := backup.Base(b)
	if !ok || b.Status.ObjectStore == nil {
		return refused("DatabaseBackup %s is a base backup that did not report its WAL range or its store, and cannot be restored: restore another", b.Name)
	}
	key, from, ok := backup.BaseFile(b)
	if !ok {
		return refused("DatabaseBackup %s's file %s is not in its archive %s, and cannot be restored: restore another", b.Name, b.Status.Path, b.Status.BaseBackup.Archive)
	}
	if p.r.toolsImage == "" {
		return nil, noToolsImage(b.Name)
	}
	target, err := restoreTarget(spec)
	if err != nil {
		return nil, err
	}
	r := &builder.BaseRestore{Archive: b.Status.BaseBackup.Archive, Key: key, From: from, TargetText: target.String()}
	switch {
	case target.Time != nil:
		if b.Status.StartTime != nil && target.Time.Before(b.Status.StartTime.Time) {
			return refused("spec.restore.targetTime %s is before base backup %s started (%s): restore from spec.restore.database, which picks an older base backup",
				target, b.Name, b.Status.StartTime.UTC().Format(time.RFC3339))
		}
		// PostgreSQL refuses RFC 3339's "T" and "Z" in recovery_target_time.
		r.Target = fmt.Sprintf("-c recovery_target_time='%s'", target.Time.UTC().Format(pgTimestamp))
	case target.LSN != nil:
		if *target.LSN < base.Stop {
			return refused("spec.restore.targetLSN %s is before base backup %s became consistent (%s): restore from spec.restore.database, which picks an older base backup",
				target, b.Name, base.Stop)
		}
		r.Target = fmt.Sprintf("-c recovery_target_lsn='%s'", *target.LSN)
	case spec.Backup != "":
		r.Target, r.TargetText = "-c recovery_target=immediate", "the point its copy became consistent"
	}
	return &builder.RestoreSource{Backup: b.Name, Path: b.Status.Path, SourceDatabase: engine.DatabaseName(b.Spec.Database),
		ObjectStore: b.Status.ObjectStore, ToolsImage: p.r.toolsImage, Base: r}, nil
}

func phaseOrPending(p dbv1alpha1.BackupPhase) dbv1alpha1.BackupPhase {
	if p == "" {
		return dbv1alpha1.BackupPending
	}
	return p
}

// restoreInput is what the status reads of db's restore: whether the pods
// of sts still restore, and what the last attempt failed on, from the
// pods' termination messages.
func restoreInput(db *dbv1alpha1.Database, sts *appsv1.StatefulSet, pods []*corev1.Pod) *status.Restore {
	if db.Spec.Restore == nil {
		return nil
	}
	in := &status.Restore{Backup: db.Spec.Restore.Backup, InTemplate: builder.Restores(sts)}
	if in.Backup == "" {
		in.Backup = basePicked(db, sts)
	}
	if !in.InTemplate {
		return in
	}
	for _, pod := range pods {
		for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t != nil && t.ExitCode != 0 && t.Message != "" {
					in.Failure = t.Message
					return in
				}
			}
		}
	}
	return in
}
