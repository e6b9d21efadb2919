package builder

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
)

// What the Jobs of backups do, in LabelJob.
const (
	JobBackup       = "backup"
	JobBackupDelete = "backup-delete"
	JobBackupVerify = "backup-verify"
)

// backupMountPath is where a backup's Job mounts the backup volume.
const backupMountPath = "/backups"

// NewBackupClaim builds the backup volume's claim. It has no owner: the
// backups outlive the Database. Its size is spec.backup.storage.size, or
// defaultSize.
func NewBackupClaim(db *dbv1alpha1.Database, defaultSize resource.Quantity) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	size := defaultSize
	spec := corev1ac.PersistentVolumeClaimSpec().WithAccessModes(corev1.ReadWriteOnce)
	if b := db.Spec.Backup; b != nil {
		if b.Storage.Size != nil {
			size = *b.Storage.Size
		}
		if b.Storage.StorageClassName != nil {
			spec.WithStorageClassName(*b.Storage.StorageClassName)
		}
	}
	spec.WithResources(corev1ac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
	labels := names.BackupLabels(db.Name)
	labels[names.LabelVolume] = names.VolumeBackup
	return corev1ac.PersistentVolumeClaim(names.BackupClaimName(db), db.Namespace).
		WithLabels(labels).
		WithSpec(spec)
}

// backupOwner makes b the controller of its Jobs: deleting it deletes them.
func backupOwner(b *dbv1alpha1.DatabaseBackup) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(dbv1alpha1.SchemeGroupVersion.String()).
		WithKind("DatabaseBackup").
		WithName(b.Name).
		WithUID(b.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// NewBackupJob builds the Job that dumps db's database to the backup
// volume with the engine's own tool from the Database's image, as the
// credentials Secret's user, from names.BackupSourcePod (a streaming replica
// of a replicated Database) through the headless Service.
// It writes the file under a temporary name and renames it once complete,
// and ends with "size=<bytes>" in its termination message, or with the
// tool's last error line.
func NewBackupJob(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine, image string) *batchv1ac.JobApplyConfiguration {
	rt := e.Runtime()
	file := backupMountPath + "/" + names.BackupFilePath(b.Name, rt.Backup.Extension)
	script := fmt.Sprintf(`set -u
OUT=%[1]s.partial
rm -f "$OUT"
if ! ( %[2]s ) 2>/tmp/dump.err; then
  tail -n 1 /tmp/dump.err > /dev/termination-log
  cat /tmp/dump.err >&2
  rm -f "$OUT"
  exit 1
fi
cat /tmp/dump.err >&2
mv "$OUT" %[1]s
echo "size=$(wc -c < %[1]s)" > /dev/termination-log
echo "backed up to %[1]s"`, shellQuote(file), rt.Backup.Dump)
	container := toolContainer(JobBackup, image, script).WithEnv(dumpEnv(db, rt)...)
	return withServerVerification(backupJob(b, names.BackupJobName(b.Name), JobBackup).
		WithSpec(backupJobSpec(b, JobBackup, rt.UID, names.BackupClaimName(db), container, 2)), db, e)
}

// dumpEnv is what a backup's dump tool reads: the server of
// names.BackupSourcePod through the headless Service, and the credentials
// Secret's user, password and database.
func dumpEnv(db *dbv1alpha1.Database, rt *engine.Runtime) []*corev1ac.EnvVarApplyConfiguration {
	return clientEnv(db, rt, fmt.Sprintf("%s.%s.%s.svc", names.BackupSourcePod(db), names.HeadlessServiceName(db), db.Namespace))
}

// clientEnv is what a Job's client tool reads: the server at host, and the
// credentials Secret's user, password and database.
func clientEnv(db *dbv1alpha1.Database, rt *engine.Runtime, host string) []*corev1ac.EnvVarApplyConfiguration {
	secret := func(key string) *corev1ac.EnvVarSourceApplyConfiguration {
		return corev1ac.EnvVarSource().WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(names.SecretName(db)).WithKey(key))
	}
	return []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName("HOME").WithValue("/tmp"),
		corev1ac.EnvVar().WithName("HOST").WithValue(host),
		corev1ac.EnvVar().WithName("PORT").WithValue(strconv.Itoa(int(rt.Port))),
		corev1ac.EnvVar().WithName("USERNAME").WithValueFrom(secret(engine.SecretKeyUsername)),
		corev1ac.EnvVar().WithName("PASSWORD").WithValueFrom(secret(engine.SecretKeyPassword)),
		corev1ac.EnvVar().WithName("DATABASE").WithValueFrom(secret(engine.SecretKeyDatabase)),
	}
}

