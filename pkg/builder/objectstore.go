package builder

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
	"github.com/dbcontroller/database-controller/pkg/podtools"
)

// The keys of the Secret that spec.backup.objectStore.credentialsSecret names.
const (
	ObjectStoreAccessKeyIDKey     = "accessKeyID"
	ObjectStoreSecretAccessKeyKey = "secretAccessKey"
)

// Where a pod that reaches an object store finds the controller's binary,
// which an init container of the tools image (the controller's own)
// copies in, and the store's CA.
const (
	toolsVolume         = "dbc-tools"
	toolsPath           = "/dbc-tools"
	toolsBinary         = toolsPath + "/" + podtools.Binary
	objectStoreCAVolume = "dbc-objectstore-ca"
	objectStoreCAPath   = "/dbc-objectstore-ca"
	objectStoreCAFile   = "ca.crt"
	// The CA of the store the server archives to, which may not be the
	// store of the backup it restores.
	archiveCAVolume = "dbc-archive-ca"
	archiveCAPath   = "/dbc-archive-ca"
)

// installToolsContainer is the init container that copies the binary in.
const installToolsContainer = "install-tools"

// toolsUID runs the tools image alone (the Dockerfile's user).
const toolsUID = 65532

// installTools is the init container that copies the controller's binary
// from toolsImage into the tools volume (podtools.Install).
func installTools(toolsImage string) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(installToolsContainer).
		WithImage(toolsImage).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithArgs("install-tools", toolsPath).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(toolsVolume).WithMountPath(toolsPath)).
		WithSecurityContext(containerSecurity())
}

// objectStoreEnv is the environment of `controller objectstore` for the
// store s (package objectstore): the keys come from the Secret s names,
// never through an argument or the controller. Optional, a missing
// Secret or key does not keep the container from starting: the command
// then fails, saying so.
func objectStoreEnv(s *dbv1alpha1.ObjectStore, caPath string, optional bool) []*corev1ac.EnvVarApplyConfiguration {
	secret := func(key string) *corev1ac.EnvVarSourceApplyConfiguration {
		ref := corev1ac.SecretKeySelector().WithName(s.CredentialsSecret.Name).WithKey(key)
		if optional {
			ref.WithOptional(true)
		}
		return corev1ac.EnvVarSource().WithSecretKeyRef(ref)
	}
	env := []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName(objectstore.EnvEndpoint).WithValue(s.Endpoint),
		corev1ac.EnvVar().WithName(objectstore.EnvBucket).WithValue(s.Bucket),
	}
	if s.Region != "" {
		env = append(env, corev1ac.EnvVar().WithName(objectstore.EnvRegion).WithValue(s.Region))
	}
	if s.CA != nil {
		env = append(env, corev1ac.EnvVar().WithName(objectstore.EnvCAFile).WithValue(caPath+"/"+objectStoreCAFile))
	}
	return append(env,
		corev1ac.EnvVar().WithName(objectstore.EnvAccessKeyID).WithValueFrom(secret(ObjectStoreAccessKeyIDKey)),
		corev1ac.EnvVar().WithName(objectstore.EnvSecretAccessKey).WithValueFrom(secret(ObjectStoreSecretAccessKeyKey)),
	)
}

// objectStoreCA is the volume and the mount at path of s's CA, or nils;
// optional as objectStoreEnv.
func objectStoreCA(s *dbv1alpha1.ObjectStore, volume, path string, optional bool) (*corev1ac.VolumeApplyConfiguration, *corev1ac.VolumeMountApplyConfiguration) {
	if s.CA == nil {
		return nil, nil
	}
	key := s.CA.Key
	if key == "" {
		key = "ca.crt"
	}
	source := corev1ac.SecretVolumeSource().
		WithSecretName(s.CA.Name).
		WithItems(corev1ac.KeyToPath().WithKey(key).WithPath(objectStoreCAFile))
	if optional {
		source.WithOptional(true)
	}
	return corev1ac.Volume().WithName(volume).WithSecret(source),
		corev1ac.VolumeMount().WithName(volume).WithMountPath(path).WithReadOnly(true)
}

