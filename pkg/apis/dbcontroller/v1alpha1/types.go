package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// PhaseDegraded: a Database that ran before, with no rollout or scale
	// in progress, has replicas that are not ready, such as a server that
	// restarts, or servers that refuse the credentials of its Secret; the
	// Ready condition says why.
	PhaseDegraded Phase = "Degraded"
	// PhaseStopped: replicas is 0; the data is kept.
	PhaseStopped Phase = "Stopped"
	// PhaseFailed: the controller cannot proceed until the user acts (see conditions).
	PhaseFailed Phase = "Failed"
	// PhaseTerminating: the Database is being deleted; the controller takes
	// the final backup and keeps what deletionPolicy keeps before it goes.
	PhaseTerminating Phase = "Terminating"
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
	// ConditionBackup is True when backups are set up and the last one
	// Completed, False when the schedule is not valid or the last scheduled
	// backup failed; it is absent when spec.backup is not set.
	ConditionBackup = "Backup"
	// ConditionContinuousArchiving is, for a PostgreSQL Database with
	// spec.backup.continuous, True while its primary archives its WAL to
	// the object store, False with the cause when it cannot (the Database
	// serves on, and the server keeps the segments until they are
	// archived), Unknown before a first segment is archived.
	ConditionContinuousArchiving = "ContinuousArchiving"
	// ConditionReplicating is, for a replicated PostgreSQL Database, True
	// when a primary serves and every other replica streams from it, and
	// False with the reason otherwise (a failover or a switchover in
	// progress, a replica that does not stream); it is absent for a
	// Database that is not replicated.
	ConditionReplicating = "Replicating"
	// ConditionParametersApplied says whether the servers run with
	// spec.parameters: False while a restart is pending, or when a server
	// refused a value (in its words).
	ConditionParametersApplied = "ParametersApplied"
)

// LabelParameters labels, with the value "true", the ConfigMaps that
// Databases name in spec.parametersConfigMap: the controller watches only
// those.
const LabelParameters = "dbcontroller.io/parameters"

// LabelTLS labels, with the value "true", the Secrets that Databases name
// in spec.tls.secretName: the controller watches only those.
const LabelTLS = "dbcontroller.io/tls"

// LabelRole is the role label the controller gives each pod of a
// replicated Database: RolePrimary or RoleReplica. The client Service
// selects the primary by it, and the read-only Service the replicas.
const LabelRole = "dbcontroller.io/role"

// The values of LabelRole.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
)

// Finalizers the controller sets.
const (
	// FinalizerDatabase holds a Database while the controller takes its
	// final backup and, under deletionPolicy Retain, releases its
	// credentials Secret to stay with the volumes.
	FinalizerDatabase = "dbcontroller.io/database"
	// FinalizerBackupFile holds a DatabaseBackup until its file is deleted
	// from the backup volume.
	FinalizerBackupFile = "dbcontroller.io/backup-file"
)

// LabelBackupTrigger says why a DatabaseBackup was made: BackupTriggerSchedule,
// BackupTriggerFinal or BackupTriggerMajorUpgrade by the controller; a
// backup without it was made by a user.
const LabelBackupTrigger = "dbcontroller.io/backup-trigger"

// The values of LabelBackupTrigger.
const (
	BackupTriggerSchedule = "schedule"
	BackupTriggerFinal    = "final"
	// BackupTriggerMajorUpgrade: taken before an in-place major upgrade;
	// kept, as a user's backup is, when the upgrade ends.
	BackupTriggerMajorUpgrade = "major-upgrade"
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
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=".status.replication.primary",priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].message",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 52",message="metadata.name must be a DNS-1035 label of at most 52 characters (lowercase letters, digits and '-', starting with a letter), so that the Services and the StatefulSet's pods can carry it"
// +kubebuilder:validation:XValidation:rule="has(self.spec.restore) == has(oldSelf.spec.restore) && (!has(self.spec.restore) || self.spec.restore == oldSelf.spec.restore)",message="spec.restore is immutable: it says where the data came from when the Database was created"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tls) || !has(self.spec.tls.secretName) || !(self.spec.tls.secretName in [self.metadata.name + '-tls', self.metadata.name + '-ca', self.metadata.name + '-credentials'])",message="spec.tls.secretName may not name a Secret the controller writes for this Database (<name>-tls, <name>-ca, <name>-credentials): name the Secret that holds your certificate"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.tls) || !has(self.spec.tls.secretName) || self.spec.tls.mode != 'Disabled'",message="spec.tls.secretName needs TLS: with mode Disabled the servers take no certificate"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.replication) || self.spec.engine != 'mongodb'",message="spec.replication is for PostgreSQL and MySQL: MongoDB replica sets are not supported yet"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.replication) || !has(self.spec.replication.primary) || self.spec.replication.primary.startsWith(self.metadata.name + '-')",message="spec.replication.primary names a pod of this Database: <name>-<ordinal>"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.replication) || !has(self.spec.replication.synchronous) || !has(self.spec.replicas) || self.spec.replication.synchronous.number < self.spec.replicas",message="spec.replication.synchronous.number must be lower than spec.replicas: the primary is not one of the replicas a commit waits for"

// Database is a PostgreSQL, MySQL or MongoDB server run by database-controller.
type Database struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DatabaseSpec `json:"spec"`
	// +optional
	Status DatabaseStatus `json:"status,omitempty"`
}

// The rules below are the spec's own, not the Database's, so that a
// Database stored before a rule existed keeps its status writes: the API
// server checks a rule again only where the value it applies to changed.

