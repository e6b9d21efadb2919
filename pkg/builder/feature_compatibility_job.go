package builder

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// LabelJob names what a Job of the controller does.
const (
	LabelJob                 = "dbcontroller.io/job"
	JobFeatureCompatibility  = "feature-compatibility"
	featureCompatibilityTool = "mongosh"
)

// FeatureCompatibilityJobName is the name of the Job that sets the
// featureCompatibilityVersion of db's data to series.
func FeatureCompatibilityJobName(db *dbv1alpha1.Database, series string) string {
	return db.Name + "-fcv-" + strings.ReplaceAll(series, ".", "-")
}

// NewFeatureCompatibilityJob builds the Job that sets the
// featureCompatibilityVersion of every replica of a MongoDB Database to
// series, after an upgrade to that series has rolled out. It runs mongosh
// from the Database's own image, with the root credentials from the
// Secret, against each pod through the headless Service: the replicas are
// separate servers, verifying each with the credentials Secret's ca.crt
// when they have TLS. Setting the version it already has is harmless, so
// a retry is safe.
func NewFeatureCompatibilityJob(db *dbv1alpha1.Database, e engine.Engine, image, series string, replicas int32) *batchv1ac.JobApplyConfiguration {
	rt := e.Runtime()
	labels := names.Labels(db)
	labels[LabelJob] = JobFeatureCompatibility
	// The pod must not carry the Database's selector labels: the Services
	// would send clients to it.
	podLabels := map[string]string{names.LabelManagedBy: names.ManagedBy, LabelJob: JobFeatureCompatibility}
	script := fmt.Sprintf(`set -e
i=0
while [ "$i" -lt %d ]; do
  host="%s-$i.%s.%s.svc:%d"
  echo "setting featureCompatibilityVersion %s on $host"
  mongosh --quiet --norc ${DBC_TLS_CA:+--tls --tlsCAFile "$DBC_TLS_CA"} "mongodb://$host/admin" -u "$USERNAME" -p "$PASSWORD" --authenticationDatabase admin \
    --eval 'const r = db.adminCommand({setFeatureCompatibilityVersion: "%s", confirm: true}); if (r.ok !== 1) { throw new Error(JSON.stringify(r)) }'
  i=$((i + 1))
done`, replicas, names.StatefulSetName(db), names.HeadlessServiceName(db), db.Namespace, rt.Port, series, series)

	container := corev1ac.Container().
		WithName(featureCompatibilityTool).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand("sh", "-c", script).
		WithEnv(
			corev1ac.EnvVar().WithName("HOME").WithValue("/tmp"),
			corev1ac.EnvVar().WithName("USERNAME").WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(
				corev1ac.SecretKeySelector().WithName(names.SecretName(db)).WithKey(engine.SecretKeyUsername))),
			corev1ac.EnvVar().WithName("PASSWORD").WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(
				corev1ac.SecretKeySelector().WithName(names.SecretName(db)).WithKey(engine.SecretKeyPassword))),
		).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp")).
		WithSecurityContext(containerSecurity())

	return withVerification(batchv1ac.Job(FeatureCompatibilityJobName(db, series), db.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(batchv1ac.JobSpec().
			// The Job controller retries a failed pod after 10 s, 20 s, 40 s.
			WithBackoffLimit(3).
			WithActiveDeadlineSeconds(600).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(podLabels).
				WithSpec(jobPodSpec(rt.UID).
					WithContainers(container).
					WithVolumes(corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()))))), db, e, featureCompatibilityTool)
}

// JobFinished reports whether job has finished, and if so whether it
// succeeded and, when it failed, why.
func JobFinished(job *batchv1.Job) (finished, succeeded bool, message string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true, ""
		case batchv1.JobFailed:
			msg := c.Reason
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return true, false, msg
		}
	}
	return false, false, ""
}
