package backup

import (
	"context"
	"fmt"
	"path"

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
	"github.com/dbcontroller/database-controller/pkg/objectstore"
)

// Target is where the backups of a Database are kept, and how its Jobs
// reach it: the backup volume (VolumeTarget), which works on every
// cluster, or an S3-compatible store (StoreTarget), whose Jobs stream the
// dump to it and delete it there.
type Target interface {
	// Unusable says why the target cannot take backups, or "".
	Unusable() string
	// Ensure makes the target ready to take db's backups.
	Ensure(ctx context.Context, db *dbv1alpha1.Database) error
	// Record writes where b's file goes into its status st.
	Record(st *dbv1alpha1.DatabaseBackupStatus, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine)
	// BackupJob is the Job that takes b, whose status is recorded, to the
	// target with image.
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
	if t.created.Has(key) {
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
	t.created.Put(key, struct{}{})
	return nil
}

// Unusable is "": a volume can always be asked for.
func (t *VolumeTarget) Unusable() string { return "" }

// Record records the backup volume, and the file named after b on it.
func (t *VolumeTarget) Record(st *dbv1alpha1.DatabaseBackupStatus, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine) {
	st.Volume, st.Path, st.ObjectStore = names.BackupClaimName(db), names.BackupFilePath(b.Name, e.Runtime().Backup.Extension), nil
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

// StoreTarget keeps a Database's backups in the bucket of
// spec.backup.objectStore, each under
// <prefix>/<namespace>/<name>/<uid>/dumps/: a Database made again under a
// deleted one's name never shares a file with it. Its Jobs run the
// controller's binary from toolsImage; the controller never reads the
// store's keys.
type StoreTarget struct {
	toolsImage string
}

var _ Target = (*StoreTarget)(nil)

// Unusable says so when the controller has no tools image.
func (t *StoreTarget) Unusable() string {
	if t.toolsImage == "" {
		return "spec.backup.objectStore needs the controller's own image in its pods, and this controller runs without --tools-image: start it with --tools-image=<its image>"
	}
	return ""
}

// Ensure does nothing: the bucket must exist, and nothing else is made.
func (t *StoreTarget) Ensure(context.Context, *dbv1alpha1.Database) error { return nil }

// Record records the store and the key of b's file in it, by the method
// recorded in st: a dump under dumps/, a base backup under base/, with the
// directory of the WAL archive it restores with.
func (t *StoreTarget) Record(st *dbv1alpha1.DatabaseBackupStatus, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine) {
	s := db.Spec.Backup.ObjectStore.DeepCopy()
	dir := path.Join(s.Prefix, objectstore.DatabaseDir(db.Namespace, db.Name, db.UID))
	st.Volume, st.ObjectStore = "", s
	st.Path = path.Join(dir, objectstore.DumpsDir, names.BackupFilePath(b.Name, e.Runtime().Backup.Extension))
	if st.Method == dbv1alpha1.BackupMethodBaseBackup {
		st.Path = path.Join(dir, objectstore.BaseDir, names.BackupFilePath(b.Name, "tar"))
		st.BaseBackup = &dbv1alpha1.BaseBackupStatus{Archive: builder.ArchiveDir(db)}
	}
}

// BackupJob streams the dump, or the base backup, to the store
// (builder.NewObjectStoreBackupJob, builder.NewBaseBackupJob).
func (t *StoreTarget) BackupJob(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine, image string) *batchv1ac.JobApplyConfiguration {
	if b.Status.Method == dbv1alpha1.BackupMethodBaseBackup {
		return builder.NewBaseBackupJob(b, db, e, image, t.toolsImage, b.Status.ObjectStore, b.Status.Path)
	}
	return builder.NewObjectStoreBackupJob(b, db, e, image, t.toolsImage, b.Status.ObjectStore, b.Status.Path)
}

// Holds reports whether b was ever started: the store outlives the
// cluster, so a file there may always be.
func (t *StoreTarget) Holds(b *dbv1alpha1.DatabaseBackup) (bool, error) {
	return b.Status.ObjectStore != nil && b.Status.Path != "", nil
}

// DeleteJob deletes the file from the store (builder.NewObjectStoreDeleteJob).
func (t *StoreTarget) DeleteJob(b *dbv1alpha1.DatabaseBackup, _ int64) *batchv1ac.JobApplyConfiguration {
	return builder.NewObjectStoreDeleteJob(b, t.toolsImage)
}

// jobObject is the Job to create from its apply configuration.
func jobObject(ac *batchv1ac.JobApplyConfiguration) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	return job, builder.Convert(ac, job)
}
