// Package status computes a Database's status from the Database and the
// children observed. Compute is a pure function; the controller writes its
// result only when it differs from what is stored.
package status

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// Reasons of the Ready and Progressing conditions. Each one says what a
// person can do about it.
const (
	ReasonAllReplicasReady = "AllReplicasReady"
	ReasonReplicasNotReady = "ReplicasNotReady"
	ReasonStopped          = "Stopped"
	ReasonProvisioning     = "Provisioning"
	ReasonRollingUpdate    = "RollingUpdate"
	ReasonWaitingForReady  = "WaitingForReadiness"
	ReasonScaling          = "Scaling"
	ReasonStopping         = "Stopping"
	ReasonConverged        = "Converged"
	ReasonUnknownVersion   = "UnknownVersion"
	ReasonEndOfLife        = "EndOfLife"
	ReasonSettingFCV       = "SettingFeatureCompatibilityVersion"
	ReasonFCVFailed        = "FeatureCompatibilityVersionFailed"
	ReasonSupported        = "Supported"
	ReasonResourceConflict = "ResourceConflict"
	// ReasonMajorUpgrade: an in-place major upgrade is under way;
	// ReasonMajorUpgradeFailed: it failed, and the old version serves.
	ReasonMajorUpgrade       = "MajorUpgrade"
	ReasonMajorUpgradeFailed = "MajorUpgradeFailed"
	// ReasonTLSSecretInvalid: the Secret of spec.tls.secretName is not
	// among the labelled Secrets the controller reads, or what it holds
	// cannot serve (no key of the certificate, a chain its ca.crt does not
	// sign, a name missing); a new Database waits for it, a running one's
	// servers keep the certificate they have (status.tls.problem).
	ReasonTLSSecretInvalid      = "TLSSecretInvalid"
	ReasonCredentialsMissing    = "CredentialsSecretMissing"
	ReasonCredentialsRejected   = "CredentialsRejected"
	ReasonStorageResizeFailed   = "StorageResizeFailed"
	ReasonDeleting              = "Deleting"
	ReasonRestoring             = "Restoring"
	ReasonRestoreRefused        = "RestoreRefused"
	ReasonRestoreWaiting        = "RestoreBackupNotReady"
	ReasonFinalBackup           = "TakingFinalBackup"
	ReasonFinalBackupFailed     = "FinalBackupFailed"
	ReasonBackupsReady          = "BackupsReady"
	ReasonScheduleInvalid       = "ScheduleInvalid"
	ReasonScheduledBackupFailed = "ScheduledBackupFailed"
	// ReasonBaseBackupNotRestorable: the newest base backup proven (or not)
	// restorable could not be restored (spec.backup.verifyRestore).
	ReasonBaseBackupNotRestorable = "BaseBackupNotRestorable"
	// Reasons of the Replicating condition. NoPrimary and FailingOver
	// are also the Ready condition's while no primary serves.
	ReasonStreaming            = "Streaming"
	ReasonNoPrimary            = "NoPrimary"
	ReasonFailingOver          = "FailingOver"
	ReasonReplicasNotStreaming = "ReplicasNotStreaming"
	// ReasonServersUnreachable: no primary serves that the controller
	// reaches, and servers their kubelets report ready do not answer it
	// (the pods' addresses not routed from where it runs, and no tunnel
	// through the API server: its --server-access). Also the Ready
	// condition's.
	ReasonServersUnreachable = "ServersUnreachable"
	// ReasonSynchronousUnsupported: spec.replication.synchronous asks
	// for more than the primary's server can wait for (MariaDB: one
	// replica); its replication is left as it is.
	ReasonSynchronousUnsupported = "SynchronousUnsupported"
	// ReasonCommitsStalled: the primary's commits have waited long for
	// replicas to acknowledge them (synchronous replication with too few
	// replicas streaming); Stuck while a clone from the primary waits for
	// them too.
	ReasonCommitsStalled = "CommitsStalled"
)