// DatabaseSpec is what the user asks for.
// +kubebuilder:validation:XValidation:rule="!has(self.monitoring) || !self.monitoring.enabled || self.engine != 'mongodb'",message="spec.monitoring is for PostgreSQL and MySQL: the controller runs no MongoDB exporter yet"
// +kubebuilder:validation:XValidation:rule="!has(self.monitoring) || !has(self.monitoring.queries) || self.engine == 'postgresql'",message="spec.monitoring.queries is for PostgreSQL: its queries are postgres_exporter's; mysqld_exporter reads no queries of its user's"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.engine == 'mongodb' || self.parameters.all(k, k.matches('^[a-z_][a-z0-9_]*([.][a-z_][a-z0-9_]*)?$'))",message="parameters are named as the server names them, in lower case: letters, digits and '_', with one '.' for an extension's (pg_stat_statements.max)"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.engine != 'mongodb' || self.parameters.all(k, k.matches('^[A-Za-z][A-Za-z0-9_]*$'))",message="MongoDB's parameters are named as mongod names them: letters, digits and '_', starting with a letter (ttlMonitorSleepSecs)"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mongodb' || !has(self.parameters) || !('authenticationMechanisms' in self.parameters)",message="parameters may not set authenticationMechanisms on MongoDB: the controller logs in with SCRAM"
// The rules below refuse the parameters MySQL's servers take that the
// controller owns (package mysql's list), beside those spec.parameters'
// own rules refuse for every engine (port).
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('bind_address' in self.parameters)",message="parameters may not set bind_address on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('socket' in self.parameters)",message="parameters may not set socket on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('datadir' in self.parameters)",message="parameters may not set datadir on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('basedir' in self.parameters)",message="parameters may not set basedir on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('tmpdir' in self.parameters)",message="parameters may not set tmpdir on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('pid_file' in self.parameters)",message="parameters may not set pid_file on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('plugin_dir' in self.parameters)",message="parameters may not set plugin_dir on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('user' in self.parameters)",message="parameters may not set user on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('skip_networking' in self.parameters)",message="parameters may not set skip_networking on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('mysqlx' in self.parameters)",message="parameters may not set mysqlx on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('mysqlx_port' in self.parameters)",message="parameters may not set mysqlx_port on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('mysqlx_socket' in self.parameters)",message="parameters may not set mysqlx_socket on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('admin_address' in self.parameters)",message="parameters may not set admin_address on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('admin_port' in self.parameters)",message="parameters may not set admin_port on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('log_error' in self.parameters)",message="parameters may not set log_error on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('init_file' in self.parameters)",message="parameters may not set init_file on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('secure_file_priv' in self.parameters)",message="parameters may not set secure_file_priv on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('persisted_globals_load' in self.parameters)",message="parameters may not set persisted_globals_load on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('server_id' in self.parameters)",message="parameters may not set server_id on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('report_host' in self.parameters)",message="parameters may not set report_host on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('report_port' in self.parameters)",message="parameters may not set report_port on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('gtid_mode' in self.parameters)",message="parameters may not set gtid_mode on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('enforce_gtid_consistency' in self.parameters)",message="parameters may not set enforce_gtid_consistency on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('gtid_strict_mode' in self.parameters)",message="parameters may not set gtid_strict_mode on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('gtid_domain_id' in self.parameters)",message="parameters may not set gtid_domain_id on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('log_bin' in self.parameters)",message="parameters may not set log_bin on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('log_bin_basename' in self.parameters)",message="parameters may not set log_bin_basename on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('log_bin_index' in self.parameters)",message="parameters may not set log_bin_index on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('log_replica_updates' in self.parameters)",message="parameters may not set log_replica_updates on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('log_slave_updates' in self.parameters)",message="parameters may not set log_slave_updates on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('binlog_format' in self.parameters)",message="parameters may not set binlog_format on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('sync_binlog' in self.parameters)",message="parameters may not set sync_binlog on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('innodb_flush_log_at_trx_commit' in self.parameters)",message="parameters may not set innodb_flush_log_at_trx_commit on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('relay_log' in self.parameters)",message="parameters may not set relay_log on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('relay_log_basename' in self.parameters)",message="parameters may not set relay_log_basename on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('relay_log_index' in self.parameters)",message="parameters may not set relay_log_index on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('relay_log_recovery' in self.parameters)",message="parameters may not set relay_log_recovery on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('replica_net_timeout' in self.parameters)",message="parameters may not set replica_net_timeout on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('slave_net_timeout' in self.parameters)",message="parameters may not set slave_net_timeout on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('skip_replica_start' in self.parameters)",message="parameters may not set skip_replica_start on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('skip_slave_start' in self.parameters)",message="parameters may not set skip_slave_start on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('read_only' in self.parameters)",message="parameters may not set read_only on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('super_read_only' in self.parameters)",message="parameters may not set super_read_only on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('rpl_semi_sync_source_enabled' in self.parameters)",message="parameters may not set rpl_semi_sync_source_enabled on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('rpl_semi_sync_source_wait_for_replica_count' in self.parameters)",message="parameters may not set rpl_semi_sync_source_wait_for_replica_count on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('rpl_semi_sync_source_timeout' in self.parameters)",message="parameters may not set rpl_semi_sync_source_timeout on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('rpl_semi_sync_replica_enabled' in self.parameters)",message="parameters may not set rpl_semi_sync_replica_enabled on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('rpl_semi_sync_master_enabled' in self.parameters)",message="parameters may not set rpl_semi_sync_master_enabled on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('rpl_semi_sync_master_timeout' in self.parameters)",message="parameters may not set rpl_semi_sync_master_timeout on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('rpl_semi_sync_master_wait_point' in self.parameters)",message="parameters may not set rpl_semi_sync_master_wait_point on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('rpl_semi_sync_slave_enabled' in self.parameters)",message="parameters may not set rpl_semi_sync_slave_enabled on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('plugin_load' in self.parameters)",message="parameters may not set plugin_load on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('plugin_load_add' in self.parameters)",message="parameters may not set plugin_load_add on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('clone_valid_donor_list' in self.parameters)",message="parameters may not set clone_valid_donor_list on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('require_secure_transport' in self.parameters)",message="parameters may not set require_secure_transport on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('ssl_ca' in self.parameters)",message="parameters may not set ssl_ca on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('ssl_capath' in self.parameters)",message="parameters may not set ssl_capath on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('ssl_cert' in self.parameters)",message="parameters may not set ssl_cert on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('ssl_key' in self.parameters)",message="parameters may not set ssl_key on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('ssl_crl' in self.parameters)",message="parameters may not set ssl_crl on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || !has(self.parameters) || !('ssl_crlpath' in self.parameters)",message="parameters may not set ssl_crlpath on MySQL: the controller sets it, for the pods, replication, fencing or TLS to work"
// +kubebuilder:validation:XValidation:rule="!has(self.backup) || !has(self.backup.continuous) || self.engine == 'postgresql'",message="spec.backup.continuous is for PostgreSQL: MySQL's binlogs and MongoDB's oplog are not archived yet"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mongodb' || !has(self.replicas) || self.replicas <= 1",message="replicas above 1 are refused for MongoDB: the servers would be independent copies, not a replica set, and each connection would read and write another one. Use 1 (or 0 to stop): MongoDB replica sets are not supported yet"
// +kubebuilder:validation:XValidation:rule="!has(self.replication) || !has(self.replication.primary) || !has(self.replicas) || self.replicas == 0 || int(self.replication.primary.substring(self.replication.primary.lastIndexOf('-') + 1)) < self.replicas",message="spec.replication.primary must be one of the pods spec.replicas asks for, <name>-0 to <name>-<replicas-1>: change or unset it before scaling below it"
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

	// Replicas is the number of database pods. 0 stops the database and
	// keeps its data. At most 1 for MongoDB, whose replica sets are not
	// supported yet.
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

	// DeletionProtection, when true, makes the API server refuse to delete
	// the Database (a ValidatingAdmissionPolicy shipped with the CRD). Set it
	// to false to delete.
	// +optional
	DeletionProtection bool `json:"deletionProtection,omitempty"`

	// Backup sets up backups: on a schedule, kept to a number, and one
	// before the Database is deleted. On-demand backups (DatabaseBackup
	// objects) work without it, on a backup volume of default size.
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`

	// Restore initialises a new Database's data from a DatabaseBackup before
	// it first serves. It cannot be changed after creation.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`

	// Scheduling places the Database's pods on nodes: node selection,
	// tolerations, affinity, topology spread, priority, and how the pods of
	// a replicated Database are spread over nodes. Changing it restarts the
	// pods (a replicated Database's replicas first, then a switchover).
	// +optional
	Scheduling *SchedulingSpec `json:"scheduling,omitempty"`

	// PodMetadata adds labels and annotations to the Database's pods, for
	// a service mesh or a monitoring agent. Changing it restarts the pods
	// as scheduling does.
	// +optional
	PodMetadata *PodMetadata `json:"podMetadata,omitempty"`

	// Parameters are the server's own settings, by name, as its
	// configuration file would set them (PostgreSQL: work_mem: 64MB,
	// shared_buffers: 1GB; MySQL: max_connections: "500",
	// innodb_buffer_pool_size: 1G). A parameter the running server can
	// take is applied to every server without a restart; one it reads
	// only at start (PostgreSQL's shared_buffers, MySQL's back_log)
	// restarts the servers, a replicated Database's replicas first and its
	// primary last, after a switchover. A primary checks every value
	// first: one it refuses is reported in the ParametersApplied condition,
	// in its words, and nothing is changed. The parameters the controller
	// sets itself (ports, paths, replication, archiving, TLS, logging to
	// the pod's log) are refused. A MariaDB server, which cannot persist a
	// setting made live, reads them all at start; so does MongoDB (its
	// server parameters, as --setParameter name=value), unchecked.
	// +optional
	// +kubebuilder:validation:MaxProperties=200
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 4096)",message="a parameter's value is at most 4096 characters"
	// +kubebuilder:validation:XValidation:rule="!('listen_addresses' in self)",message="parameters may not set listen_addresses: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('port' in self)",message="parameters may not set port: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('unix_socket_directories' in self)",message="parameters may not set unix_socket_directories: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('unix_socket_group' in self)",message="parameters may not set unix_socket_group: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('unix_socket_permissions' in self)",message="parameters may not set unix_socket_permissions: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('data_directory' in self)",message="parameters may not set data_directory: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('config_file' in self)",message="parameters may not set config_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('hba_file' in self)",message="parameters may not set hba_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ident_file' in self)",message="parameters may not set ident_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('external_pid_file' in self)",message="parameters may not set external_pid_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('logging_collector' in self)",message="parameters may not set logging_collector: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('cluster_name' in self)",message="parameters may not set cluster_name: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('hot_standby' in self)",message="parameters may not set hot_standby: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('hot_standby_feedback' in self)",message="parameters may not set hot_standby_feedback: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('wal_log_hints' in self)",message="parameters may not set wal_log_hints: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('wal_keep_size' in self)",message="parameters may not set wal_keep_size: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('wal_level' in self)",message="parameters may not set wal_level: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('max_wal_senders' in self)",message="parameters may not set max_wal_senders: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('primary_conninfo' in self)",message="parameters may not set primary_conninfo: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('primary_slot_name' in self)",message="parameters may not set primary_slot_name: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('promote_trigger_file' in self)",message="parameters may not set promote_trigger_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('restore_command' in self)",message="parameters may not set restore_command: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('archive_cleanup_command' in self)",message="parameters may not set archive_cleanup_command: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_end_command' in self)",message="parameters may not set recovery_end_command: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_target' in self)",message="parameters may not set recovery_target: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_target_action' in self)",message="parameters may not set recovery_target_action: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_target_inclusive' in self)",message="parameters may not set recovery_target_inclusive: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_target_lsn' in self)",message="parameters may not set recovery_target_lsn: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_target_name' in self)",message="parameters may not set recovery_target_name: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_target_time' in self)",message="parameters may not set recovery_target_time: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_target_timeline' in self)",message="parameters may not set recovery_target_timeline: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('recovery_target_xid' in self)",message="parameters may not set recovery_target_xid: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('archive_mode' in self)",message="parameters may not set archive_mode: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('archive_command' in self)",message="parameters may not set archive_command: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('archive_library' in self)",message="parameters may not set archive_library: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('archive_timeout' in self)",message="parameters may not set archive_timeout: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('default_transaction_read_only' in self)",message="parameters may not set default_transaction_read_only: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('synchronous_standby_names' in self)",message="parameters may not set synchronous_standby_names: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ssl' in self)",message="parameters may not set ssl: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ssl_ca_file' in self)",message="parameters may not set ssl_ca_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ssl_cert_file' in self)",message="parameters may not set ssl_cert_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ssl_key_file' in self)",message="parameters may not set ssl_key_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ssl_crl_file' in self)",message="parameters may not set ssl_crl_file: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ssl_crl_dir' in self)",message="parameters may not set ssl_crl_dir: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ssl_passphrase_command' in self)",message="parameters may not set ssl_passphrase_command: the controller sets it, for the pods, replication, archiving or TLS to work"
	// +kubebuilder:validation:XValidation:rule="!('ssl_passphrase_command_supports_reload' in self)",message="parameters may not set ssl_passphrase_command_supports_reload: the controller sets it, for the pods, replication, archiving or TLS to work"
	Parameters map[string]string `json:"parameters,omitempty"`

	// ParametersConfigMap names a ConfigMap of the Database's namespace
	// whose data holds more parameters, each key a parameter's name, with
	// the rules of spec.parameters, which wins on the same name. The
	// controller watches only the ConfigMaps labelled
	// dbcontroller.io/parameters: "true", and applies a change of their
	// data as it applies a change of spec.parameters.
	// +optional
	ParametersConfigMap *LocalConfigMapReference `json:"parametersConfigMap,omitempty"`

	// Replication tunes the replication that every PostgreSQL and MySQL
	// Database with replicas >= 2 runs: one primary, behind the client
	// Service, and replicas >= 1 that stream from it (PostgreSQL's
	// streaming replication, MySQL's GTID replication), behind the
	// read-only Service <name>-ro. Not for MongoDB.
	// +optional
	Replication *ReplicationSpec `json:"replication,omitempty"`

	// TLS says whether the servers take TLS connections, and whether they
	// refuse any other. With TLS the controller issues a certificate
	// authority of the Database's own (Secret <name>-ca, never mounted)
	// and a server certificate it signs for the client, read-only and
	// headless Services' names (Secret <name>-tls), or copies the user's
	// (secretName), renews it before it expires without restarting the
	// servers (MongoDB's restart: mongod reads it at start only), and adds
	// the authority to the credentials Secret (ca.crt), so that clients
	// verify the server (PostgreSQL's sslmode=verify-full, MySQL's
	// VERIFY_IDENTITY).
	// +optional
	// +kubebuilder:default={}
	TLS *TLSSpec `json:"tls,omitempty"`

	// Monitoring runs a Prometheus exporter beside each server, which a
	// Prometheus server scrapes at the pods' port named metrics:
	// PostgreSQL's postgres_exporter (port 9187) and MySQL's
	// mysqld_exporter (port 9104), the Prometheus community's. The
	// exporter logs in over the pod's loopback as a monitoring user the
	// controller creates (dbcontroller_monitor: PostgreSQL's pg_monitor
	// role; MySQL's PROCESS and REPLICATION CLIENT), which reads the
	// server's statistics, not the data. Turning it on or off restarts the
	// pods, a replicated Database's replicas first and its primary last,
	// after a switchover. Not for MongoDB.
	// +optional
	Monitoring *MonitoringSpec `json:"monitoring,omitempty"`
}