// NewObjectStoreBackupJob builds the Job that streams the dump of db's
// database to key in the store s (b's status), as NewBackupJob does to the
// volume: the engine's own tool from the Database's image writes to its
// standard output, which `controller objectstore put-output` uploads in
// parts with no copy on disk. A dump that fails leaves nothing under key.
// It ends with "size=<bytes>" in its termination message, or with the
// tool's (or the store's) last error line.
func NewObjectStoreBackupJob(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine, image, toolsImage string, s *dbv1alpha1.ObjectStore, key string) *batchv1ac.JobApplyConfiguration {
	rt := e.Runtime()
	env := append(dumpEnv(db, rt), corev1ac.EnvVar().WithName("OUT").WithValue("/dev/stdout"))
	return withServerVerification(objectStoreBackupJob(b, rt, image, toolsImage, s, key, "put-output", rt.Backup.Dump, env), db, e)
}

// NewBaseBackupJob builds the Job that streams a base backup of db's
// primary (through the client Service) to key in the store s, with the
// engine's tool (engine.Archiving.BaseBackup) from the Database's image,
// under `controller objectstore put-base-backup`: as
// NewObjectStoreBackupJob, and its termination message names the WAL
// range too ("size=<bytes> timeline=<t> start=<lsn> stop=<lsn>").
func NewBaseBackupJob(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine, image, toolsImage string, s *dbv1alpha1.ObjectStore, key string) *batchv1ac.JobApplyConfiguration {
	rt := e.Runtime()
	env := dumpEnv(db, rt)
	for _, v := range env {
		if *v.Name == "HOST" {
			v.WithValue(names.Host(db))
		}
	}
	env = append(env, corev1ac.EnvVar().WithName("DBC_BACKUP").WithValue(b.Name))
	return withServerVerification(objectStoreBackupJob(b, rt, image, toolsImage, s, key, "put-base-backup", rt.Archiving.BaseBackup, env), db, e)
}

// objectStoreBackupJob is the Job that runs command (a shell command) in
// image under `controller objectstore verb key`, with env.
func objectStoreBackupJob(b *dbv1alpha1.DatabaseBackup, rt *engine.Runtime, image, toolsImage string, s *dbv1alpha1.ObjectStore, key, verb, command string,
	env []*corev1ac.EnvVarApplyConfiguration) *batchv1ac.JobApplyConfiguration {
	// The command's own line for a tool that failed is "...: sh: exit
	// status N"; the line before it, the tool's, says why.
	script := fmt.Sprintf(`set -u
if ! %[1]s objectstore %[4]s %[2]s sh -c "$DBC_DUMP" >/tmp/size 2>/tmp/dump.err; then
  grep -v '^controller objectstore %[4]s: sh: ' /tmp/dump.err | tail -n 1 > /dev/termination-log
  cat /tmp/dump.err >&2
  exit 1
fi
cat /tmp/dump.err >&2
cat /tmp/size > /dev/termination-log
echo "backed up to %[2]s in bucket %[3]s"`, toolsBinary, shellQuote(key), shellQuote(s.Bucket), verb)
	env = append(append(env,
		corev1ac.EnvVar().WithName("DBC_DUMP").WithValue(command),
	), objectStoreEnv(s, objectStoreCAPath, false)...)
	container := corev1ac.Container().
		WithName(JobBackup).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", script).
		WithEnv(env...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(toolsVolume).WithMountPath(toolsPath).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
		).
		WithSecurityContext(containerSecurity())
	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(toolsVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}
	if v, m := objectStoreCA(s, objectStoreCAVolume, objectStoreCAPath, false); v != nil {
		container.WithVolumeMounts(m)
		volumes = append(volumes, v)
	}
	return backupJob(b, names.BackupJobName(b.Name), JobBackup).
		WithSpec(jobSpecOf(b, JobBackup, rt.UID, 2,
			jobPodSpec(rt.UID).WithInitContainers(installTools(toolsImage)).WithContainers(container).WithVolumes(volumes...)))
}

// verifyDataPath is where a verify Job's throw-away server keeps its data.
const verifyDataPath = "/verify/data"

