// Package builder turns a Database into the objects it should own. Every
// function here is pure: it reads the Database and an engine profile and
// returns an apply configuration holding exactly the fields the controller
// owns, which is both what it creates and what it compares and repairs.
package builder

import (
	"fmt"
	"net/url"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
)

// Labels and names shared by every object the controller owns.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy; the informers select on it.
	ManagedBy = "database-controller"
	// DataVolume is the name of the volumeClaimTemplate holding the data.
	DataVolume = "data"
)

// SecretName is the name of the credentials Secret.
func SecretName(db *dbv1alpha1.Database) string { return db.Name + "-credentials" }

// HeadlessServiceName is the name of the Service that gives pods stable identities.
func HeadlessServiceName(db *dbv1alpha1.Database) string { return db.Name + "-headless" }

// ServiceName is the name of the client Service.
func ServiceName(db *dbv1alpha1.Database) string { return db.Name }

// StatefulSetName is the name of the StatefulSet.
func StatefulSetName(db *dbv1alpha1.Database) string { return db.Name }

// Host is the cluster DNS name of the client Service.
func Host(db *dbv1alpha1.Database) string {
	return fmt.Sprintf("%s.%s.svc", ServiceName(db), db.Namespace)
}

// Endpoint is host:port of the client Service.
func Endpoint(db *dbv1alpha1.Database, p *engine.Profile) string {
	return Host(db) + ":" + strconv.Itoa(int(p.Port))
}

// Labels are the labels of every object owned by db.
func Labels(db *dbv1alpha1.Database) map[string]string {
	return map[string]string{
		LabelName:      string(db.Spec.Engine),
		LabelInstance:  db.Name,
		LabelManagedBy: ManagedBy,
	}
}

// SelectorLabels select the pods of db. Both labels are immutable in effect:
// the engine cannot change and neither can the name.
func SelectorLabels(db *dbv1alpha1.Database) map[string]string {
	return map[string]string{
		LabelName:     string(db.Spec.Engine),
		LabelInstance: db.Name,
	}
}

// Selector is the pod selector of db as a string, for the scale subresource.
func Selector(db *dbv1alpha1.Database) string {
	return labels.SelectorFromSet(SelectorLabels(db)).String()
}

func ownerReference(db *dbv1alpha1.Database) *metav1ac.OwnerReferenceApplyConfiguration {
	gvk := dbv1alpha1.SchemeGroupVersion.WithKind("Database")
	return metav1ac.OwnerReference().
		WithAPIVersion(gvk.GroupVersion().String()).
		WithKind(gvk.Kind).
		WithName(db.Name).
		WithUID(db.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// NewSecret builds the credentials Secret. It is created once and never
// written again, so that users may rotate the password.
func NewSecret(db *dbv1alpha1.Database, p *engine.Profile, password string) *corev1ac.SecretApplyConfiguration {
	database := engine.DatabaseName(db.Name)
	host := Host(db)
	port := strconv.Itoa(int(p.Port))
	uri := url.URL{
		Scheme: p.URIScheme,
		User:   url.UserPassword(p.Username, password),
		Host:   host + ":" + port,
		Path:   "/" + database,
	}
	return corev1ac.Secret(SecretName(db), db.Namespace).
		WithLabels(Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{
			engine.SecretKeyUsername: []byte(p.Username),
			engine.SecretKeyPassword: []byte(password),
			engine.SecretKeyDatabase: []byte(database),
			engine.SecretKeyHost:     []byte(host),
			engine.SecretKeyPort:     []byte(port),
			engine.SecretKeyURI:      []byte(uri.String() + p.URIQuery),
		})
}

func servicePort(p *engine.Profile) *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().
		WithName(p.PortName).
		WithProtocol(corev1.ProtocolTCP).
		WithPort(p.Port).
		WithTargetPort(intstr.FromString(p.PortName))
}

// NewHeadlessService builds the Service that gives each pod a stable DNS
// name. It publishes pods before they are ready, so that peers can find them.
func NewHeadlessService(db *dbv1alpha1.Database, p *engine.Profile) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(HeadlessServiceName(db), db.Namespace).
		WithLabels(Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(SelectorLabels(db)).
			WithPorts(servicePort(p)))
}