// MonitoringSpec is the exporter of a Database's servers.
type MonitoringSpec struct {
	// Enabled runs the exporter. Off by default: it is a container more
	// in every pod, with an image to pull, and a scrape that no one reads
	// costs the server queries for nothing.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Image overrides the exporter's image (by default the Prometheus
	// community's, of a version the controller was tested with), for
	// mirrors and air-gapped registries: a well-formed image reference.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^((localhost(:[0-9]+)?|[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+(:[0-9]+)?|[a-zA-Z0-9-]+:[0-9]+|\[[0-9a-fA-F:]+\](:[0-9]+)?)/)?[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$`
	Image string `json:"image,omitempty"`
	// Resources are the exporter container's compute requests and limits;
	// by default it requests 10m of CPU and 32Mi of memory, and is limited
	// to 128Mi.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Queries are more queries for the exporter to run, from a ConfigMap
	// of the Database's namespace, in postgres_exporter's queries file
	// format (PostgreSQL only). The exporter reads them when it starts
	// and runs them as the monitoring user, beside its own. A ConfigMap
	// that is missing, or that it cannot read, never keeps a server from
	// starting: the exporter says so in its metric
	// pg_exporter_user_queries_load_error.
	// +optional
	Queries *MonitoringQueries `json:"queries,omitempty"`
}

