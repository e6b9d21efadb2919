package builder

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// ReplicationContainer is the replication's init container; the other
// names are its first-init script's volume.
const (
	ReplicationContainer     = "replication"
	replicationScriptsVolume = "replication-scripts"
	replicationScriptsDir    = "/replication-scripts"
)

// withReplication runs the server as a member of a replicated Database: the
// engine's replication settings as the server's arguments, and before every
// start an init container of the same image that clones, rejoins or leaves
// the data as it is (engine.Replication.InitScript). The pods get no API
// access: they learn the primary by asking the client Service, which routes
// only to the pod the controller labelled primary. The init container also
// writes the first init's script that allows replication connections, into
// the first-init directory: the restore's, when the Database restores.
func withReplication(spec *corev1ac.PodSpecApplyConfiguration, server *corev1ac.ContainerApplyConfiguration,
	db *dbv1alpha1.Database, e engine.Engine, image string, env []*corev1ac.EnvVarApplyConfiguration,
	mounts []*corev1ac.VolumeMountApplyConfiguration, restoring bool) {
	repl := e.Runtime().Replication
	podEnv := []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(
			corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name"))),
		corev1ac.EnvVar().WithName("DBC_PRIMARY_HOST").WithValue(names.Host(db)),
	}
	// A replica whose server keeps failing to start is seeded again by the
	// controller: the end of its log is the evidence it reports.
	server.WithEnv(podEnv...).WithArgs(repl.ServerArgs...).WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError)
	if len(repl.ServerCommand) > 0 {
		server.WithCommand(repl.ServerCommand...)
	}
	if len(repl.PreStop) > 0 {
		server.WithLifecycle(corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().
			WithExec(corev1ac.ExecAction().WithCommand(repl.PreStop...))))
	}

	scriptsVolume, scriptsDir := firstInitDir(spec, server, replicationScriptsVolume, replicationScriptsDir, restoring)
	initEnv := append(append(append([]*corev1ac.EnvVarApplyConfiguration(nil), env...), podEnv...),
		corev1ac.EnvVar().WithName("DBC_INITDB_DIR").WithValue(scriptsDir))
	initMounts := append(append([]*corev1ac.VolumeMountApplyConfiguration(nil), mounts...),
		corev1ac.VolumeMount().WithName(scriptsVolume).WithMountPath(scriptsDir))
	spec.WithInitContainers(corev1ac.Container().
		WithName(ReplicationContainer).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", repl.InitScript).
		WithEnv(initEnv...).
		WithVolumeMounts(initMounts...).
		WithSecurityContext(containerSecurity()))
}