// NewBackupDeleteJob builds the Job that deletes b's file from its volume,
// with the image that wrote it, as the user that wrote it (uid).
func NewBackupDeleteJob(b *dbv1alpha1.DatabaseBackup, uid int64) *batchv1ac.JobApplyConfiguration {
	file := shellQuote(backupMountPath + "/" + b.Status.Path)
	script := fmt.Sprintf(`rm -f %[1]s %[1]s.partial && echo deleted %[1]s`, file)
	container := toolContainer(JobBackupDelete, b.Status.Image, script)
	return backupJob(b, names.BackupDeleteJobName(b.Name), JobBackupDelete).
		WithSpec(backupJobSpec(b, JobBackupDelete, uid, b.Status.Volume, container, 3))
}

func toolContainer(name, image, script string) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(name).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", script).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("backups").WithMountPath(backupMountPath),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
		).
		WithSecurityContext(containerSecurity())
}

// backupJob is the metadata of a backup's Job: b's labels and b as its controller.
func backupJob(b *dbv1alpha1.DatabaseBackup, name, job string) *batchv1ac.JobApplyConfiguration {
	return batchv1ac.Job(name, b.Namespace).
		WithLabels(backupJobLabels(b, job)).
		WithOwnerReferences(backupOwner(b))
}

// backupJobLabels label a backup's Job and its pod: the Database's
// instance, what the Job does, and which backup it is for.
func backupJobLabels(b *dbv1alpha1.DatabaseBackup, job string) map[string]string {
	labels := names.BackupLabels(b.Spec.Database)
	labels[LabelJob] = job
	labels[names.LabelBackup] = names.BackupJobName(b.Name)
	return labels
}

// backupJobSpec is the spec of a backup's Job: its pod carries the
// backup's labels but not the Database's selector, so that no Service
// sends clients to it.
func backupJobSpec(b *dbv1alpha1.DatabaseBackup, job string, uid int64, claim string, container *corev1ac.ContainerApplyConfiguration, backoff int32) *batchv1ac.JobSpecApplyConfiguration {
	return jobSpecOf(b, job, uid, backoff, jobPodSpec(uid).
		WithContainers(container).
		WithVolumes(
			corev1ac.Volume().WithName("backups").WithPersistentVolumeClaim(
				corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(claim)),
			corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		))
}

// jobSpecOf is the spec of a backup's Job whose pod, run as uid, is spec.
func jobSpecOf(b *dbv1alpha1.DatabaseBackup, job string, uid int64, backoff int32, spec *corev1ac.PodSpecApplyConfiguration) *batchv1ac.JobSpecApplyConfiguration {
	return batchv1ac.JobSpec().
		// The Job controller retries a failed pod after 10 s, 20 s, ...
		WithBackoffLimit(backoff).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(backupJobLabels(b, job)).
			WithSpec(withFSGroup(spec, uid)))
}

// withFSGroup gives the pod's volumes to group uid, so that it can write
// the backup volume.
func withFSGroup(spec *corev1ac.PodSpecApplyConfiguration, uid int64) *corev1ac.PodSpecApplyConfiguration {
	spec.SecurityContext.WithFSGroup(uid).WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch)
	return spec
}

