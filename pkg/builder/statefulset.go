package builder

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// Storage is the data volume a StatefulSet's claim template asks for.
type Storage struct {
	Size             resource.Quantity
	StorageClassName *string
}

// StorageOf is the storage a new StatefulSet for db asks for.
func StorageOf(db *dbv1alpha1.Database) Storage {
	return Storage{Size: db.Spec.Storage.Size, StorageClassName: db.Spec.Storage.StorageClassName}
}

// StorageOfStatefulSet is the storage an existing StatefulSet asks for.
// volumeClaimTemplates cannot change after creation, so the desired
// StatefulSet keeps what the observed one has.
func StorageOfStatefulSet(sts *appsv1.StatefulSet) (Storage, bool) {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name == names.DataVolume {
			return Storage{Size: t.Spec.Resources.Requests[corev1.ResourceStorage], StorageClassName: t.Spec.StorageClassName}, true
		}
	}
	return Storage{}, false
}

// serverEnv is the environment the engine's image reads: the credentials
// Secret's keys, the engine's fixed values and those of spec.version.
func serverEnv(db *dbv1alpha1.Database, p *engine.Runtime) []*corev1ac.EnvVarApplyConfiguration {
	env := make([]*corev1ac.EnvVarApplyConfiguration, 0, len(p.SecretEnv)+len(p.StaticEnv)+len(p.FieldEnv))
	for _, v := range p.SecretEnv {
		env = append(env, corev1ac.EnvVar().WithName(v.Name).WithValueFrom(
			corev1ac.EnvVarSource().WithSecretKeyRef(
				corev1ac.SecretKeySelector().WithName(names.SecretName(db)).WithKey(v.Key))))
	}
	static := p.StaticEnv
	if p.VersionEnv != nil {
		static = append(slices.Clip(static), p.VersionEnv(db.Spec.Version)...)
	}
	for _, v := range static {
		env = append(env, corev1ac.EnvVar().WithName(v.Name).WithValue(v.Value))
	}
	return env
}

// resourceRequirements is r as an apply configuration: nil when r asks
// for nothing.
func resourceRequirements(r *corev1.ResourceRequirements) *corev1ac.ResourceRequirementsApplyConfiguration {
	if r == nil || (len(r.Requests) == 0 && len(r.Limits) == 0) {
		return nil
	}
	res := corev1ac.ResourceRequirements()
	if len(r.Requests) > 0 {
		res.WithRequests(r.Requests)
	}
	if len(r.Limits) > 0 {
		res.WithLimits(r.Limits)
	}
	return res
}

// startupPeriodSeconds is how often the startup probe runs.
const startupPeriodSeconds = 10

// NewStatefulSet builds the StatefulSet that runs the database server.
// With a restore source, its pods first initialise their data from that
// backup (see withRestore). Replicated, its servers run as one primary and
// replicas that stream from it (see withReplication).
func NewStatefulSet(db *dbv1alpha1.Database, e engine.Engine, image string, storage Storage, restore *RestoreSource, replicated bool) *appsv1ac.StatefulSetApplyConfiguration {
	p := e.Runtime()
	replicas := db.Spec.DesiredReplicas()
	whenDeleted := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if !db.Spec.Retains() {
		whenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}

	env := serverEnv(db, p)
	for _, v := range p.FieldEnv {
		env = append(env, corev1ac.EnvVar().WithName(v.Name).WithValueFrom(
			corev1ac.EnvVarSource().WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath(v.FieldPath))))
	}

	dataMount := corev1ac.VolumeMount().WithName(names.DataVolume).WithMountPath(p.DataPath)
	mounts := []*corev1ac.VolumeMountApplyConfiguration{dataMount}
	volumes := make([]*corev1ac.VolumeApplyConfiguration, 0, len(p.ScratchPaths))
	for i, path := range p.ScratchPaths {
		name := fmt.Sprintf("scratch-%d", i)
		mounts = append(mounts, corev1ac.VolumeMount().WithName(name).WithMountPath(path))
		volumes = append(volumes, corev1ac.Volume().WithName(name).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}

	container := corev1ac.Container().
		WithName(e.Name()).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithPorts(corev1ac.ContainerPort().WithName(p.PortName).WithContainerPort(p.Port).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(env...).
		WithVolumeMounts(mounts...).
		// The startup probe holds back liveness and readiness until the
		// server first serves, for as long as a first init or the first
		// start after an upgrade may take.
		WithStartupProbe(corev1ac.Probe().
			WithExec(corev1ac.ExecAction().WithCommand(p.ReadinessCommand...)).
			WithPeriodSeconds(startupPeriodSeconds).
			WithTimeoutSeconds(p.ProbeTimeoutSeconds).
			WithSuccessThreshold(1).
			WithFailureThreshold(max(1, p.StartupSeconds/startupPeriodSeconds))).
		WithReadinessProbe(corev1ac.Probe().
			WithExec(corev1ac.ExecAction().WithCommand(p.ReadinessCommand...)).
			WithPeriodSeconds(10).
			WithTimeoutSeconds(p.ProbeTimeoutSeconds).
			WithSuccessThreshold(1).
			WithFailureThreshold(3)).
		// Liveness asks only whether the server still listens: a server
		// that is busy but alive is not restarted.
		WithLivenessProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(p.PortName))).
			WithPeriodSeconds(10).
			WithTimeoutSeconds(5).
			WithSuccessThreshold(1).
			WithFailureThreshold(6)).
		WithSecurityContext(containerSecurity())
	if res := resourceRequirements(db.Spec.Resources); res != nil {
		container.WithResources(res)
	}

	podSpec := corev1ac.PodSpec().
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(p.UID).
			WithRunAsGroup(p.UID).
			WithFSGroup(p.UID).
			WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumes(volumes...)
	update := appsv1.RollingUpdateStatefulSetStrategyType
	if replicated && p.Replication != nil {
		withReplication(podSpec, container, db, e, image, env, mounts, restore != nil)
		// The controller rolls a replicated Database out itself: replicas
		// first, then a switchover, so that the primary restarts last, once.
		update = appsv1.OnDeleteStatefulSetStrategyType
	}
	switch {
	case restore != nil && restore.Base != nil:
		withBaseRestore(podSpec, container, e, image, env, mounts, restore)
	case restore != nil:
		withRestore(podSpec, container, e, image, env, dataMount, restore)
	}
	podSpec.WithContainers(container)
	withScheduling(podSpec, db, replicated && p.Replication != nil)
	podLabels, podAnnotations := podTemplateMetadata(db)
	template := corev1ac.PodTemplateSpec().WithLabels(podLabels).WithSpec(podSpec)
	if len(podAnnotations) > 0 {
		template.WithAnnotations(podAnnotations)
	}

	claim := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: storage.Size}))
	if storage.StorageClassName != nil {
		claim.WithStorageClassName(*storage.StorageClassName)
	}

	return appsv1ac.StatefulSet(names.StatefulSetName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(replicas).
			WithServiceName(names.HeadlessServiceName(db)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(names.SelectorLabels(db))).
			WithPodManagementPolicy(appsv1.OrderedReadyPodManagement).
			WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(update)).
			WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
				WithWhenDeleted(whenDeleted).
				WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)).
			WithTemplate(template).
			// Built without apiVersion and kind, which the API server does not
			// keep on claim templates: they would read back as drift.
			WithVolumeClaimTemplates((&corev1ac.PersistentVolumeClaimApplyConfiguration{}).
				WithName(names.DataVolume).
				WithLabels(names.Labels(db)).
				WithSpec(claim)))
}
