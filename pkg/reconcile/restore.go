package reconcile

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// restoreCompleted reports whether db's restore has completed (or there is none).
func restoreCompleted(db *dbv1alpha1.Database) bool {
	return db.Spec.Restore == nil ||
		(db.Status.Restore != nil && db.Status.Restore.Backup == db.Spec.Restore.Backup && db.Status.Restore.CompletionTime != nil)
}

// restoreSource is where the pods initialise their data from while the
// restore of spec.restore.backup has not completed: a Completed
// DatabaseBackup of the same engine and the same or an older series. A
// backup that is not there or not Completed yet is waited for; one that
// cannot be restored here is refused. Nothing is created until then.
func (p *pass) restoreSource() (*builder.RestoreSource, error) {
	db := p.db
	if restoreCompleted(db) {
		return nil, nil
	}
	name := db.Spec.Restore.Backup
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
	if err := e.CheckRestore(b.Status.Version, db.Spec.Version); err != nil {
		return nil, &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(
			"DatabaseBackup %s cannot be restored into version %s: %v", name, db.Spec.Version, err)}
	}
	src := &builder.RestoreSource{Backup: name, Claim: b.Status.Volume, Path: b.Status.Path,
		SourceDatabase: engine.DatabaseName(b.Spec.Database)}
	if b.Status.ObjectStore != nil {
		if p.r.toolsImage == "" {
			return nil, &status.Problem{Reason: status.ReasonRestoreRefused, Message: fmt.Sprintf(
				"DatabaseBackup %s is in an object store, and this controller runs without --tools-image, whose binary fetches it: start the controller with --tools-image=<its image>", name)}
		}
		src.Claim, src.ObjectStore, src.ToolsImage = "", b.Status.ObjectStore, p.r.toolsImage
	}
	return src, nil
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
