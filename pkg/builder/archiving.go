package builder

import (
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
)

// ArchiveFailureFile is the file, in the data directory, where the
// archive command writes why it last failed (objectstore.EnvArchiveFailureFile).
const ArchiveFailureFile = "dbc-archive-failure"

// DefaultArchiveTimeoutSeconds is spec.backup.continuous.archiveTimeoutSeconds
// when unset (the API's default).
const DefaultArchiveTimeoutSeconds = 300

// ArchiveDir is the directory of the store, under the bucket, of the
// Database db: <prefix>/<namespace>/<name>/<uid>. Its WAL is in
// objectstore.WALDir under it.
func ArchiveDir(db *dbv1alpha1.Database) string {
	return path.Join(db.Spec.Backup.ObjectStore.Prefix, objectstore.DatabaseDir(db.Namespace, db.Name, db.UID))
}

// WithArchiving makes the server of sts, a StatefulSet of NewStatefulSet,
// archive each completed file of its change log to db's object store
// (spec.backup.continuous), through the controller's binary that an init
// container of toolsImage copies in: the archive command is
// `controller objectstore wal-push`, which never writes over a file of
// other bytes. It does nothing for an engine that does not archive.
func WithArchiving(sts *appsv1ac.StatefulSetApplyConfiguration, db *dbv1alpha1.Database, e engine.Engine, toolsImage string) {
	a := e.Runtime().Archiving
	if a == nil || db.Spec.Backup == nil || db.Spec.Backup.Continuous == nil || db.Spec.Backup.ObjectStore == nil {
		return
	}
	s := db.Spec.Backup.ObjectStore
	timeout := int32(DefaultArchiveTimeoutSeconds)
	if t := db.Spec.Backup.Continuous.ArchiveTimeoutSeconds; t != nil {
		timeout = *t
	}
	spec := sts.Spec.Template.Spec
	var server *corev1ac.ContainerApplyConfiguration
	for i := range spec.Containers {
		if *spec.Containers[i].Name == e.Name() {
			server = &spec.Containers[i]
		}
	}
	if a.InitScript != "" && !hasInitContainer(spec, ReplicationContainer) {
		withArchivingInit(spec, server, a.InitScript)
	}
	// After the server's name, before its other settings: a replicated
	// server's cluster_name stays last, which ps shows.
	withServerArgs(server, a.Server, a.ServerArgs(toolsBinary+" objectstore wal-push "+a.CommandArg, timeout))
	server.
		// A Secret of the store that is missing must not keep the server
		// from starting: archiving fails then, saying so, and it serves.
		WithEnv(objectStoreEnv(s, archiveCAPath, true)...).
		WithEnv(
			corev1ac.EnvVar().WithName(objectstore.EnvPrefix).WithValue(ArchiveDir(db)),
			corev1ac.EnvVar().WithName(objectstore.EnvArchiveFailureFile).WithValue(ArchiveFailureFile),
		).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(toolsVolume).WithMountPath(toolsPath).WithReadOnly(true))
	if !hasInitContainer(spec, installToolsContainer) {
		// A restore from a store has put them in already.
		spec.InitContainers = append([]corev1ac.ContainerApplyConfiguration{*installTools(toolsImage)}, spec.InitContainers...)
		spec.WithVolumes(corev1ac.Volume().WithName(toolsVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	if v, m := objectStoreCA(s, archiveCAVolume, archiveCAPath, true); v != nil {
		server.WithVolumeMounts(m)
		spec.WithVolumes(v)
	}
}

// The init container of a server that archives and is not replicated,
// which lets base backups in (engine.Archiving.InitScript), and its
// first-init script's volume.
const (
	AllowReplicationContainer = "allow-replication"
	archivingScriptsVolume    = "archiving-scripts"
	archivingScriptsDir       = "/archiving-scripts"
)

// withArchivingInit runs script before every start of server, in an init
// container of its image with its environment and volumes, and the
// first-init directory to write into: the restore's, when the pod
// restores a dump, or else a directory of its own.
func withArchivingInit(spec *corev1ac.PodSpecApplyConfiguration, server *corev1ac.ContainerApplyConfiguration, script string) {
	scriptsVolume, scriptsDir := firstInitDir(spec, server, archivingScriptsVolume, archivingScriptsDir, hasVolume(spec, restoreScriptsVolume))
	env := append(append([]corev1ac.EnvVarApplyConfiguration(nil), server.Env...),
		*corev1ac.EnvVar().WithName("DBC_INITDB_DIR").WithValue(scriptsDir))
	var mounts []corev1ac.VolumeMountApplyConfiguration
	for _, m := range server.VolumeMounts {
		if *m.MountPath != restoreScriptsPath {
			mounts = append(mounts, m)
		}
	}
	mounts = append(mounts, *corev1ac.VolumeMount().WithName(scriptsVolume).WithMountPath(scriptsDir))
	init := corev1ac.Container().
		WithName(AllowReplicationContainer).
		WithImage(*server.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", script).
		WithSecurityContext(containerSecurity())
	init.Env, init.VolumeMounts = env, mounts
	spec.WithInitContainers(init)
}

// firstInitDir is the volume an init container writes the server's
// first-init scripts into, and the directory it mounts it at: the
// restore's, when the pod restores a dump; or else an emptyDir named
// volume, to mount at dir, which it adds to spec and mounts in server as
// its first-init directory.
func firstInitDir(spec *corev1ac.PodSpecApplyConfiguration, server *corev1ac.ContainerApplyConfiguration,
	volume, dir string, restoring bool) (string, string) {
	if restoring {
		return restoreScriptsVolume, restoreScriptsWorkDir
	}
	spec.WithVolumes(corev1ac.Volume().WithName(volume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	server.WithVolumeMounts(corev1ac.VolumeMount().WithName(volume).WithMountPath(restoreScriptsPath).WithReadOnly(true))
	return volume, dir
}

func hasVolume(spec *corev1ac.PodSpecApplyConfiguration, name string) bool {
	for _, v := range spec.Volumes {
		if v.Name != nil && *v.Name == name {
			return true
		}
	}
	return false
}

// ToolsImageOf is the tools image the pods of sts copy the controller's
// binary from, or "": a controller started without --tools-image goes on
// with it rather than restart the servers without archiving.
func ToolsImageOf(sts *appsv1.StatefulSet) string {
	if sts == nil {
		return ""
	}
	for _, c := range sts.Spec.Template.Spec.InitContainers {
		if c.Name == installToolsContainer {
			return c.Image
		}
	}
	return ""
}

func hasInitContainer(spec *corev1ac.PodSpecApplyConfiguration, name string) bool {
	for _, c := range spec.InitContainers {
		if c.Name != nil && *c.Name == name {
			return true
		}
	}
	return false
}
