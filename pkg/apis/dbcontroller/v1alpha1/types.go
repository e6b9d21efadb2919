package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Engine names a database engine.
// +kubebuilder:validation:Enum=postgresql;mysql;mongodb
type Engine string

// The engines the controller runs.
const (
	EnginePostgreSQL Engine = "postgresql"
	EngineMySQL      Engine = "mysql"
	EngineMongoDB    Engine = "mongodb"
)

// DeletionPolicy says what happens to the data volumes when a Database is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionPolicyRetain keeps the PersistentVolumeClaims after the Database is deleted.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete removes the PersistentVolumeClaims with the Database.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// Phase is a one-word summary of where a Database is in its life.
type Phase string

// The phases of a Database.
const (
	// PhasePending: the controller has not acted on the Database yet.
	PhasePending Phase = "Pending"
	// PhaseProvisioning: the children exist and the first replicas are coming up.
	PhaseProvisioning Phase = "Provisioning"
	// PhaseRunning: every requested replica is ready at the requested version.
	PhaseRunning Phase = "Running"
	// PhaseUpdating: a rollout or a scale is in progress on a Database that ran before.
	PhaseUpdating Phase = "Updating"
	// PhaseStopped: replicas is 0; the data is kept.
	PhaseStopped Phase = "Stopped"
	// PhaseFailed: the controller cannot proceed until the user acts (see conditions).
	PhaseFailed Phase = "Failed"
)

// Condition types.
const (
	// ConditionReady is True when every requested replica serves clients.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the controller is moving the Database
	// towards its spec, and False once it got there or cannot get there.
	ConditionProgressing = "Progressing"
	// ConditionVersionSupported is False when the version runs on an image
	// that no longer gets upstream rebuilds (end of life). The Database still runs.
	ConditionVersionSupported = "VersionSupported"
	// ConditionFeatureCompatibility is False while the controller sets a
	// MongoDB Database's featureCompatibilityVersion after an upgrade, or
	// when it failed to; it is absent otherwise.
	ConditionFeatureCompatibility = "FeatureCompatibility"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=db,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=".spec.engine"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=".spec.version"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].reason"
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=".status.endpoint",priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].message",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 52",message="metadata.name must be a DNS-1035 label of at most 52 characters (lowercase letters, digits and '-', starting with a letter), so that the Services and the StatefulSet's pods can carry it"

// Database is a PostgreSQL, MySQL or MongoDB server run by database-controller.
type Database struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DatabaseSpec `json:"spec"`
	// +optional
	Status DatabaseStatus `json:"status,omitempty"`
}

// DatabaseSpec is what the user asks for.
type DatabaseSpec struct {
	// Engine is the database engine. It cannot be changed after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="engine is immutable"
	Engine Engine `json:"engine"`

	// Version is the engine version, such as "16" (PostgreSQL), "8.4" (MySQL)
	// or "7.0" (MongoDB). It must be in the controller's catalog for the engine
	// unless image is set. Lowering the major version below
	// status.currentVersion is refused.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+){0,2}$`
	Version string `json:"version"`

	// Replicas is the number of database pods. 0 stops the database and keeps its data.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Replicas *int32 `json:"replicas,omitempty"`

	// Storage is the persistent volume of each replica.
	// +optional
	// +kubebuilder:default={}
	Storage StorageSpec `json:"storage,omitempty"`

	// Resources are the compute requests and limits of the database container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Image overrides the catalog image, for mirrors and air-gapped registries:
	// a well-formed image reference ([registry[:port]/]path[:tag][@sha256:digest]).
	// With an override, any well-formed version is accepted, and version still
	// names the release series that the upgrade rules reason about.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^((localhost(:[0-9]+)?|[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+(:[0-9]+)?|[a-zA-Z0-9-]+:[0-9]+|\[[0-9a-fA-F:]+\](:[0-9]+)?)/)?[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$`
	Image string `json:"image,omitempty"`

	// DeletionPolicy says whether the data volumes survive deletion of the
	// Database (Retain, the default) or are removed with it (Delete).
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// StorageSpec is the persistent volume of each replica.
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="storageClassName is immutable"
type StorageSpec struct {
	// Size of each volume. It may grow but never shrink.
	// +optional
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="storage.size must be greater than zero"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="storage.size may grow but never shrink"
	Size resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the volumes; the cluster default when unset. It cannot be changed.
	// +optional
	// +kubebuilder:validation:MinLength=1
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// DatabaseStatus is what the controller observed.
type DatabaseStatus struct {
	// Phase is a one-word summary: Pending, Provisioning, Running, Updating, Stopped or Failed.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Replicas is the number of database pods that exist.
	// +optional
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of database pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// CurrentVersion is the version every replica last ran when all were ready.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// FeatureCompatibilityVersion is, for MongoDB, the featureCompatibilityVersion
	// of the data: the series of a new Database, and after an upgrade the new
	// series once the controller has set it. The next series is refused until
	// it equals the series of currentVersion.
	// +optional
	FeatureCompatibilityVersion string `json:"featureCompatibilityVersion,omitempty"`

	// Endpoint is host:port of the client Service.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// CredentialsSecret is the name of the Secret with the credentials.
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// Selector is the label selector of the pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// ObservedGeneration is the generation of the spec last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are the latest observations: Ready, Progressing and
	// VersionSupported.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// DatabaseList is a list of Databases.
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Database `json:"items"`
}
