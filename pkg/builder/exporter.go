package builder

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
)

// ExporterContainer names the exporter's container in the servers' pods.
const ExporterContainer = "exporter"

// ExporterImage is the exporter image of db's servers: spec.monitoring's,
// else the engine's; "" when db is not monitored or its engine has none.
func ExporterImage(db *dbv1alpha1.Database, e engine.Engine) string {
	x := e.Runtime().Exporter
	if x == nil || !db.Spec.Monitored() {
		return ""
	}
	if db.Spec.Monitoring.Image != "" {
		return db.Spec.Monitoring.Image
	}
	return x.Image
}

// WithExporter adds the engine's exporter beside the server of sts, a
// StatefulSet of NewStatefulSet, when db asks for monitoring. It has no
// probes: a scrape that fails is the exporter's to report (its up
// metric), and must never take the server out of its Services.
func WithExporter(sts *appsv1ac.StatefulSetApplyConfiguration, db *dbv1alpha1.Database, e engine.Engine) {
	image := ExporterImage(db, e)
	if image == "" {
		return
	}
	x := e.Runtime().Exporter
	args, env := x.Config(engine.DatabaseName(db.Name), string(db.Spec.TLSMode()))
	q := db.Spec.Monitoring.Queries
	if q != nil && x.QueriesFlag != "" {
		args = append(args, x.QueriesFlag+exporterQueriesDir+"/"+exporterQueriesFile)
	}
	c := corev1ac.Container().
		WithName(ExporterContainer).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithArgs(args...).
		WithPorts(corev1ac.ContainerPort().WithName(engine.MetricsPortName).WithContainerPort(x.Port).WithProtocol(corev1.ProtocolTCP)).
		WithSecurityContext(containerSecurity())
	if r := db.Spec.Monitoring.Resources; r == nil {
		c.WithResources(defaultExporterResources())
	} else if res := resourceRequirements(r); res != nil {
		c.WithResources(res)
	}
	for _, v := range env {
		c.WithEnv(corev1ac.EnvVar().WithName(v.Name).WithValue(v.Value))
	}
	if q != nil && x.QueriesFlag != "" {
		// Optional: a ConfigMap that is missing never keeps the server
		// from starting; the exporter says it could not read the file.
		// The directory is mounted, not the file, so that the kubelet
		// writes a changed ConfigMap into it.
		key := q.Key
		if key == "" {
			key = exporterQueriesFile
		}
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(ExporterQueriesVolume).WithMountPath(exporterQueriesDir).WithReadOnly(true))
		sts.Spec.Template.Spec.WithVolumes(corev1ac.Volume().WithName(ExporterQueriesVolume).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(q.ConfigMapName).WithOptional(true).
				WithItems(corev1ac.KeyToPath().WithKey(key).WithPath(exporterQueriesFile))))
	}
	sts.Spec.Template.Spec.WithContainers(c)
	// kubectl logs and exec pick the server, not the first container
	// they find, with a note on every call.
	sts.Spec.Template.WithAnnotations(map[string]string{AnnotationDefaultContainer: e.Name()})
}

// ExporterQueriesVolume is the pods' volume of spec.monitoring.queries'
// ConfigMap, which the exporter reads exporterQueriesFile of, in
// exporterQueriesDir.
const (
	ExporterQueriesVolume = "exporter-queries"
	exporterQueriesDir    = "/etc/dbc-exporter"
	exporterQueriesFile   = "queries.yaml"
)

// AnnotationDefaultContainer names the container kubectl logs and exec
// pick in a pod of several.
const AnnotationDefaultContainer = "kubectl.kubernetes.io/default-container"

// defaultExporterResources are the exporter's without
// spec.monitoring.resources: a small request and a memory limit, as an
// exporter holds little but one scrape.
func defaultExporterResources() *corev1ac.ResourceRequirementsApplyConfiguration {
	return corev1ac.ResourceRequirements().
		WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}).
		WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")})
}