// MonitoringQueries names the key of a ConfigMap that holds queries.
type MonitoringQueries struct {
	// ConfigMapName is the ConfigMap's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ConfigMapName string `json:"configMapName"`
	// Key is the key of the ConfigMap that holds the queries.
	// +optional
	// +kubebuilder:default=queries.yaml
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// TLSMode says whether the servers take TLS connections.
// +kubebuilder:validation:Enum=Disabled;Enabled;Required
type TLSMode string

const (
	// TLSDisabled: the servers take plain-text connections only.
	TLSDisabled TLSMode = "Disabled"
	// TLSEnabled: the servers take TLS connections and plain-text ones,
	// so that a client chooses; replication and the controller use TLS.
	TLSEnabled TLSMode = "Enabled"
	// TLSRequired: the servers refuse plain-text connections from other
	// hosts (PostgreSQL's hostssl, MySQL's require_secure_transport,
	// MongoDB's requireTLS).
	TLSRequired TLSMode = "Required"
)

// TLSSpec is the TLS of a Database's servers.
type TLSSpec struct {
	// Mode is Disabled, Enabled (the default) or Required. Enabled changes
	// nothing for a client that does not ask for TLS; Required refuses
	// such a client, and is the user's choice, once every client connects
	// with TLS.
	// +optional
	// +kubebuilder:default=Enabled
	Mode TLSMode `json:"mode,omitempty"`
	// SecretName names a Secret of the Database's namespace that holds the
	// servers' certificate, its key and the authorities that sign it
	// (tls.crt, tls.key, ca.crt: the shape cert-manager writes), labelled
	// dbcontroller.io/tls: "true", in place of the certificate the
	// controller issues. The controller never writes it: it checks what
	// it holds (the key, the chain, the names of the Services and pods)
	// and copies it into Secret <name>-tls, which the servers read; a
	// change of it (a renewal) is copied in turn, and the servers reload.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`
}

// SpreadPolicy says how the pods of a replicated Database are spread over nodes.
// +kubebuilder:validation:Enum=Preferred;Required;None
type SpreadPolicy string

const (
	// SpreadPreferred: the scheduler puts each pod on a node that runs no
	// other pod of the Database when it can, and beside one when it
	// cannot (preferred pod anti-affinity on kubernetes.io/hostname).
	SpreadPreferred SpreadPolicy = "Preferred"
	// SpreadRequired: a pod that finds no node without another pod of the
	// Database stays Pending (required pod anti-affinity).
	SpreadRequired SpreadPolicy = "Required"
	// SpreadNone: no anti-affinity of the controller's.
	SpreadNone SpreadPolicy = "None"
)

// SchedulingSpec places a Database's pods. The fields are Kubernetes' own,
// passed to the pods as they are.
type SchedulingSpec struct {
	// NodeSelector is the pods' nodeSelector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are the pods' tolerations.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity is the pods' affinity. Its podAntiAffinity, when set,
	// replaces the one spread gives a replicated Database.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints are the pods' topology spread constraints,
	// such as across zones. Their labelSelector may select the pods by the
	// labels app.kubernetes.io/instance (the Database's name) and
	// app.kubernetes.io/name (its engine).
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName is the pods' priority class.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Spread says how the pods of a replicated Database (replicas 2 or
	// more) are spread over nodes, so that one node's failure takes one
	// server, not all of them: Preferred (the default), Required or None.
	// It does not apply to a Database of one pod, nor when affinity sets
	// podAntiAffinity.
	// +optional
	// +kubebuilder:default=Preferred
	Spread SpreadPolicy `json:"spread,omitempty"`
}

// PodMetadata are labels and annotations added to a Database's pods.
type PodMetadata struct {
	// Labels are added to the pods' labels. The controller's own cannot
	// be set: the app.kubernetes.io/name, instance and managed-by labels,
	// and those under dbcontroller.io/.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by']) && !k.startsWith('dbcontroller.io/') && k != 'controller-revision-hash' && k != 'statefulset.kubernetes.io/pod-name' && k != 'apps.kubernetes.io/pod-index')",message="podMetadata.labels may not set the controller's labels (app.kubernetes.io/name, instance, managed-by, dbcontroller.io/...) nor the StatefulSet's"
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the pods' annotations. Those under
	// dbcontroller.io/ are the controller's and cannot be set.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('dbcontroller.io/'))",message="podMetadata.annotations may not set annotations under dbcontroller.io/: they are the controller's"
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ReplicationSpec tunes a replicated PostgreSQL or MySQL Database.
type ReplicationSpec struct {
	// Primary names the pod that should be the primary, such as "db-1".
	// While another pod is the primary and this one streams from it, the
	// controller switches over: the old primary stops accepting writes,
	// this pod receives every change it wrote, and is promoted. Unset: the controller keeps whichever pod is the
	// primary, and chooses one on failover.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?-[0-9]+$`
	Primary string `json:"primary,omitempty"`

	// FailoverDelaySeconds is how long the primary may not serve before the
	// controller promotes a replica. A restarted pod that serves again
	// within it causes no failover. A primary whose server answers the
	// controller while its pod is not ready is waited for this long and at
	// least 120 seconds. Default 30.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	FailoverDelaySeconds *int32 `json:"failoverDelaySeconds,omitempty"`

	// Synchronous makes the primary acknowledge a commit only once that
	// many replicas have it (quorum: any of them), so that a failover,
	// which promotes the replica with the most WAL, loses no acknowledged
	// write. Unset: asynchronous replication. MySQL's is semi-synchronous
	// replication (AFTER_SYNC), with the same quorum.
	// +optional
	Synchronous *SynchronousReplication `json:"synchronous,omitempty"`
}

// DataDurability says what a synchronous primary does while fewer replicas
// than asked for stream.
// +kubebuilder:validation:Enum=Required;Preferred
type DataDurability string

const (
	// DataDurabilityRequired: commits wait until enough replicas have them,
	// however long: no acknowledged write can be lost, and writes stop
	// while too few replicas stream.
	DataDurabilityRequired DataDurability = "Required"
	// DataDurabilityPreferred: while too few replicas stream, the primary
	// commits asynchronously, so that writes go on; what it acknowledges
	// then may be lost on a failover.
	DataDurabilityPreferred DataDurability = "Preferred"
)

// SynchronousReplication is the quorum of replicas a commit waits for.
type SynchronousReplication struct {
	// Number of replicas that must have a commit before it is
	// acknowledged. It must be lower than spec.replicas.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	Number int32 `json:"number"`
	// DataDurability is Required (the default) or Preferred.
	// +optional
	// +kubebuilder:default=Required
	DataDurability DataDurability `json:"dataDurability,omitempty"`
}

// BackupSpec sets up backups of a Database.
// +kubebuilder:validation:XValidation:rule="!has(self.continuous) || has(self.objectStore)",message="backup.continuous archives to backup.objectStore, which is not set"
// +kubebuilder:validation:XValidation:rule="!has(self.verifyRestore) || !self.verifyRestore || has(self.continuous)",message="backup.verifyRestore restores base backups with the archived WAL: it needs backup.continuous"
type BackupSpec struct {
	// Schedule is a standard 5-field cron expression (minute hour
	// day-of-month month day-of-week), in UTC, or a descriptor such as
	// @daily. Unset: no scheduled backups.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*?/,-]+( +[0-9A-Za-z*?/,-]+){4})$`
	Schedule string `json:"schedule,omitempty"`

	// Retention is how many Completed scheduled backups to keep; older
	// ones are deleted, with their files. On-demand and final backups are
	// never deleted by the controller.
	// +optional
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Retention *int32 `json:"retention,omitempty"`

	// RecoveryWindowDays keeps, besides the newest retention ones, every
	// Completed scheduled backup that completed within this many days,
	// and the newest one before them, so that every point of the window
	// stays restorable (with continuous, from a base backup and the WAL
	// archived after it, which is kept with it). Unset: retention alone.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3650
	RecoveryWindowDays *int32 `json:"recoveryWindowDays,omitempty"`

	// VerifyRestore proves base backups restorable: once a base backup
	// completes and is the newest of the archive, a Job restores it, with
	// the WAL archived since, into a throw-away server of the Database's
	// image, and the DatabaseBackup's status.verification says whether it
	// recovered to a consistent point and served, and how long it took.
	// One that cannot be restored turns the Backup condition False.
	// PostgreSQL with continuous archiving.
	// +optional
	VerifyRestore bool `json:"verifyRestore,omitempty"`

	// Storage is the backup volume, <name>-backups. It outlives the
	// Database: deleting the Database never deletes it. Not made when
	// objectStore is set.
	// +optional
	Storage BackupStorageSpec `json:"storage,omitempty"`

	// ObjectStore keeps the backups in a bucket of an S3-compatible store
	// instead of the backup volume, which is then not made: they survive
	// the loss of the cluster, its storage or the namespace. Changing it
	// sends the next backups to the new store; each DatabaseBackup keeps
	// the store it was written to.
	// +optional
	ObjectStore *ObjectStore `json:"objectStore,omitempty"`

	// Continuous archives PostgreSQL's write-ahead log (WAL) to objectStore
	// as the primary writes it, for point-in-time restore. Setting it, or
	// changing it, restarts the servers (a replicated Database's replicas
	// first, then a switchover).
	// +optional
	Continuous *ContinuousArchiving `json:"continuous,omitempty"`

	// FinalBackup takes a backup before the Database is deleted; the
	// deletion waits for it to complete. Default true.
	// +optional
	// +kubebuilder:default=true
	FinalBackup *bool `json:"finalBackup,omitempty"`
}

// ContinuousArchiving archives every WAL segment the primary completes.
type ContinuousArchiving struct {
	// ArchiveTimeoutSeconds bounds how long a quiet database may leave
	// written WAL unarchived: after that long with any write, the server
	// completes its segment early and archives it (PostgreSQL's
	// archive_timeout). Default 300: at most 5 minutes of writes are
	// only on the server, at the cost of up to 12 segments of 16 MiB an
	// hour (mostly zeros) for a database that writes a little every few
	// minutes; a database with no write archives nothing.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=86400
	ArchiveTimeoutSeconds *int32 `json:"archiveTimeoutSeconds,omitempty"`
}

// BackupStorageSpec is the backup volume.
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="backup.storage.storageClassName is immutable"
type BackupStorageSpec struct {
	// Size of the backup volume; spec.storage.size when unset. It may grow
	// but never shrink.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="backup.storage.size must be greater than zero"
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the backup volume; the cluster default when unset.
	// +optional
	// +kubebuilder:validation:MinLength=1
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// ObjectStore is a bucket of an S3-compatible object store. One store may
// hold the backups of many Databases: those of a Database are under
// <prefix>/<namespace>/<name>/<uid>/, so that a Database deleted and made
// again under its name never shares a file with the old one.
// +kubebuilder:validation:XValidation:rule="!has(self.ca) || self.endpoint.startsWith('https://')",message="objectStore.ca is only for an https:// endpoint"
type ObjectStore struct {
	// Endpoint is the store's URL, https://host[:port], or http://host[:port]
	// for a store without TLS. The bucket is addressed by path
	// (https://host/bucket/key), which every S3-compatible store serves.
	// +required
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^/?#@\s]+/?$`
	Endpoint string `json:"endpoint"`

	// Bucket is the bucket's name. It must exist: the controller never
	// creates or deletes one.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	Bucket string `json:"bucket"`

	// Prefix is the directory of the bucket that holds the backups, such
	// as "team-a" or "team-a/prod"; the bucket's top when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*$`
	Prefix string `json:"prefix,omitempty"`

	// Region is the bucket's region; the store's default when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9-]*$`
	Region string `json:"region,omitempty"`

	// CredentialsSecret names a Secret of the Database's namespace with
	// the keys accessKeyID and secretAccessKey. Only the backup and restore
	// pods read it; the controller never does.
	// +required
	CredentialsSecret LocalSecretReference `json:"credentialsSecret"`

	// CA is a key of a Secret of the Database's namespace that holds the
	// PEM certificates of the authority that signed the endpoint's
	// certificate, for a store with a private one; the image's system
	// authorities when unset. Only for an https endpoint.
	// +optional
	CA *SecretKeySelector `json:"ca,omitempty"`
}

// LocalConfigMapReference names a ConfigMap of the same namespace.
type LocalConfigMapReference struct {
	// Name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// LocalSecretReference names a Secret of the same namespace.
type LocalSecretReference struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// SecretKeySelector is a key of a Secret of the same namespace.
type SecretKeySelector struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Key of the Secret's data; ca.crt when unset.
	// +optional
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// RestoreSpec names the backup a new Database starts from: a
// DatabaseBackup, or the archive of a PostgreSQL Database, to a point in
// time.
// +kubebuilder:validation:XValidation:rule="has(self.backup) != has(self.database)",message="spec.restore names one of backup and database"
// +kubebuilder:validation:XValidation:rule="!(has(self.targetTime) && has(self.targetLSN))",message="spec.restore sets at most one of targetTime and targetLSN"
type RestoreSpec struct {
	// Backup is the name of a Completed DatabaseBackup in the same
	// namespace: a dump, of the same engine and of the same or an older
	// version, or a base backup, of the same major version, which
	// restores to the point its copy became consistent, or to targetTime
	// or targetLSN.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Backup string `json:"backup,omitempty"`

	// Database restores the archive of the PostgreSQL Database of this
	// name in the same namespace (spec.backup.continuous), which may have
	// been deleted: the controller picks the newest of its Completed base
	// backups that became consistent before the target, and replays the
	// archived WAL from it to targetTime, to targetLSN, or, with neither,
	// to the latest point the archive holds. Of Databases made again under
	// the name, the one with the newest base backup.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=52
	Database string `json:"database,omitempty"`

	// TargetTime is the point in time to restore to (RFC 3339): the last
	// transaction committed before it is the last one restored.
	// +optional
	TargetTime *metav1.Time `json:"targetTime,omitempty"`

	// TargetLSN is the position in the WAL to restore to, as PostgreSQL
	// prints it (pg_current_wal_lsn(): 0/3000060).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$`
	TargetLSN string `json:"targetLSN,omitempty"`
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
	// Phase is a one-word summary: Pending, Provisioning, Running, Updating, Degraded, Stopped, Failed or Terminating.
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

	// Restore reports the restore of spec.restore.backup.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`

	// LastScheduleTime is the last time the backup schedule fired: the
	// scheduled backup made then is named after it.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// Replication reports a replicated PostgreSQL Database: which pod is the
	// primary, a failover or switchover in progress, and each replica.
	// +optional
	Replication *ReplicationStatus `json:"replication,omitempty"`

	// Archive reports the continuous archiving of a PostgreSQL Database's
	// WAL (spec.backup.continuous), as its primary last told it.
	// +optional
	Archive *ArchiveStatus `json:"archive,omitempty"`

	// Parameters reports the servers' parameters (spec.parameters) as the
	// controller last gave them.
	// +optional
	Parameters *ParametersStatus `json:"parameters,omitempty"`

	// TLS reports the servers' TLS: the mode they run with and when the
	// certificates the controller issued expire.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`

	// MajorUpgrade reports an in-place upgrade of the data to a new major
	// version (PostgreSQL's pg_upgrade), from the change of spec.version
	// until the new version serves with its statistics rebuilt, or, when it
	// failed, until spec.version is set back to From.
	// +optional
	MajorUpgrade *MajorUpgradeStatus `json:"majorUpgrade,omitempty"`

	// Conditions are the latest observations: Ready, Progressing,
	// VersionSupported, FeatureCompatibility, Backup, Replicating,
	// ContinuousArchiving and ParametersApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MajorUpgradePhase is the step an in-place major upgrade is at.
// +kubebuilder:validation:Enum=BackingUp;Upgrading;Analyzing;Failed
type MajorUpgradePhase string

// The steps of an in-place major upgrade, in order; Failed ends one.
const (
	// MajorUpgradeBackingUp: the DatabaseBackup of the old version is being
	// taken; the server serves as before.
	MajorUpgradeBackingUp MajorUpgradePhase = "BackingUp"
	// MajorUpgradeUpgrading: the server is stopped, and a Job upgrades its
	// data with the new version's pg_upgrade and the old version's programs.
	MajorUpgradeUpgrading MajorUpgradePhase = "Upgrading"
	// MajorUpgradeAnalyzing: the new version serves the upgraded data; a
	// Job rebuilds the planner's statistics.
	MajorUpgradeAnalyzing MajorUpgradePhase = "Analyzing"
	// MajorUpgradeFailed: the upgrade did not happen, and the old version
	// serves its data as it was; Message says why.
	MajorUpgradeFailed MajorUpgradePhase = "Failed"
)

// MajorUpgradeStatus reports an in-place major upgrade.
type MajorUpgradeStatus struct {
	// From is the version whose data is upgraded; To, spec.version.
	From string `json:"from"`
	To   string `json:"to"`
	// FromImage is the image of From: it serves until the data is
	// upgraded, again if the upgrade fails, and lends its programs to
	// pg_upgrade.
	FromImage string `json:"fromImage"`
	// Phase is the step the upgrade is at.
	Phase MajorUpgradePhase `json:"phase"`
	// Backup is the DatabaseBackup taken of From before anything changed;
	// it is kept when the upgrade ends, as any backup a person made.
	// +optional
	Backup string `json:"backup,omitempty"`
	// StartTime is when the upgrade began; StoppedTime, when the server
	// stopped for it; UpgradedTime, when the data was upgraded.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	StoppedTime *metav1.Time `json:"stoppedTime,omitempty"`
	// +optional
	UpgradedTime *metav1.Time `json:"upgradedTime,omitempty"`
	// Message says what failed, in the upgrade's own words.
	// +optional
	Message string `json:"message,omitempty"`
}

// TLSStatus reports the servers' TLS.
type TLSStatus struct {
	// Mode is the mode of spec.tls the servers were given: Enabled or
	// Required (hostssl: plain-text connections from other hosts are
	// refused).
	// +optional
	Mode TLSMode `json:"mode,omitempty"`
	// Secret is the Secret of the server certificate, its key and the
	// authorities' bundle (tls.crt, tls.key, ca.crt) the servers read.
	// +optional
	Secret string `json:"secret,omitempty"`
	// NotAfter is when the server certificate expires; RenewAt, when the
	// controller issues the next one (with a third of its life left).
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// +optional
	RenewAt *metav1.Time `json:"renewAt,omitempty"`
	// AuthorityNotAfter is when the Database's certificate authority expires.
	// +optional
	AuthorityNotAfter *metav1.Time `json:"authorityNotAfter,omitempty"`
	// SuppliedBy is the user's Secret the certificate was copied from
	// (spec.tls.secretName); empty when the controller issued it. Its
	// renewals are the user's: RenewAt is then unset.
	// +optional
	SuppliedBy string `json:"suppliedBy,omitempty"`
	// Problem says why the servers keep the certificate they have rather
	// than the one spec.tls.secretName's Secret holds now, in words a
	// person can act on; empty when there is none.
	// +optional
	Problem string `json:"problem,omitempty"`
}

// ParametersStatus reports the parameters the servers were given.
type ParametersStatus struct {
	// Applied is the digest of the spec.parameters that every server took:
	// once it is the spec's, nothing is left to do.
	// +optional
	Applied string `json:"applied,omitempty"`
	// Rejected is the digest of the spec.parameters a server refused (the
	// ParametersApplied condition says why): they are not asked again
	// until they change.
	// +optional
	Rejected string `json:"rejected,omitempty"`
	// Start are the parameters the servers read at start, given on their
	// command line, as a server last accepted them: the pods restart to
	// take them.
	// +optional
	Start map[string]string `json:"start,omitempty"`
	// Live are the parameters set on the running servers (PostgreSQL's
	// ALTER SYSTEM, then a reload), as last set on every server.
	// +optional
	Live map[string]string `json:"live,omitempty"`
}

// ReplicationStatus reports a replicated Database.
type ReplicationStatus struct {
	// Primary is the pod the controller last made primary.
	// +optional
	Primary string `json:"primary,omitempty"`
	// TargetPrimary is the pod that a failover or switchover in progress
	// makes primary. It is recorded before the controller acts, so that a
	// restarted controller finishes the same failover.
	// +optional
	TargetPrimary string `json:"targetPrimary,omitempty"`
	// PrimaryLostSince is when the controller first saw the primary not
	// serving; the failover delay counts from it.
	// +optional
	PrimaryLostSince *metav1.Time `json:"primaryLostSince,omitempty"`
	// Instances are the pods and what their servers answered.
	// +optional
	// +listType=map
	// +listMapKey=name
	Instances []InstanceStatus `json:"instances,omitempty"`
	// Divergences are the last times, five at most, that a former primary
	// held transactions the primary did not have (MySQL): its data was
	// cloned again from the primary, and the binary logs that hold those
	// transactions were kept in its volume.
	// +optional
	// +listType=atomic
	Divergences []Divergence `json:"divergences,omitempty"`
}

// Divergence is a former primary's data that was cloned again because it
// held transactions the primary did not have.
type Divergence struct {
	// Instance is the pod whose data diverged, and PodUID which pod of
	// that name.
	Instance string    `json:"instance"`
	PodUID   types.UID `json:"podUID"`
	// Time is when the controller saw it.
	Time metav1.Time `json:"time"`
	// Message says which transactions were set aside, and where they are
	// kept.
	Message string `json:"message"`
}

// InstanceStatus is one pod of a replicated Database.
type InstanceStatus struct {
	// Name is the pod's name.
	Name string `json:"name"`
	// Role is primary, replica, or empty while the server does not answer.
	// +optional
	Role string `json:"role,omitempty"`
	// Streaming says a replica receives WAL from the primary now.
	// +optional
	Streaming bool `json:"streaming,omitempty"`
	// LagBytes is how much WAL the primary has written that a streaming
	// replica has not replayed yet.
	// +optional
	LagBytes *int64 `json:"lagBytes,omitempty"`
}

// ArchiveStatus is what the primary says of its WAL archiving.
type ArchiveStatus struct {
	// LastArchivedWAL is the newest segment (or timeline history file)
	// archived, and LastArchivedTime when: what is written after it is on
	// the servers only.
	// +optional
	LastArchivedWAL string `json:"lastArchivedWAL,omitempty"`
	// +optional
	LastArchivedTime *metav1.Time `json:"lastArchivedTime,omitempty"`
	// LastFailedWAL is the last segment whose archiving failed, when, and
	// the store's words for why.
	// +optional
	LastFailedWAL string `json:"lastFailedWAL,omitempty"`
	// +optional
	LastFailedTime *metav1.Time `json:"lastFailedTime,omitempty"`
	// +optional
	LastFailure string `json:"lastFailure,omitempty"`
	// FirstRecoverableTime and LastRecoverableTime bound the points a
	// point-in-time restore of this Database can reach: from when its
	// oldest kept base backup was consistent (it completed) to when the
	// last WAL file was archived, which holds every transaction committed
	// before the file was completed. A restore to a time before the first
	// is refused. PostgreSQL stops a restore to a time at the first
	// transaction committed after it: a time after the last archived
	// transaction fails with its words (recovery ended before the
	// target); a restore with no target takes everything archived. Unset
	// while no base backup of the archive has completed.
	// +optional
	FirstRecoverableTime *metav1.Time `json:"firstRecoverableTime,omitempty"`
	// +optional
	LastRecoverableTime *metav1.Time `json:"lastRecoverableTime,omitempty"`
}

// VerificationPhase is where the restore that proves a base backup
// restorable is.
// +kubebuilder:validation:Enum=Running;Restorable;NotRestorable
type VerificationPhase string

const (
	VerificationRunning       VerificationPhase = "Running"
	VerificationRestorable    VerificationPhase = "Restorable"
	VerificationNotRestorable VerificationPhase = "NotRestorable"
)

// VerificationStatus reports the restore of a base backup into a
// throw-away server.
type VerificationStatus struct {
	Phase VerificationPhase `json:"phase"`
	// StartTime and CompletionTime bound the restore: the time it took.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says what the restore reached, or what it failed on.
	// +optional
	Message string `json:"message,omitempty"`
}

// RestoreStatus reports a restore.
type RestoreStatus struct {
	// Backup is the DatabaseBackup restored: spec.restore.backup, or the
	// base backup the controller picked for spec.restore.database.
	Backup string `json:"backup"`
	// CompletionTime is when every replica first served the restored data.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says what the restore failed on, or why it has not started.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// DatabaseList is a list of Databases.
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Database `json:"items"`
}

// BackupPhase is where a DatabaseBackup is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type BackupPhase string

// The phases of a DatabaseBackup.
const (
	// BackupPending: waiting for the Database to serve, or for its other
	// backup to finish.
	BackupPending BackupPhase = "Pending"
	// BackupRunning: the backup Job runs.
	BackupRunning BackupPhase = "Running"
	// BackupCompleted: the file is on the backup volume or in the object store.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed: the Job failed after its retries, or the backup could not start.
	BackupFailed BackupPhase = "Failed"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dbbackup;dbb,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=".spec.database"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Method",type=string,JSONPath=".status.method",priority=1
// +kubebuilder:printcolumn:name="Trigger",type=string,JSONPath=".metadata.labels.dbcontroller\\.io/backup-trigger"
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=".status.sizeBytes"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=".status.version",priority=1
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=".status.path",priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=".status.message",priority=1
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=".status.completionTime"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"

// DatabaseBackup is one backup of a Database: a dump file on the Database's
// backup volume, or in its object store. Create one to back up now;
// deleting it deletes its file.
type DatabaseBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DatabaseBackupSpec `json:"spec"`
	// +optional
	Status DatabaseBackupStatus `json:"status,omitempty"`
}

// DatabaseBackupSpec says what to back up. It never changes.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a DatabaseBackup's spec is immutable"
type DatabaseBackupSpec struct {
	// Database is the name of the Database to back up, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=52
	Database string `json:"database"`

	// Method is how the backup is taken. Dump: the engine's logical dump
	// of the database (pg_dump, mysqldump, mongodump), which restores into
	// the same or a newer version. BaseBackup: a copy of a PostgreSQL
	// Database's data directory, taken while it writes (pg_basebackup),
	// into its object store; it needs spec.backup.continuous, whose
	// archived WAL makes it consistent. Unset: BaseBackup for a Database
	// with spec.backup.continuous (its scheduled and final backups too),
	// Dump otherwise.
	// +optional
	Method BackupMethod `json:"method,omitempty"`
}

// BackupMethod is how a backup is taken.
// +kubebuilder:validation:Enum=Dump;BaseBackup
type BackupMethod string

// The methods of a backup.
const (
	BackupMethodDump       BackupMethod = "Dump"
	BackupMethodBaseBackup BackupMethod = "BaseBackup"
)

// DatabaseBackupStatus is what happened to a DatabaseBackup.
type DatabaseBackupStatus struct {
	// Phase: Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// StartTime is when the backup Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the backup Completed or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Engine and Version are those of the Database when it was backed up.
	// +optional
	Engine Engine `json:"engine,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// Image is the image that took the backup; it restores and deletes it too.
	// +optional
	Image string `json:"image,omitempty"`
	// Volume is the claim that holds the file, when it is on the backup volume.
	// +optional
	Volume string `json:"volume,omitempty"`
	// ObjectStore is the store that holds the file, as spec.backup.objectStore
	// was when the backup started, when it is in an object store: a restore
	// and the deletion of the file need no Database.
	// +optional
	ObjectStore *ObjectStore `json:"objectStore,omitempty"`
	// Path is the file's path on the volume, or its key in the store's bucket.
	// +optional
	Path string `json:"path,omitempty"`
	// Method is how the backup was taken: spec.method, or the default then.
	// +optional
	Method BackupMethod `json:"method,omitempty"`
	// BaseBackup says where the WAL of a base backup is, and which of it a
	// restore replays at least.
	// +optional
	BaseBackup *BaseBackupStatus `json:"baseBackup,omitempty"`
	// SizeBytes is the file's size.
	// +optional
	SizeBytes *int64 `json:"sizeBytes,omitempty"`

	// Verification is the restore that proves a base backup restorable
	// (spec.backup.verifyRestore of its Database).
	// +optional
	Verification *VerificationStatus `json:"verification,omitempty"`
	// Message says why the backup is waiting or what it failed on: the dump
	// tool's last error line.
	// +optional
	Message string `json:"message,omitempty"`
}

// BaseBackupStatus is what a restore needs of a base backup besides its
// file: the archive that holds its WAL, and the WAL range that makes the
// copy consistent, which the backup's manifest names.
type BaseBackupStatus struct {
	// Archive is the directory of the store's bucket that holds the
	// archived WAL (under wal/) of the Database backed up:
	// <prefix>/<namespace>/<name>/<uid>.
	Archive string `json:"archive"`
	// Timeline is the timeline the WAL begins on.
	// +optional
	Timeline int64 `json:"timeline,omitempty"`
	// StartLSN is where its WAL begins; StopLSN where the copy is
	// consistent. A restore replays the archive from StartLSN, to StopLSN
	// at least.
	// +optional
	StartLSN string `json:"startLSN,omitempty"`
	// +optional
	StopLSN string `json:"stopLSN,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// DatabaseBackupList is a list of DatabaseBackups.
type DatabaseBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []DatabaseBackup `json:"items"`
}
