package reconcile

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	dbapply "github.com/dbcontroller/database-controller/pkg/generated/applyconfiguration/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// replication is the replication status and Replicating condition to
// write: those the pass found, or, when it did not reach the replication
// step, the stored ones (the condition only while the Database is
// replicated).
func (p *pass) replication(f *findings) (*dbv1alpha1.ReplicationStatus, *metav1.Condition) {
	if f.replication != nil {
		return f.replication.status, f.replication.condition
	}
	rs := p.stored.Status.Replication
	if rs == nil {
		return nil, nil
	}
	return rs, meta.FindStatusCondition(p.stored.Status.Conditions, dbv1alpha1.ConditionReplicating)
}

// sameCause reports whether ready, the stored Ready condition, already
// names cause: the same reason about the same subject. A cause's identity is
// its reason and what it is about, not the kubelet's words for it.
func sameCause(ready *metav1.Condition, cause *status.Cause) bool {
	return ready != nil && cause != nil && cause.Subject != "" && ready.Reason == cause.Reason &&
		strings.Contains(ready.Message, cause.Subject)
}

// keepWords returns cause with the words of ready, the stored Ready
// condition, when that names it already (sameCause).
func keepWords(ready *metav1.Condition, cause *status.Cause) *status.Cause {
	if !sameCause(ready, cause) {
		return cause
	}
	kept := *cause
	kept.Message = ready.Message[strings.Index(ready.Message, cause.Subject):]
	return &kept
}

// onlyPodCountChanged reports whether a Provisioning Database's new status
// differs from the stored one in the number of its pods that exist alone.
// That is no news a person acts on while the Database is being made (its
// phase, ready replicas and conditions say where it is), and the next
// write, at the latest the one to Running, carries it. A new Database's
// pod appears a moment after its StatefulSet: writing that alone cost one
// status write per new Database, which in a burst of new Databases queued
// on the client's rate limit ahead of the writes to Running.
func onlyPodCountChanged(stored, computed dbv1alpha1.DatabaseStatus) bool {
	if computed.Phase != dbv1alpha1.PhaseProvisioning || stored.Phase != dbv1alpha1.PhaseProvisioning ||
		stored.Replicas == computed.Replicas {
		return false
	}
	computed.Replicas = stored.Replicas
	return equality.Semantic.DeepEqual(stored, computed)
}