// ParseBackupTerminationMessage reads the size a backup Job reports.
func ParseBackupTerminationMessage(msg string) (int64, bool) {
	v, ok := strings.CutPrefix(strings.TrimSpace(msg), "size=")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil && n >= 0
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// RestoreSource is the backup a new Database's pods initialise their
// data from: its DatabaseBackup, the claim and path of its file, and the
// name of the database it dumped.
type RestoreSource struct {
	Backup         string
	Claim          string
	Path           string
	SourceDatabase string
	// ObjectStore, when set, is the store that holds the file under the
	// key Path (and Claim is empty); an init container of ToolsImage
	// brings the controller's binary, which fetches it.
	ObjectStore *dbv1alpha1.ObjectStore
	ToolsImage  string
	// Base, when set, says the file is a base backup, which the pod
	// recovers with the WAL of an archive in ObjectStore.
	Base *BaseRestore
}

// BaseRestore is what the restore of a base backup needs besides its
// file: the archive, and where to recover to.
type BaseRestore struct {
	// Archive is the store's directory of the archive
	// (BaseBackupStatus.Archive); Key is the backup's key under it.
	Archive, Key string
	// From is the name of the WAL segment the backup's WAL begins in.
	From string
	// Target is the server options that set the point to recover to, ""
	// for the latest point the archive holds; TargetText says it in words.
	Target, TargetText string
}

// The restore's parts of a StatefulSet's pod.
const (
	restoreContainer      = "restore"
	restoreScriptsVolume  = "restore-scripts"
	restoreBackupVolume   = "restore-backup"
	restoreScriptsPath    = "/docker-entrypoint-initdb.d"
	restoreBackupPath     = "/restore"
	restoreScriptName     = "50-restore.sh"
	restoreScriptsWorkDir = "/restore-scripts"
)

// Restores reports whether sts's pods restore a backup (see withRestore).
func Restores(sts *appsv1.StatefulSet) bool {
	if sts == nil {
		return false
	}
	for _, c := range sts.Spec.Template.Spec.InitContainers {
		if c.Name == restoreContainer {
			return true
		}
	}
	return false
}

// BaseRestoring is the base backup sts's pods restore, or "": the one the
// controller picked for a restore to a point in time, while it restores.
func BaseRestoring(sts *appsv1.StatefulSet) string {
	if sts == nil {
		return ""
	}
	for _, c := range sts.Spec.Template.Spec.InitContainers {
		if c.Name != restoreContainer {
			continue
		}
		// A dump's restore has no key in a store.
		if _, ok := envValue(c.Env, "DBC_RESTORE_KEY"); ok {
			name, _ := envValue(c.Env, "DBC_RESTORE_BACKUP")
			return name
		}
	}
	return ""
}

// envValue is the value of the variable name in env, ok false when env
// does not set it.
func envValue(env []corev1.EnvVar, name string) (string, bool) {
	for _, v := range env {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// baseFetchEnv is what the engine's scripts that fetch a base backup
// (engine.Archiving.Restore and Verify) read besides the store's
// environment: the archive as the store's prefix, the controller's
// binary, and the backup's name, key under the archive, and first WAL
// segment.
func baseFetchEnv(archive, backup, key, from string) []*corev1ac.EnvVarApplyConfiguration {
	return []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName(objectstore.EnvPrefix).WithValue(archive),
		corev1ac.EnvVar().WithName("DBC_TOOLS").WithValue(toolsBinary),
		corev1ac.EnvVar().WithName("DBC_RESTORE_BACKUP").WithValue(backup),
		corev1ac.EnvVar().WithName("DBC_RESTORE_KEY").WithValue(key),
		corev1ac.EnvVar().WithName("DBC_RESTORE_FROM").WithValue(from),
	}
}

// withBaseRestore makes the first pod initialise its data from the base
// backup src, in an init container of the Database's image that runs the
// engine's restore (engine.Archiving.Restore) with the server's
// environment and volumes, the store's environment for the archive, and
// the controller's binary: the server starts only once the data is
// recovered. The first-init directory a replicated pod's init container
// writes into is there too, empty of any restore script.
func withBaseRestore(spec *corev1ac.PodSpecApplyConfiguration, server *corev1ac.ContainerApplyConfiguration,
	e engine.Engine, image string, env []*corev1ac.EnvVarApplyConfiguration, mounts []*corev1ac.VolumeMountApplyConfiguration,
	src *RestoreSource) {
	b := src.Base
	initEnv := append(append(append(append([]*corev1ac.EnvVarApplyConfiguration(nil), env...),
		objectStoreEnv(src.ObjectStore, objectStoreCAPath, false)...),
		baseFetchEnv(b.Archive, src.Backup, b.Key, b.From)...),
		corev1ac.EnvVar().WithName("DBC_RESTORE_TARGET").WithValue(b.Target),
		corev1ac.EnvVar().WithName("DBC_RESTORE_TARGET_TEXT").WithValue(b.TargetText),
		corev1ac.EnvVar().WithName("DBC_RESTORE_SOURCE_DATABASE").WithValue(src.SourceDatabase),
	)
	initMounts := append(append([]*corev1ac.VolumeMountApplyConfiguration(nil), mounts...),
		corev1ac.VolumeMount().WithName(toolsVolume).WithMountPath(toolsPath).WithReadOnly(true))
	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(toolsVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName(restoreScriptsVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}
	if v, m := objectStoreCA(src.ObjectStore, objectStoreCAVolume, objectStoreCAPath, false); v != nil {
		initMounts = append(initMounts, m)
		volumes = append(volumes, v)
	}
	spec.WithInitContainers(installTools(src.ToolsImage), corev1ac.Container().
		WithName(restoreContainer).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", e.Runtime().Archiving.Restore).
		WithEnv(initEnv...).
		WithVolumeMounts(initMounts...).
		WithSecurityContext(containerSecurity())).
		WithVolumes(volumes...)
}

// withRestore makes the pod initialise its data from src: an init
// container first refuses a data directory that is initialised but was
// not restored to its end (the entrypoint would serve it as it is), and
// otherwise writes the engine's restore script where the image's first-init
// hook runs it; the server's container reads the backup's file from its
// claim, read-only. The restore script marks the data directory when done.
func withRestore(spec *corev1ac.PodSpecApplyConfiguration, server *corev1ac.ContainerApplyConfiguration,
	e engine.Engine, image string, env []*corev1ac.EnvVarApplyConfiguration, dataMount *corev1ac.VolumeMountApplyConfiguration,
	src *RestoreSource) {
	tool := e.Runtime().Backup
	marker := tool.DataDirectory + "/" + engine.RestoredMarker
	script := tool.Restore + "\ntouch " + marker + "\necho \"restored backup " + src.Backup + "\"\n"
	guard := fmt.Sprintf(`if %s && [ ! -f %s ]; then
  echo "the data directory was initialised but the restore of backup %s did not complete; delete this pod's claim and the pod to restore again" | tee /dev/termination-log >&2
  exit 1
fi
printf '%%s' "$DBC_RESTORE_SCRIPT" > %s/%s`, tool.Initialised, marker, src.Backup, restoreScriptsWorkDir, restoreScriptName)
	file := restoreBackupPath + "/" + src.Path
	if src.ObjectStore != nil {
		// The file comes from the store into the pod's scratch space, once:
		// not again once the data directory is initialised, and deleted
		// when the restore is done.
		file = restoreBackupPath + "/" + path.Base(src.Path)
		script += "rm -f \"$DBC_RESTORE_FILE\"\n"
		guard += fmt.Sprintf(`
if ! %[1]s; then
  if ! %[2]s objectstore get %[3]s > %[4]s.partial 2>/tmp/fetch.err; then
    echo "could not fetch backup %[5]s from bucket %[6]s: $(tail -n 1 /tmp/fetch.err)" | tee /dev/termination-log >&2
    rm -f %[4]s.partial
    exit 1
  fi
  mv %[4]s.partial %[4]s
fi`, tool.Initialised, toolsBinary, shellQuote(src.Path), shellQuote(file), src.Backup, shellQuote(src.ObjectStore.Bucket))
	}
	initEnv := append(append([]*corev1ac.EnvVarApplyConfiguration(nil), env...),
		corev1ac.EnvVar().WithName("DBC_RESTORE_SCRIPT").WithValue(script))
	initMounts := []*corev1ac.VolumeMountApplyConfiguration{dataMount,
		corev1ac.VolumeMount().WithName(restoreScriptsVolume).WithMountPath(restoreScriptsWorkDir)}
	backupVolume := corev1ac.Volume().WithName(restoreBackupVolume).WithPersistentVolumeClaim(
		corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(src.Claim).WithReadOnly(true))
	// The server reads the file from the claim, read-only, or from the
	// scratch space, which it empties once restored.
	backupMount := corev1ac.VolumeMount().WithName(restoreBackupVolume).WithMountPath(restoreBackupPath)
	if src.ObjectStore == nil {
		backupMount.WithReadOnly(true)
	}
	var extraVolumes []*corev1ac.VolumeApplyConfiguration
	var initContainers []*corev1ac.ContainerApplyConfiguration
	if s := src.ObjectStore; s != nil {
		initEnv = append(initEnv, objectStoreEnv(s, objectStoreCAPath, false)...)
		initMounts = append(initMounts,
			corev1ac.VolumeMount().WithName(toolsVolume).WithMountPath(toolsPath).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(restoreBackupVolume).WithMountPath(restoreBackupPath),
			corev1ac.VolumeMount().WithName("dbc-restore-tmp").WithMountPath("/tmp"))
		backupVolume = corev1ac.Volume().WithName(restoreBackupVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource())
		extraVolumes = append(extraVolumes,
			corev1ac.Volume().WithName(toolsVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			corev1ac.Volume().WithName("dbc-restore-tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
		if v, m := objectStoreCA(s, objectStoreCAVolume, objectStoreCAPath, false); v != nil {
			initMounts = append(initMounts, m)
			extraVolumes = append(extraVolumes, v)
		}
		initContainers = append(initContainers, installTools(src.ToolsImage))
	}
	initContainers = append(initContainers, corev1ac.Container().
		WithName(restoreContainer).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", guard).
		WithEnv(initEnv...).
		WithVolumeMounts(initMounts...).
		WithSecurityContext(containerSecurity()))
	server.WithEnv(
		corev1ac.EnvVar().WithName("DBC_RESTORE_FILE").WithValue(file),
		corev1ac.EnvVar().WithName("DBC_RESTORE_SOURCE_DATABASE").WithValue(src.SourceDatabase),
	).WithVolumeMounts(
		corev1ac.VolumeMount().WithName(restoreScriptsVolume).WithMountPath(restoreScriptsPath).WithReadOnly(true),
		backupMount,
	)
	spec.WithInitContainers(initContainers...).WithVolumes(
		corev1ac.Volume().WithName(restoreScriptsVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		backupVolume,
	).WithVolumes(extraVolumes...)
}
