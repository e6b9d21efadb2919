package backup

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// Target is where the backups of a Database are kept, and how its Jobs
// reach it. The backup volume (VolumeTarget) is the one target today: it
// works on every cluster. An S3-compatible store would be another, whose
// Jobs stream the dump to it and delete it there.
type Target interface {
	// Ensure makes the target ready to take db's backups.
	Ensure(ctx context.Context, db *dbv1alpha1.Database) error
	// Where is where b's file goes, as recorded in its status: the volume
	// and the path on it.
	Where(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine) (volume, path string)
	// BackupJob is the Job that takes b to the target with image.
	BackupJob(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine, image string) *batchv1ac.JobApplyConfiguration
	// Holds reports whether b's file may still be at the target.
	Holds(b *dbv1alpha1.DatabaseBackup) (bool, error)
	// DeleteJob is the Job that deletes b's file, run as uid.
	DeleteJob(b *dbv1alpha1.DatabaseBackup, uid int64) *batchv1ac.JobApplyConfiguration
}

// VolumeTarget keeps a Database's backups as files on its backup volume,
// the claim <name>-backups, which has no owner: it outlives the Database.
type VolumeTarget struct {
	client       kubernetes.Interface
	claims       corelisters.PersistentVolumeClaimLister
	fieldManager string
	created      *createdSet
}

var _ Target = (*VolumeTarget)(nil)

// Ensure creates the backup volume's claim when it is not there.
func (t *VolumeTarget) Ensure(ctx context.Context, db *dbv1alpha1.Database) error {
	name := names.BackupClaimName(db)
	if _, err := t.claims.PersistentVolumeClaims(db.Namespace).Get(name); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	key := db.Namespace + "/claim/" + name
	if t.created.has(key) {
		return nil // made by this process; the cache has not shown it yet
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := builder.Convert(builder.NewBackupClaim(db, db.Spec.Storage.Size), claim); err != nil {
		return err
	}
	_, err := t.client.CoreV1().PersistentVolumeClaims(db.Namespace).Create(ctx, claim, metav1.CreateOptions{FieldManager: t.fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the backup volume claim %s: %w", name, err)
	}
	t.created.add(key)
	return nil
}

// Where is the backup volume, and the file named after b on it.
func (t *VolumeTarget) Where(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine) (string, string) {
	return names.BackupClaimName(db), names.BackupFilePath(b.Name, e.Runtime().Backup.Extension)
}

// BackupJob writes the dump to the backup volume (builder.NewBackupJob).
func (t *VolumeTarget) BackupJob(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine, image string) *batchv1ac.JobApplyConfiguration {
	return builder.NewBackupJob(b, db, e, image)
}

// Holds reports whether b's volume is still there: when it is gone, the
// file went with it.
func (t *VolumeTarget) Holds(b *dbv1alpha1.DatabaseBackup) (bool, error) {
	if b.Status.Path == "" || b.Status.Volume == "" {
		return false, nil // never started: no file
	}
	_, err := t.claims.PersistentVolumeClaims(b.Namespace).Get(b.Status.Volume)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// DeleteJob deletes the file from the volume (builder.NewBackupDeleteJob).
func (t *VolumeTarget) DeleteJob(b *dbv1alpha1.DatabaseBackup, uid int64) *batchv1ac.JobApplyConfiguration {
	return builder.NewBackupDeleteJob(b, uid)
}

// jobObject is the Job to create from its apply configuration.
func jobObject(ac *batchv1ac.JobApplyConfiguration) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	return job, builder.Convert(ac, job)
}