// writeStatus computes the status from what the pass found, writes it
// when it differs from the stored one, and emits events for the
// transitions that matter to a person: a new problem (Warning), and
// reaching Running. It returns when to look again, when what it reported
// may change with time alone.
func (p *pass) writeStatus(ctx context.Context, f *findings, problem *status.Problem) (recheck *RecheckError, err error) {
	r, db := p.r, p.stored
	var cause *status.Cause
	if problem == nil && f.termination == nil {
		if cause, recheck, err = p.cause(ctx, f); err != nil {
			return nil, err
		}
		if cause == nil && f.replication != nil {
			// No pod says why it is not ready: a replica that cannot
			// start replicating may wait on the primary's commits.
			cause = f.replication.stalled
		}
	}
	var refusal *status.Cause
	if problem == nil && f.termination == nil {
		if refusal, err = p.credentialsRefusal(ctx, f.pods); err != nil {
			return nil, err
		}
	}
	oldReady := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionReady)
	// A cause reported already keeps its words, so that the kubelet's
	// changing words for it (a pull error, then "Back-off pulling image")
	// cost no status write and no event.
	cause, refusal = keepWords(oldReady, cause), keepWords(oldReady, refusal)
	// The schedule's status reads the Database's backups, and so does
	// the recoverable window of an archive (its oldest base backup).
	var ofDB []*dbv1alpha1.DatabaseBackup
	if b := p.db.Spec.Backup; b != nil && (b.Schedule != "" || f.archive.wanted) {
		if ofDB, err = p.read.backupsOf(p.db); err != nil {
			return nil, err
		}
	}
	var recoverableFrom *metav1.Time
	if f.archive.wanted {
		recoverableFrom = backup.RecoverableFrom(p.db, ofDB)
	}
	backups := backup.Status(p.db, ofDB)
	replication, replicating := p.replication(f)
	newStatus := status.Compute(status.Input{
		Cause:       cause,
		Refusal:     refusal,
		Database:    db,
		Endpoint:    p.plan.Endpoint,
		StatefulSet: f.statefulSet,
		Image:       p.plan.Image,
		Problem:     problem,
		EndOfLife:   p.plan.EndOfLife,
		Now:         metav1.NewTime(r.clock.Now()),

		NewFeatureCompatibilityVersion: p.plan.NewFeatureCompatibilityVersion,
		FeatureCompatibilityVersionSet: f.featureCompatibility.set,
		FeatureCompatibility:           f.featureCompatibility.condition,
		Termination:                    f.termination,
		Restore:                        restoreInput(p.db, f.statefulSet, f.pods),
		Backup:                         backups.Condition,
		LastScheduleTime:               backups.LastScheduleTime,
		Replication:                    replication,
		Replicating:                    replicating,
		Archiving:                      f.archive.wanted,
		Archive:                        f.archive.archive,
		Archived:                       f.archive.condition,
		RecoverableFrom:                recoverableFrom,
		ParametersDecided:              f.parameters.decided,
		Parameters:                     f.parameters.status,
		ParametersApplied:              f.parameters.condition,
		TLSDecided:                     f.tls.decided,
		TLS:                            f.tls.status,
		Version:                        plannedVersion(p.plan),
		MajorUpgradeDecided:            f.upgrade.decided,
		MajorUpgrade:                   f.upgrade.upgrade,
		DataVersion:                    f.upgrade.dataVersion,
	})
	if equality.Semantic.DeepEqual(db.Status, newStatus) || onlyPodCountChanged(db.Status, newStatus) {
		return recheck, nil
	}
	// Server-side apply of the whole status: the controller owns every
	// status field, and an apply needs no resourceVersion, so a lister that
	// lags behind the last status write causes no conflict.
	st := &dbapply.DatabaseStatusApplyConfiguration{}
	if err := builder.Convert(newStatus, st); err != nil {
		return nil, err
	}
	ac := dbapply.Database(db.Name, db.Namespace).WithStatus(st)
	updated, err := r.dbs.DbcontrollerV1alpha1().Databases(db.Namespace).ApplyStatus(ctx, ac, repairOptions)
	if err != nil {
		return nil, fmt.Errorf("updating status: %w", err)
	}
	// A later write in the same pass compares with what is stored now, and
	// a later pass on a cache that has not shown it yet too (written.go).
	stored := db.DeepCopy()
	stored.ResourceVersion, stored.Status = updated.ResourceVersion, updated.Status
	p.stored = stored
	r.rememberWritten(db, db.ResourceVersion, updated.ResourceVersion, updated.Status)

	newReady := meta.FindStatusCondition(newStatus.Conditions, dbv1alpha1.ConditionReady)
	if bc := backups.Condition; bc != nil && bc.Status == metav1.ConditionFalse {
		if old := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionBackup); old == nil || old.Reason != bc.Reason || old.Message != bc.Message {
			r.recorder.Event(db, corev1.EventTypeWarning, bc.Reason, bc.Message)
		}
	}
	if ac := f.archive.condition; ac != nil && ac.Status == metav1.ConditionFalse {
		if old := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving); old == nil || old.Reason != ac.Reason {
			r.recorder.Event(db, corev1.EventTypeWarning, ac.Reason, ac.Message)
		}
	}
	if t := f.termination; t != nil && t.Warning && (oldReady == nil || oldReady.Reason != t.Reason) {
		r.recorder.Event(db, corev1.EventTypeWarning, t.Reason, t.Message)
	}
	if problem != nil && (oldReady == nil || oldReady.Reason != problem.Reason || oldReady.Message != problem.Message) {
		r.recorder.Event(db, corev1.EventTypeWarning, problem.Reason, problem.Message)
	}
	for _, c := range []*status.Cause{cause, refusal} {
		if c != nil && c.Stuck && newReady != nil && newReady.Reason == c.Reason && !sameCause(oldReady, c) {
			// Once per cause: the replica counts in the message may change, the cause not.
			r.recorder.Event(db, corev1.EventTypeWarning, c.Reason, c.Message)
		}
	}
	if rc := meta.FindStatusCondition(newStatus.Conditions, dbv1alpha1.ConditionReplicating); rc != nil && rc.Reason == status.ReasonSynchronousUnsupported {
		if old := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionReplicating); old == nil || old.Reason != rc.Reason {
			r.recorder.Event(db, corev1.EventTypeWarning, rc.Reason, rc.Message)
		}
	}
	if pc := f.parameters.condition; pc != nil && (pc.Reason == status.ReasonParameterRejected || pc.Reason == status.ReasonParametersConfigMapNotFound) {
		if old := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionParametersApplied); old == nil || old.Reason != pc.Reason || old.Message != pc.Message {
			r.recorder.Event(db, corev1.EventTypeWarning, pc.Reason, pc.Message)
		}
	}
	if t := newStatus.TLS; t != nil && t.Problem != "" && (db.Status.TLS == nil || db.Status.TLS.Problem != t.Problem) {
		r.recorder.Event(db, corev1.EventTypeWarning, status.ReasonTLSSecretInvalid, t.Problem)
	}
	if eol := meta.FindStatusCondition(newStatus.Conditions, dbv1alpha1.ConditionVersionSupported); eol != nil &&
		meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionVersionSupported) == nil {
		r.recorder.Event(db, corev1.EventTypeWarning, eol.Reason, eol.Message)
	}
	if fc := f.featureCompatibility.condition; fc != nil && fc.Reason == status.ReasonFCVFailed {
		if old := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionFeatureCompatibility); old == nil || old.Reason != fc.Reason {
			r.recorder.Event(db, corev1.EventTypeWarning, fc.Reason, fc.Message)
		}
	}
	if newStatus.Phase == dbv1alpha1.PhaseRunning && db.Status.Phase != dbv1alpha1.PhaseRunning && newReady != nil {
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonRunning, "%s %s is running: %s", db.Spec.Engine, newStatus.CurrentVersion, newReady.Message)
	}
	return recheck, nil
}

// plannedVersion is the version pl runs: spec.version, or the version a
// major upgrade holds the StatefulSet at; "" with no plan.
func plannedVersion(pl *plan.Plan) string {
	if pl == nil || pl.Database == nil {
		return ""
	}
	return pl.Database.Spec.Version
}
