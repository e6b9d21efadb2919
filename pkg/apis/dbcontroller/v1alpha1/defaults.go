package v1alpha1

import "time"

// The defaults the API implies, for fields a Database may leave unset. The
// CRD's schema sets most of them on write (its +kubebuilder:default
// markers); an object written before a default existed, or built in a test,
// may still lack them, so the controller reads every such field through
// these functions and nowhere else. TestSchemaDefaultsMatch checks that the
// schema says the same.
const (
	// DefaultReplicas is spec.replicas when unset.
	DefaultReplicas int32 = 1
	// DefaultRetention is spec.backup.retention when unset: how many
	// Completed scheduled backups are kept.
	DefaultRetention int32 = 7
	// DefaultFinalBackup is spec.backup.finalBackup when unset.
	DefaultFinalBackup = true
	// DefaultFailoverDelaySeconds is spec.replication.failoverDelaySeconds
	// when unset. A pod that restarts in place (its server crashed, or the
	// pod was deleted) serves again within a few seconds, plus its crash
	// recovery: 30 s leaves room for that, as Patroni's default TTL does,
	// while a primary that is really gone is replaced within a minute.
	DefaultFailoverDelaySeconds int32 = 30
	// DefaultDeletionPolicy is spec.deletionPolicy when unset.
	DefaultDeletionPolicy = DeletionPolicyRetain
	// DefaultDataDurability is spec.replication.synchronous.dataDurability
	// when unset.
	DefaultDataDurability = DataDurabilityRequired
)

// DesiredReplicas is spec.replicas, DefaultReplicas when unset.
func (s *DatabaseSpec) DesiredReplicas() int32 {
	if s.Replicas == nil {
		return DefaultReplicas
	}
	return *s.Replicas
}

// Retains reports whether the data volumes and the credentials Secret
// outlive the Database: spec.deletionPolicy is anything but Delete
// (DefaultDeletionPolicy when unset).
func (s *DatabaseSpec) Retains() bool {
	return s.DeletionPolicy != DeletionPolicyDelete
}

// FailoverDelay is spec.replication.failoverDelaySeconds as a duration,
// DefaultFailoverDelaySeconds when unset.
func (s *DatabaseSpec) FailoverDelay() time.Duration {
	seconds := DefaultFailoverDelaySeconds
	if s.Replication != nil && s.Replication.FailoverDelaySeconds != nil {
		seconds = *s.Replication.FailoverDelaySeconds
	}
	return time.Duration(seconds) * time.Second
}

// RetentionCount is spec.retention, DefaultRetention when unset.
func (b *BackupSpec) RetentionCount() int32 {
	if b.Retention == nil {
		return DefaultRetention
	}
	return *b.Retention
}

// FinalBackupWanted is spec.finalBackup, DefaultFinalBackup when unset.
func (b *BackupSpec) FinalBackupWanted() bool {
	if b.FinalBackup == nil {
		return DefaultFinalBackup
	}
	return *b.FinalBackup
}

// Durability is spec.dataDurability, DefaultDataDurability when unset.
func (s *SynchronousReplication) Durability() DataDurability {
	if s.DataDurability == "" {
		return DefaultDataDurability
	}
	return s.DataDurability
}

// SpreadPolicy is spec.scheduling.spread, SpreadPreferred when unset.
func (s *DatabaseSpec) SpreadPolicy() SpreadPolicy {
	if s.Scheduling == nil || s.Scheduling.Spread == "" {
		return SpreadPreferred
	}
	return s.Scheduling.Spread
}

// DefaultTLSMode is spec.tls.mode's default.
const DefaultTLSMode = TLSEnabled

// TLSMode is the mode spec.tls asks for, DefaultTLSMode when unset. With
// no spec.tls at all it is Disabled: the API server gives every Database
// it stores spec.tls (its default is {}), so only a Database built
// without it, such as a unit test's, has none, and those keep the
// children they had before TLS.
func (s *DatabaseSpec) TLSMode() TLSMode {
	switch {
	case s.TLS == nil:
		return TLSDisabled
	case s.TLS.Mode == "":
		return DefaultTLSMode
	}
	return s.TLS.Mode
}

// Monitored reports whether spec.monitoring runs an exporter beside each server.
func (s *DatabaseSpec) Monitored() bool {
	return s.Monitoring != nil && s.Monitoring.Enabled
}