// NewVerifyJob builds the Job that proves the base backup b of db
// restorable (spec.backup.verifyRestore): the engine's Verify script in
// the Database's image, with the controller's binary, the store's
// environment with the archive as its prefix, and a directory of its own
// for the data, which goes with the pod. key is b's file under the
// archive, from the WAL segment its WAL begins in. One retry: a store
// that did not answer once is not a backup that cannot be restored.
func NewVerifyJob(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine, image, toolsImage, key, from string) *batchv1ac.JobApplyConfiguration {
	rt := e.Runtime()
	s := b.Status.ObjectStore
	env := append(append(append(dumpEnv(db, rt),
		objectStoreEnv(s, objectStoreCAPath, false)...),
		baseFetchEnv(b.Status.BaseBackup.Archive, b.Name, key, from)...),
		corev1ac.EnvVar().WithName("PGDATA").WithValue(verifyDataPath),
	)
	container := corev1ac.Container().
		WithName(JobBackupVerify).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", rt.Archiving.Verify).
		WithEnv(env...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(toolsVolume).WithMountPath(toolsPath).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
			corev1ac.VolumeMount().WithName("verify").WithMountPath(path.Dir(verifyDataPath)),
		).
		WithSecurityContext(containerSecurity())
	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(toolsVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName("verify").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}
	if v, m := objectStoreCA(s, objectStoreCAVolume, objectStoreCAPath, false); v != nil {
		container.WithVolumeMounts(m)
		volumes = append(volumes, v)
	}
	return backupJob(b, names.BackupVerifyJobName(b.Name), JobBackupVerify).
		WithSpec(jobSpecOf(b, JobBackupVerify, rt.UID, 1,
			jobPodSpec(rt.UID).WithInitContainers(installTools(toolsImage)).WithContainers(container).WithVolumes(volumes...)))
}

// NewObjectStoreDeleteJob builds the Job that deletes b's file from its
// store with the tools image: the controller never reads the store's keys.
func NewObjectStoreDeleteJob(b *dbv1alpha1.DatabaseBackup, toolsImage string) *batchv1ac.JobApplyConfiguration {
	s := b.Status.ObjectStore
	container := corev1ac.Container().
		WithName(JobBackupDelete).
		WithImage(toolsImage).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithArgs("objectstore", "delete", b.Status.Path).
		WithEnv(objectStoreEnv(s, objectStoreCAPath, false)...).
		WithSecurityContext(containerSecurity())
	spec := jobPodSpec(toolsUID)
	if v, m := objectStoreCA(s, objectStoreCAVolume, objectStoreCAPath, false); v != nil {
		container.WithVolumeMounts(m)
		spec.WithVolumes(v)
	}
	// WithContainers copies the container: after its mounts.
	spec.WithContainers(container)
	return backupJob(b, names.BackupDeleteJobName(b.Name), JobBackupDelete).
		WithSpec(jobSpecOf(b, JobBackupDelete, toolsUID, 3, spec))
}

// The Job that prunes a Database's WAL archive: what it does, in
// LabelJob, and the first segment it keeps, in LabelWALKeptFrom.
const (
	JobWALPrune      = "wal-prune"
	LabelWALKeptFrom = "dbcontroller.io/wal-kept-from"
)

// WALPruneJobName is the name of the Job that prunes db's WAL archive.
func WALPruneJobName(db *dbv1alpha1.Database) string { return db.Name + "-wal-prune" }

// NewWALPruneJob builds the Job that deletes from db's WAL archive what
// lies before the segment first, which the oldest base backup kept needs
// (`controller objectstore wal-prune`), with the tools image: the
// controller never reads the store's keys.
func NewWALPruneJob(db *dbv1alpha1.Database, toolsImage, first string) *batchv1ac.JobApplyConfiguration {
	s := db.Spec.Backup.ObjectStore
	labels := names.Labels(db)
	labels[LabelJob] = JobWALPrune
	labels[LabelWALKeptFrom] = first
	container := corev1ac.Container().
		WithName(JobWALPrune).
		WithImage(toolsImage).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithArgs("objectstore", "wal-prune", first).
		WithEnv(objectStoreEnv(s, objectStoreCAPath, false)...).
		WithEnv(corev1ac.EnvVar().WithName(objectstore.EnvPrefix).WithValue(ArchiveDir(db))).
		WithSecurityContext(containerSecurity())
	spec := jobPodSpec(toolsUID)
	if v, m := objectStoreCA(s, objectStoreCAVolume, objectStoreCAPath, false); v != nil {
		container.WithVolumeMounts(m)
		spec.WithVolumes(v)
	}
	spec.WithContainers(container)
	return batchv1ac.Job(WALPruneJobName(db), db.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(3).
			WithActiveDeadlineSeconds(3600).
			WithTemplate(corev1ac.PodTemplateSpec().
				// Not the Database's selector labels: no Service sends
				// clients to it.
				WithLabels(map[string]string{names.LabelManagedBy: names.ManagedBy, LabelJob: JobWALPrune}).
				WithSpec(spec)))
}
