package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// Reasons of the events and conditions of a deletion.
const (
	ReasonFinalBackupSkipped = "FinalBackupSkipped"
	ReasonSecretReleased     = "CredentialsRetained"
)

// FinalBackupWanted reports whether db takes a backup before it is deleted.
func FinalBackupWanted(db *dbv1alpha1.Database) bool {
	return db.Spec.Backup != nil && (db.Spec.Backup.FinalBackup == nil || *db.Spec.Backup.FinalBackup)
}

// FinalizerWanted reports whether db needs the controller at its deletion:
// for its final backup, or, under Retain, to release the credentials
// Secret from the garbage collector so that it stays with the volumes.
func FinalizerWanted(db *dbv1alpha1.Database) bool {
	return db.Spec.DeletionPolicy != dbv1alpha1.DeletionPolicyDelete || FinalBackupWanted(db)
}

// ensureFinalizer adds the Database's finalizer when it is wanted, and
// removes it when it no longer is.
func (p *pass) ensureFinalizer(ctx context.Context) error {
	has := slices.Contains(p.db.Finalizers, dbv1alpha1.FinalizerDatabase)
	switch want := FinalizerWanted(p.db); {
	case want && !has:
		return p.r.patchFinalizers(ctx, p.db, append(slices.Clone(p.db.Finalizers), dbv1alpha1.FinalizerDatabase))
	case !want && has:
		return p.r.patchFinalizers(ctx, p.db, slices.DeleteFunc(slices.Clone(p.db.Finalizers),
			func(f string) bool { return f == dbv1alpha1.FinalizerDatabase }))
	}
	return nil
}

func (r *Reconciler) patchFinalizers(ctx context.Context, db *dbv1alpha1.Database, finalizers []string) error {
	patch, err := backup.FinalizersPatch(db.ResourceVersion, db.Finalizers, finalizers)
	if err != nil {
		return err
	}
	if _, err := r.dbs.DbcontrollerV1alpha1().Databases(db.Namespace).Patch(ctx, db.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating the finalizers: %w", err)
	}
	return nil
}

// runDeleting is the pass of a Database being deleted that holds the
// finalizer: the final backup, when wanted, then under Retain the release
// of the credentials Secret, then the finalizer goes and the garbage
// collector takes the children.
func (p *pass) runDeleting(ctx context.Context, observed plan.Observed) error {
	db := p.db
	p.terminating = &status.Termination{Reason: status.ReasonDeleting, Message: "deleting"}
	if FinalBackupWanted(db) {
		done, err := p.finalBackup(ctx, observed)
		if err != nil || !done {
			return err
		}
	}
	if db.Spec.DeletionPolicy != dbv1alpha1.DeletionPolicyDelete {
		if err := p.releaseSecret(ctx); err != nil {
			return err
		}
	}
	p.released = true
	return p.r.patchFinalizers(ctx, db, slices.DeleteFunc(slices.Clone(db.Finalizers),
		func(f string) bool { return f == dbv1alpha1.FinalizerDatabase }))
}

// finalBackup takes the final backup and reports whether it is done. A
// stopped Database is started at one replica for it. A Database that never
// served has no data to back up, and a namespace being deleted takes every
// volume with it: neither gets one.
func (p *pass) finalBackup(ctx context.Context, observed plan.Observed) (bool, error) {
	r, db := p.r, p.db
	name := names.FinalBackupName(db)
	b, err := r.backups.DatabaseBackups(db.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if db.Status.CurrentVersion == "" {
			r.recorder.Event(db, corev1.EventTypeNormal, ReasonFinalBackupSkipped, "No final backup: the Database never served, so it holds no data")
			return true, nil
		}
		_, err := r.dbs.DbcontrollerV1alpha1().DatabaseBackups(db.Namespace).Create(ctx, backup.NewFinalBackup(db), createOptions)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			r.recorder.Eventf(db, corev1.EventTypeWarning, ReasonFinalBackupSkipped,
				"No final backup: namespace %s is being deleted, and every volume in it with it", db.Namespace)
			return true, nil
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating the final DatabaseBackup %s: %w", name, err)
		}
		if err == nil {
			p.created = append(p.created, "DatabaseBackup "+name)
		}
		p.terminating = &status.Termination{Reason: status.ReasonFinalBackup, Message: fmt.Sprintf(
			"taking the final backup %s before the Database goes; to delete without it, set spec.backup.finalBackup to false", name)}
	case err != nil:
		return false, err
	case b.Status.Phase == dbv1alpha1.BackupCompleted:
		return true, nil
	case b.Status.Phase == dbv1alpha1.BackupFailed:
		p.terminating = &status.Termination{Reason: status.ReasonFinalBackupFailed, Warning: true, Message: fmt.Sprintf(
			"the final backup %s failed (%s); the Database is kept until one succeeds: delete it to try again (kubectl delete dbbackup -n %s %s), or set spec.backup.finalBackup to false to delete without it",
			name, b.Status.Message, db.Namespace, name)}
		return false, nil
	default:
		why := ""
		if b.Status.Message != "" {
			why = " (" + b.Status.Message + ")"
		}
		p.terminating = &status.Termination{Reason: status.ReasonFinalBackup, Message: fmt.Sprintf(
			"taking the final backup %s before the Database goes%s; to delete without it, set spec.backup.finalBackup to false", name, why)}
	}
	return false, p.serveForBackup(ctx, observed)
}

// serveForBackup keeps the server up for the final backup: the children as
// planned, and one replica when the Database is stopped.
func (p *pass) serveForBackup(ctx context.Context, observed plan.Observed) error {
	db := p.db
	if db.Spec.Replicas == nil || *db.Spec.Replicas > 0 || p.statefulSet == nil {
		return nil
	}
	started := db.DeepCopy()
	started.Spec.Replicas = ptr.To[int32](1)
	p.plan = plan.Compute(started, observed)
	if p.plan.Problem != nil {
		return nil
	}
	return p.ensureStatefulSet(ctx)
}

// releaseSecret removes the Database's owner reference from the
// credentials Secret, so that it stays with the retained volumes, labels
// and all: a Database made again with the same name adopts it.
func (p *pass) releaseSecret(ctx context.Context) error {
	r, db := p.r, p.db
	name := names.SecretName(db)
	secret, err := r.secrets.Secrets(db.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	i := slices.IndexFunc(secret.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == db.UID })
	if i < 0 {
		return nil
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": fmt.Sprintf("/metadata/ownerReferences/%d/uid", i), "value": string(db.UID)},
		{"op": "remove", "path": fmt.Sprintf("/metadata/ownerReferences/%d", i)},
	})
	if err != nil {
		return err
	}
	if _, err := r.kube.CoreV1().Secrets(db.Namespace).Patch(ctx, name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing Secret %s: %w", name, err)
	}
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonSecretReleased,
		"Kept Secret %s with the volumes (deletionPolicy Retain): a Database made again with this name uses it", name)
	return nil
}