// Reasons of the ParametersApplied condition.
const (
	// ReasonParametersApplied: every server runs with spec.parameters.
	ReasonParametersApplied = "Applied"
	// ReasonRestartPending: servers restart to take parameters they read
	// only at start.
	ReasonRestartPending = "RestartPending"
	// ReasonParameterRejected: a server refused a parameter, in its words;
	// the servers run with the parameters they had.
	ReasonParameterRejected = "ParameterRejected"
	// ReasonParametersConfigMapNotFound: the ConfigMap of
	// spec.parametersConfigMap is not found among those the controller
	// watches; the servers keep the parameters they have.
	ReasonParametersConfigMapNotFound = "ParametersConfigMapNotFound"
	// ReasonParametersPending: spec.parameters changed, and no server
	// serves to check them yet.
	ReasonParametersPending = "Pending"
)

// Restore is what Compute reads of a restore.
type Restore struct {
	// Backup is spec.restore.backup.
	Backup string
	// InTemplate says the observed StatefulSet's pods still restore (and
	// mount the backup's volume): the Database is not Running until a
	// rollout without it.
	InTemplate bool
	// Failure is what the last attempt failed on, "" if none did.
	Failure string
}

// Termination is the state of a Database being deleted while the
// controller holds it with its finalizer.
type Termination struct {
	// Reason and Message are the Ready condition's.
	Reason, Message string
	// Warning says a person must act: the Warning event goes with it.
	Warning bool
}

// Problem is a reason the controller cannot bring a Database to its spec
// until a person acts: a spec the schema cannot reject, or an object in the
// way. It is reported in the conditions and in a Warning event.
type Problem struct {
	// Reason is one of the Reason constants, in CamelCase.
	Reason string
	// Message says what is wrong and what to do.
	Message string
	// Recheck is true when the problem may clear without a change to the
	// Database, as when an object in the way is deleted: the controller looks
	// again on a capped backoff instead of waiting for the resync.
	Recheck bool
}

func (p *Problem) Error() string { return p.Reason + ": " + p.Message }

// Input is everything Compute reads.
type Input struct {
	// Database is the Database as stored, including its current status.
	Database *dbv1alpha1.Database
	// Endpoint is host:port of the client Service; "" when the engine is unknown.
	Endpoint string
	// StatefulSet is the observed StatefulSet, or nil when there is none.
	// After a write it is the object the API server returned.
	StatefulSet *appsv1.StatefulSet
	// Image is the image the StatefulSet should run, "" when unknown.
	Image string
	// Problem, when set, blocks progress.
	Problem *Problem
	// Cause, when set, is why replicas are not ready (see FindCause).
	Cause *Cause
	// Refusal, when set, says the servers serve but refuse the credentials
	// of the Secret (ReasonCredentialsRejected): the Database is Degraded,
	// not Running, once every replica is ready or no primary answers the
	// controller.
	Refusal *Cause
	// EndOfLife, when set, says the version no longer gets upstream
	// rebuilds: a VersionSupported condition False, and the Database runs on.
	EndOfLife string
	// NewFeatureCompatibilityVersion is the featureCompatibilityVersion of
	// new data at spec.version ("" for engines without one). It is recorded
	// when the Database first reaches its version.
	NewFeatureCompatibilityVersion string
	// FeatureCompatibilityVersionSet, when not "", is the
	// featureCompatibilityVersion the controller has just set on the data.
	FeatureCompatibilityVersionSet string
	// FeatureCompatibility, when set, is the FeatureCompatibility condition:
	// the controller is setting the featureCompatibilityVersion, or failed to.
	FeatureCompatibility *metav1.Condition
	// Backup is the Backup condition, nil when spec.backup is not set; and
	// LastScheduleTime the newest tick a scheduled backup was made for.
	Backup           *metav1.Condition
	LastScheduleTime *metav1.Time
	// Termination, when set, says the Database is being deleted.
	Termination *Termination
	// Restore, when set, is the restore of spec.restore.backup.
	Restore *Restore
	// Replication, for a replicated Database, is what the controller
	// observed of its instances, and Replicating its condition (nil for a
	// Database that is not replicated). While Replicating says that no
	// primary serves (ReasonNoPrimary, ReasonFailingOver,
	// ReasonServersUnreachable), the Database
	// is not Running, whatever its pods' readiness.
	Replication *dbv1alpha1.ReplicationStatus
	Replicating *metav1.Condition
	// Archiving says the spec asks for continuous archiving; without it,
	// status.archive and the ContinuousArchiving condition go. Archive and
	// Archived are what the primary said and its condition; nil keeps the
	// last ones (the primary did not answer this time).
	Archiving bool
	Archive   *dbv1alpha1.ArchiveStatus
	Archived  *metav1.Condition
	// RecoverableFrom is the first point a point-in-time restore of the
	// archive reaches (backup.RecoverableFrom); nil while there is none.
	RecoverableFrom *metav1.Time
	// ParametersDecided says the parameters step decided status.parameters
	// (Parameters) and the ParametersApplied condition (ParametersApplied;
	// nil removes it); otherwise both stay as they were.
	ParametersDecided bool
	Parameters        *dbv1alpha1.ParametersStatus
	ParametersApplied *metav1.Condition
	// TLSDecided says the TLS step decided status.tls (TLS, nil with TLS
	// Disabled); otherwise it stays as it was.
	TLSDecided bool
	TLS        *dbv1alpha1.TLSStatus
	// Version is the version the StatefulSet runs: spec.version, or while
	// a major upgrade holds it, the version upgraded from; "" for
	// spec.version. It becomes currentVersion once rolled out.
	Version string
	// MajorUpgradeDecided says the major upgrade step decided
	// status.majorUpgrade (MajorUpgrade, nil for none); otherwise it stays
	// as it was. DataVersion, when set, is the version the data was just
	// upgraded to: currentVersion from now on.
	MajorUpgradeDecided bool
	MajorUpgrade        *dbv1alpha1.MajorUpgradeStatus
	DataVersion         string
	// Now stamps conditions whose status changes.
	Now metav1.Time
}