// NewService builds the client Service.
func NewService(db *dbv1alpha1.Database, p *engine.Profile) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(ServiceName(db), db.Namespace).
		WithLabels(Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(SelectorLabels(db)).
			WithPorts(servicePort(p)))
}

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
		if t.Name == DataVolume {
			return Storage{Size: t.Spec.Resources.Requests[corev1.ResourceStorage], StorageClassName: t.Spec.StorageClassName}, true
		}
	}
	return Storage{}, false
}

// NewStatefulSet builds the StatefulSet that runs the database server.
func NewStatefulSet(db *dbv1alpha1.Database, p *engine.Profile, image string, storage Storage) *appsv1ac.StatefulSetApplyConfiguration {
	replicas := int32(1)
	if db.Spec.Replicas != nil {
		replicas = *db.Spec.Replicas
	}
	whenDeleted := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if db.Spec.DeletionPolicy == dbv1alpha1.DeletionPolicyDelete {
		whenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}

	env := make([]*corev1ac.EnvVarApplyConfiguration, 0, len(p.SecretEnv)+len(p.StaticEnv))
	for _, e := range p.SecretEnv {
		env = append(env, corev1ac.EnvVar().WithName(e.Name).WithValueFrom(
			corev1ac.EnvVarSource().WithSecretKeyRef(
				corev1ac.SecretKeySelector().WithName(SecretName(db)).WithKey(e.Key))))
	}
	for _, e := range p.StaticEnv {
		env = append(env, corev1ac.EnvVar().WithName(e.Name).WithValue(e.Value))
	}

	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName(DataVolume).WithMountPath(p.DataPath),
	}
	volumes := make([]*corev1ac.VolumeApplyConfiguration, 0, len(p.ScratchPaths))
	for i, path := range p.ScratchPaths {
		name := fmt.Sprintf("scratch-%d", i)
		mounts = append(mounts, corev1ac.VolumeMount().WithName(name).WithMountPath(path))
		volumes = append(volumes, corev1ac.Volume().WithName(name).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}

	container := corev1ac.Container().
		WithName(string(p.Engine)).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithPorts(corev1ac.ContainerPort().WithName(p.PortName).WithContainerPort(p.Port).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(env...).
		WithVolumeMounts(mounts...).
		WithReadinessProbe(corev1ac.Probe().
			WithExec(corev1ac.ExecAction().WithCommand(p.ReadinessCommand...)).
			WithInitialDelaySeconds(5).
			WithPeriodSeconds(10).
			WithTimeoutSeconds(5).
			WithSuccessThreshold(1).
			WithFailureThreshold(3)).
		WithLivenessProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(p.PortName))).
			WithInitialDelaySeconds(30).
			WithPeriodSeconds(10).
			WithTimeoutSeconds(5).
			WithSuccessThreshold(1).
			WithFailureThreshold(6)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithRunAsNonRoot(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	if r := db.Spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		res := corev1ac.ResourceRequirements()
		if len(r.Requests) > 0 {
			res.WithRequests(r.Requests)
		}
		if len(r.Limits) > 0 {
			res.WithLimits(r.Limits)
		}
		container.WithResources(res)
	}

	claim := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: storage.Size}))
	if storage.StorageClassName != nil {
		claim.WithStorageClassName(*storage.StorageClassName)
	}

	return appsv1ac.StatefulSet(StatefulSetName(db), db.Namespace).
		WithLabels(Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(replicas).
			WithServiceName(HeadlessServiceName(db)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(db))).
			WithPodManagementPolicy(appsv1.OrderedReadyPodManagement).
			WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(appsv1.RollingUpdateStatefulSetStrategyType)).
			WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
				WithWhenDeleted(whenDeleted).
				WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(Labels(db)).
				WithSpec(corev1ac.PodSpec().
					WithAutomountServiceAccountToken(false).
					WithEnableServiceLinks(false).
					WithSecurityContext(corev1ac.PodSecurityContext().
						WithRunAsNonRoot(true).
						WithRunAsUser(p.UID).
						WithRunAsGroup(p.UID).
						WithFSGroup(p.UID).
						WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch).
						WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
					WithContainers(container).
					WithVolumes(volumes...))).
			// Built without apiVersion and kind, which the API server does not
			// keep on claim templates: they would read back as drift.
			WithVolumeClaimTemplates((&corev1ac.PersistentVolumeClaimApplyConfiguration{}).
				WithName(DataVolume).
				WithLabels(Labels(db)).
				WithSpec(claim)))
}
