package builder

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// What the Jobs of a major upgrade do (LabelJob), and their containers.
const (
	JobMajorUpgrade      = "major-upgrade"
	JobAfterMajorUpgrade = "after-major-upgrade"
	copyContainer        = "copy-old-version"
	upgradeContainer     = "upgrade"
	upgradeVolume        = "upgrade"
)

// MajorUpgradeJobName is the name of the Job that upgrades db's data to
// version to; AfterMajorUpgradeJobName, of the Job that runs after it.
func MajorUpgradeJobName(db *dbv1alpha1.Database, to string) string {
	return db.Name + "-upgrade-" + strings.ReplaceAll(to, ".", "-")
}

// AfterMajorUpgradeJobName: see MajorUpgradeJobName.
func AfterMajorUpgradeJobName(db *dbv1alpha1.Database, to string) string {
	return db.Name + "-after-upgrade-" + strings.ReplaceAll(to, ".", "-")
}

// upgradeJobLabels label a major upgrade's Job and its pod: the Database's
// instance (its pods' index finds them) and what the Job does, but not the
// Database's selector, so that no Service sends clients to it.
func upgradeJobLabels(db *dbv1alpha1.Database, job string) map[string]string {
	return map[string]string{names.LabelManagedBy: names.ManagedBy, names.LabelInstance: db.Name, LabelJob: job}
}

// NewMajorUpgradeJob builds the Job that upgrades the data of db's first
// replica (claim), stopped, from the version of fromImage to that of
// toImage: the engine's Copy runs in fromImage and leaves the old
// version's programs in an emptyDir, then its Upgrade runs in toImage with
// the server's environment and the data volume where the server has it.
// One attempt: a failed upgrade leaves the data as it was and says why in
// its termination message, and trying again would fail the same way.
func NewMajorUpgradeJob(db *dbv1alpha1.Database, e engine.Engine, fromImage, toImage, to, claim string) *batchv1ac.JobApplyConfiguration {
	rt := e.Runtime()
	mu := rt.MajorUpgrade
	scratch := corev1ac.VolumeMount().WithName(upgradeVolume).WithMountPath(engine.MajorUpgradeDir)
	tmp := corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp")
	copyOld := corev1ac.Container().
		WithName(copyContainer).
		WithImage(fromImage).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", mu.Copy).
		WithVolumeMounts(scratch, tmp).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(containerSecurity())
	upgrade := corev1ac.Container().
		WithName(upgradeContainer).
		WithImage(toImage).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", mu.Upgrade).
		WithEnv(serverEnv(db, rt)...).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(names.DataVolume).WithMountPath(rt.DataPath), scratch, tmp).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(containerSecurity())
	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(names.DataVolume).WithPersistentVolumeClaim(
			corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(claim)),
		corev1ac.Volume().WithName(upgradeVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}
	for i, path := range rt.ScratchPaths {
		if path == "/tmp" {
			continue
		}
		name := "scratch-" + strconv.Itoa(i)
		upgrade.WithVolumeMounts(corev1ac.VolumeMount().WithName(name).WithMountPath(path))
		volumes = append(volumes, corev1ac.Volume().WithName(name).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	// The data volume's files belong to the server's user: the pod runs as
	// it, and its group owns what the volume gives.
	spec := withFSGroup(jobPodSpec(rt.UID), rt.UID).
		WithInitContainers(copyOld).
		WithContainers(upgrade).
		WithVolumes(volumes...)
	labels := upgradeJobLabels(db, JobMajorUpgrade)
	return batchv1ac.Job(MajorUpgradeJobName(db, to), db.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(0).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(spec)))
}

// NewAfterMajorUpgradeJob builds the Job that runs the engine's After
// script against db's client Service, in image (the new version's), once
// the new version serves: it verifies the server as the backup Jobs do.
// Its failure costs no data: the Job controller tries twice more.
func NewAfterMajorUpgradeJob(db *dbv1alpha1.Database, e engine.Engine, image, to string) *batchv1ac.JobApplyConfiguration {
	rt := e.Runtime()
	container := corev1ac.Container().
		WithName(JobAfterMajorUpgrade).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", rt.MajorUpgrade.After).
		WithEnv(clientEnv(db, rt, names.Host(db))...).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp")).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(containerSecurity())
	labels := upgradeJobLabels(db, JobAfterMajorUpgrade)
	return withVerification(batchv1ac.Job(AfterMajorUpgradeJobName(db, to), db.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(2).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(jobPodSpec(rt.UID).
				WithContainers(container).
				WithVolumes(corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()))))),
		db, e, JobAfterMajorUpgrade)
}

// ImageOf is the image of sts's server container (the first), or "".
func ImageOf(sts *appsv1.StatefulSet) string {
	if sts == nil || len(sts.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return sts.Spec.Template.Spec.Containers[0].Image
}