// Compute returns the status the Database should have.
func Compute(in Input) dbv1alpha1.DatabaseStatus {
	db := in.Database
	old := db.Status
	st := dbv1alpha1.DatabaseStatus{
		CurrentVersion:              old.CurrentVersion,
		FeatureCompatibilityVersion: old.FeatureCompatibilityVersion,
		Endpoint:                    in.Endpoint,
		CredentialsSecret:           names.SecretName(db),
		Selector:                    names.Selector(db),
		ObservedGeneration:          db.Generation,
		Conditions:                  append([]metav1.Condition(nil), old.Conditions...),
		LastScheduleTime:            in.LastScheduleTime,
		Replication:                 in.Replication,
		Parameters:                  old.Parameters,
		TLS:                         old.TLS,
		MajorUpgrade:                old.MajorUpgrade,
	}
	if in.TLSDecided {
		st.TLS = in.TLS
	}
	if in.MajorUpgradeDecided {
		st.MajorUpgrade = in.MajorUpgrade
	}
	version := in.Version
	if version == "" {
		version = db.Spec.Version
	}
	desired := db.Spec.DesiredReplicas()
	if sts := in.StatefulSet; sts != nil {
		st.Replicas = sts.Status.Replicas
		st.ReadyReplicas = sts.Status.ReadyReplicas
	}
	rolledOut := RolledOut(in.StatefulSet, desired, in.Image)
	restoring := in.Restore != nil && in.Restore.InTemplate
	if r := in.Restore; r != nil {
		st.Restore = &dbv1alpha1.RestoreStatus{Backup: r.Backup}
		if old.Restore != nil && old.Restore.Backup == r.Backup {
			st.Restore.CompletionTime = old.Restore.CompletionTime
		}
		switch {
		case st.Restore.CompletionTime != nil:
		case rolledOut && restoring && desired > 0 && in.Problem == nil:
			// Every replica initialised its data from the backup and serves:
			// its restore script ran to its end, or the pod would not start.
			st.Restore.CompletionTime = &in.Now
		default:
			st.Restore.Message = r.Failure
		}
	}
	if in.DataVersion != "" {
		st.CurrentVersion = in.DataVersion
	}
	if rolledOut && desired > 0 && in.Problem == nil && in.Image != "" && !restoring {
		st.CurrentVersion = version
		if old.CurrentVersion == "" && st.FeatureCompatibilityVersion == "" {
			// New data: it has the featureCompatibilityVersion of its version.
			st.FeatureCompatibilityVersion = in.NewFeatureCompatibilityVersion
		}
	}
	if in.FeatureCompatibilityVersionSet != "" {
		st.FeatureCompatibilityVersion = in.FeatureCompatibilityVersionSet
	}

	ready := metav1.Condition{Type: dbv1alpha1.ConditionReady, Status: metav1.ConditionFalse}
	progressing := metav1.Condition{Type: dbv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue}
	switch {
	case in.Termination != nil:
		st.Phase = dbv1alpha1.PhaseTerminating
		ready.Reason, ready.Message = in.Termination.Reason, in.Termination.Message
		progressing.Reason, progressing.Message = in.Termination.Reason, in.Termination.Message
	case in.Problem != nil:
		st.Phase = dbv1alpha1.PhaseFailed
		ready.Reason, ready.Message = in.Problem.Reason, in.Problem.Message
		progressing.Status = metav1.ConditionFalse
		progressing.Reason, progressing.Message = in.Problem.Reason, in.Problem.Message
	case in.StatefulSet == nil:
		st.Phase = dbv1alpha1.PhasePending
		ready.Reason, ready.Message = ReasonProvisioning, "the StatefulSet does not exist yet"
		progressing.Reason, progressing.Message = ReasonProvisioning, "creating the Secret, the Services and the StatefulSet"
	case desired == 0 && rolledOut:
		st.Phase = dbv1alpha1.PhaseStopped
		ready.Reason, ready.Message = ReasonStopped, "replicas is 0: the database is stopped and its data is kept"
		progressing.Status = metav1.ConditionFalse
		progressing.Reason, progressing.Message = ReasonConverged, "the Database matches its spec"
	case restoring:
		st.Phase = dbv1alpha1.PhaseProvisioning
		ready.Reason = ReasonRestoring
		switch {
		case st.Restore.CompletionTime != nil:
			ready.Message = fmt.Sprintf("restored backup %s; restarting without its volume", in.Restore.Backup)
		case in.Restore.Failure != "":
			ready.Message = fmt.Sprintf("restoring backup %s failed: %s", in.Restore.Backup, in.Restore.Failure)
		default:
			ready.Message = fmt.Sprintf("restoring backup %s: %d/%d replicas ready", in.Restore.Backup, st.ReadyReplicas, desired)
		}
		if in.Cause != nil && in.Restore.Failure == "" {
			ready.Reason, ready.Message = in.Cause.Reason, ready.Message+": "+in.Cause.Message
		}
		progressing.Reason, progressing.Message = ReasonRestoring, ready.Message
	case desired > 0 && in.Refusal != nil && (rolledOut || noPrimary(in.Replicating)):
		// The servers serve the clients that have the password they hold,
		// not those that have the Secret's. A replicated Database's servers
		// refuse the controller too, so it cannot tell whether a primary
		// serves: the refusal is the cause it can name.
		st.Phase = dbv1alpha1.PhaseDegraded
		ready.Reason, ready.Message = in.Refusal.Reason, in.Refusal.Message
		progressing.Status = metav1.ConditionFalse
		progressing.Reason, progressing.Message = ReasonConverged, "the Database matches its spec"
	case desired > 0 && noPrimary(in.Replicating):
		// No primary serves: whatever the pods' readiness, clients cannot write.
		st.Phase = dbv1alpha1.PhaseUpdating
		if old.CurrentVersion == "" {
			st.Phase = dbv1alpha1.PhaseProvisioning
		}
		ready.Reason, ready.Message = in.Replicating.Reason, in.Replicating.Message
		progressing.Reason, progressing.Message = in.Replicating.Reason, in.Replicating.Message
	case rolledOut:
		st.Phase = dbv1alpha1.PhaseRunning
		ready.Status = metav1.ConditionTrue
		ready.Reason, ready.Message = ReasonAllReplicasReady, fmt.Sprintf("%d/%d replicas are ready", st.ReadyReplicas, desired)
		progressing.Status = metav1.ConditionFalse
		progressing.Reason, progressing.Message = ReasonConverged, "the Database matches its spec"
	case desired == 0:
		st.Phase = dbv1alpha1.PhaseUpdating
		ready.Reason, ready.Message = ReasonStopping, fmt.Sprintf("stopping: %d replicas still running", st.Replicas)
		progressing.Reason, progressing.Message = ReasonStopping, ready.Message
	default:
		ready.Reason, ready.Message = ReasonReplicasNotReady, fmt.Sprintf("%d/%d replicas are ready", st.ReadyReplicas, desired)
		if in.Cause != nil {
			ready.Reason, ready.Message = in.Cause.Reason, ready.Message+": "+in.Cause.Message
		}
		switch {
		case old.CurrentVersion == "":
			st.Phase = dbv1alpha1.PhaseProvisioning
			progressing.Reason, progressing.Message = ReasonProvisioning, fmt.Sprintf("waiting for %d/%d replicas to become ready", st.ReadyReplicas, desired)
		case st.Replicas != desired && !convergedAt(old, db.Generation):
			st.Phase = dbv1alpha1.PhaseUpdating
			progressing.Reason, progressing.Message = ReasonScaling, fmt.Sprintf("scaling from %d to %d replicas: %d ready", st.Replicas, desired, st.ReadyReplicas)
		case !isUpdated(in.StatefulSet, desired, in.Image) && !onlyPodsMissing(in.StatefulSet, desired, in.Image):
			st.Phase = dbv1alpha1.PhaseUpdating
			progressing.Reason, progressing.Message = ReasonRollingUpdate, fmt.Sprintf("rolling out: %d/%d replicas updated, %d ready",
				in.StatefulSet.Status.UpdatedReplicas, desired, st.ReadyReplicas)
		default:
			// Every replica runs the current spec; some are not ready, such
			// as a pod that restarted, or one deleted and made again: no
			// rollout, so not Updating.
			st.Phase = dbv1alpha1.PhaseDegraded
			progressing.Reason, progressing.Message = ReasonWaitingForReady, fmt.Sprintf(
				"every replica runs the current spec; waiting for %d/%d to pass the readiness probe", desired-st.ReadyReplicas, desired)
		}
	}
	if u := st.MajorUpgrade; u != nil && in.Problem == nil && in.Termination == nil && u.Phase != dbv1alpha1.MajorUpgradeFailed {
		msg := majorUpgradeProgress(u, st.Replicas)
		st.Phase = dbv1alpha1.PhaseUpdating
		progressing = metav1.Condition{Type: dbv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: ReasonMajorUpgrade, Message: msg}
		if u.Phase == dbv1alpha1.MajorUpgradeUpgrading {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonMajorUpgrade, msg
		}
	}
	conditions := []metav1.Condition{ready, progressing}
	if in.EndOfLife != "" {
		conditions = append(conditions, metav1.Condition{Type: dbv1alpha1.ConditionVersionSupported, Status: metav1.ConditionFalse,
			Reason: ReasonEndOfLife, Message: in.EndOfLife})
	} else {
		// Present only while it is False: a supported version needs no word.
		meta.RemoveStatusCondition(&st.Conditions, dbv1alpha1.ConditionVersionSupported)
	}
	if in.FeatureCompatibility != nil {
		conditions = append(conditions, *in.FeatureCompatibility)
	} else {
		// Present only while the controller sets it, or failed to.
		meta.RemoveStatusCondition(&st.Conditions, dbv1alpha1.ConditionFeatureCompatibility)
	}
	if in.Backup != nil {
		conditions = append(conditions, *in.Backup)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, dbv1alpha1.ConditionBackup)
	}
	if in.Replicating != nil {
		conditions = append(conditions, *in.Replicating)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, dbv1alpha1.ConditionReplicating)
	}
	switch {
	case !in.Archiving:
		meta.RemoveStatusCondition(&st.Conditions, dbv1alpha1.ConditionContinuousArchiving)
	case in.Archived != nil:
		conditions = append(conditions, *in.Archived)
		fallthrough
	default:
		st.Archive = recoverable(old.Archive, in.Archive, in.RecoverableFrom)
	}
	if in.ParametersDecided {
		st.Parameters = in.Parameters
		if in.ParametersApplied != nil {
			conditions = append(conditions, *in.ParametersApplied)
		} else {
			meta.RemoveStatusCondition(&st.Conditions, dbv1alpha1.ConditionParametersApplied)
		}
	}
	for _, c := range conditions {
		c.ObservedGeneration = db.Generation
		c.LastTransitionTime = in.Now
		// SetStatusCondition keeps LastTransitionTime unless the status changes.
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// noPrimary reports whether replicating says that no primary serves.
func noPrimary(replicating *metav1.Condition) bool {
	return replicating != nil && replicating.Status == metav1.ConditionFalse &&
		(replicating.Reason == ReasonNoPrimary || replicating.Reason == ReasonFailingOver || replicating.Reason == ReasonServersUnreachable)
}

// RolledOut reports whether sts has settled at the desired replica count
// with every replica ready, on the current revision, running image.
func RolledOut(sts *appsv1.StatefulSet, desired int32, image string) bool {
	return isUpdated(sts, desired, image) && sts.Status.Replicas == desired && sts.Status.ReadyReplicas == desired
}

// isUpdated reports whether sts has observed its spec, asks for desired
// replicas of image, and has moved every replica to its update revision.
func isUpdated(sts *appsv1.StatefulSet, desired int32, image string) bool {
	return specObserved(sts, desired, image) && (desired == 0 || sts.Status.UpdatedReplicas == desired)
}

// specObserved reports whether sts has observed its spec, asks for desired
// replicas of image, and reports no revision other than the current one.
func specObserved(sts *appsv1.StatefulSet, desired int32, image string) bool {
	if sts == nil || sts.Status.ObservedGeneration < sts.Generation {
		return false
	}
	if sts.Spec.Replicas != nil && *sts.Spec.Replicas != desired {
		return false
	}
	if image != "" && (len(sts.Spec.Template.Spec.Containers) == 0 || sts.Spec.Template.Spec.Containers[0].Image != image) {
		return false
	}
	s := sts.Status
	return s.UpdateRevision == "" || s.CurrentRevision == s.UpdateRevision || desired == 0
}

// onlyPodsMissing reports whether what keeps sts from being updated is
// only pods it has not counted at its one revision yet: a pod deleted, or
// one made again after that, not a rollout. Without revisions reported
// the two cannot be told apart.
func onlyPodsMissing(sts *appsv1.StatefulSet, desired int32, image string) bool {
	return specObserved(sts, desired, image) && sts.Status.UpdateRevision != "" && sts.Status.UpdatedReplicas < desired
}

// convergedAt reports whether the stored status says the Database
// converged at generation, and no spec change came after: a replica count
// below the desired one is then a pod lost (deleted, evicted), not
// scaling.
func convergedAt(old dbv1alpha1.DatabaseStatus, generation int64) bool {
	p := meta.FindStatusCondition(old.Conditions, dbv1alpha1.ConditionProgressing)
	return p != nil && p.ObservedGeneration == generation && (p.Reason == ReasonConverged || p.Reason == ReasonWaitingForReady)
}

// recoverable is the archive's status: what the primary said now, or
// else what the status said, with the recoverable window: from the oldest
// kept base backup's consistent point (from) to the later of it and the
// last archived file. Nil when there is nothing to say.
func recoverable(old, now *dbv1alpha1.ArchiveStatus, from *metav1.Time) *dbv1alpha1.ArchiveStatus {
	a := old
	if now != nil {
		a = now
	}
	if from == nil && (a == nil || a.FirstRecoverableTime == nil && a.LastRecoverableTime == nil) {
		return a
	}
	if a == nil {
		a = &dbv1alpha1.ArchiveStatus{}
	} else {
		a = a.DeepCopy()
	}
	a.FirstRecoverableTime, a.LastRecoverableTime = nil, nil
	if from != nil {
		last := from
		if a.LastArchivedTime != nil && a.LastArchivedTime.After(from.Time) {
			last = a.LastArchivedTime
		}
		a.FirstRecoverableTime, a.LastRecoverableTime = from.DeepCopy(), last.DeepCopy()
	}
	if *a == (dbv1alpha1.ArchiveStatus{}) {
		// An empty object is not written: the API server would take it
		// for null.
		return nil
	}
	return a
}

// majorUpgradeProgress says where the major upgrade u is, with replicas
// pods still running.
func majorUpgradeProgress(u *dbv1alpha1.MajorUpgradeStatus, replicas int32) string {
	prefix := fmt.Sprintf("upgrading the data from %s to %s in place: ", u.From, u.To)
	switch {
	case u.Phase == dbv1alpha1.MajorUpgradeBackingUp:
		return prefix + fmt.Sprintf("taking DatabaseBackup %s first; %s serves until it completed", u.Backup, u.From)
	case u.Phase == dbv1alpha1.MajorUpgradeUpgrading && replicas > 0:
		return prefix + fmt.Sprintf("DatabaseBackup %s completed; stopping the server", u.Backup)
	case u.Phase == dbv1alpha1.MajorUpgradeUpgrading:
		return prefix + "the server is stopped while the upgrade Job runs"
	default:
		return prefix + fmt.Sprintf("the data is upgraded; starting %s, then the Job that runs after it", u.To)
	}
}
