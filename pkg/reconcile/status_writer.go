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
	"github.com/dbcontroller/database-controller/pkg/builder"
	dbapply "github.com/dbcontroller/database-controller/pkg/generated/applyconfiguration/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// replicationStatus is the replication status to write: this pass's, or,
// when the pass did not reach the replication step, the stored one.
func (p *pass) replicationStatus() *dbv1alpha1.ReplicationStatus {
	if p.replication != nil {
		return p.replication
	}
	return p.db.Status.Replication
}

// replicatingCondition is the Replicating condition to write: this
// pass's, or the stored one while the Database is replicated and the pass
// did not reach the replication step.
func (p *pass) replicatingCondition() *metav1.Condition {
	if p.replicating != nil || p.replicationStatus() == nil {
		return p.replicating
	}
	return meta.FindStatusCondition(p.db.Status.Conditions, dbv1alpha1.ConditionReplicating)
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

// writeStatus writes the status computed from the pass when it differs from
// the stored one, and emits events for the transitions that matter to a
// person: a new problem (Warning), and reaching Running.
func (r *Reconciler) writeStatus(ctx context.Context, p *pass, problem *status.Problem) error {
	db := p.db
	var cause *status.Cause
	if problem == nil && p.terminating == nil {
		var err error
		if cause, err = p.cause(); err != nil {
			return err
		}
	}
	backupCond, lastSchedule, err := p.backupCondition()
	if err != nil {
		return err
	}
	newStatus := status.Compute(status.Input{
		Cause:       cause,
		Database:    db,
		Endpoint:    p.plan.Endpoint,
		StatefulSet: p.statefulSet,
		Image:       p.plan.Image,
		Problem:     problem,
		EndOfLife:   p.plan.EndOfLife,
		Now:         metav1.NewTime(r.clock.Now()),

		NewFeatureCompatibilityVersion: p.plan.NewFeatureCompatibilityVersion,
		FeatureCompatibilityVersionSet: p.featureCompatibilitySet,
		FeatureCompatibility:           p.featureCompatibility,
		Termination:                    p.terminating,
		Restore:                        p.restoreInput(),
		Backup:                         backupCond,
		LastScheduleTime:               lastSchedule,
		Replication:                    p.replicationStatus(),
		Replicating:                    p.replicatingCondition(),
	})
	if equality.Semantic.DeepEqual(db.Status, newStatus) || onlyPodCountChanged(db.Status, newStatus) {
		return nil
	}
	// Server-side apply of the whole status: the controller owns every
	// status field, and an apply needs no resourceVersion, so a lister that
	// lags behind the last status write causes no conflict.
	st := &dbapply.DatabaseStatusApplyConfiguration{}
	if err := builder.Convert(newStatus, st); err != nil {
		return err
	}
	ac := dbapply.Database(db.Name, db.Namespace).WithStatus(st)
	updated, err := r.dbs.DbcontrollerV1alpha1().Databases(db.Namespace).ApplyStatus(ctx, ac, repairOptions)
	if err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	// A later write in the same pass compares with what is stored now.
	stored := p.db.DeepCopy()
	stored.Status = updated.Status
	p.db = stored

	oldReady := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionReady)
	newReady := meta.FindStatusCondition(newStatus.Conditions, dbv1alpha1.ConditionReady)
	if bc := backupCond; bc != nil && bc.Status == metav1.ConditionFalse {
		if old := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionBackup); old == nil || old.Reason != bc.Reason || old.Message != bc.Message {
			r.recorder.Event(db, corev1.EventTypeWarning, bc.Reason, bc.Message)
		}
	}
	if t := p.terminating; t != nil && t.Warning && (oldReady == nil || oldReady.Reason != t.Reason) {
		r.recorder.Event(db, corev1.EventTypeWarning, t.Reason, t.Message)
	}
	if problem != nil && (oldReady == nil || oldReady.Reason != problem.Reason || oldReady.Message != problem.Message) {
		r.recorder.Event(db, corev1.EventTypeWarning, problem.Reason, problem.Message)
	}
	if cause != nil && cause.Stuck && newReady != nil && newReady.Reason == cause.Reason &&
		(oldReady == nil || oldReady.Reason != cause.Reason || !strings.HasSuffix(oldReady.Message, cause.Message)) {
		// Once per cause: the replica counts in the message may change, the cause not.
		r.recorder.Event(db, corev1.EventTypeWarning, cause.Reason, cause.Message)
	}
	if eol := meta.FindStatusCondition(newStatus.Conditions, dbv1alpha1.ConditionVersionSupported); eol != nil &&
		meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionVersionSupported) == nil {
		r.recorder.Event(db, corev1.EventTypeWarning, eol.Reason, eol.Message)
	}
	if fc := p.featureCompatibility; fc != nil && fc.Reason == status.ReasonFCVFailed {
		if old := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionFeatureCompatibility); old == nil || old.Reason != fc.Reason {
			r.recorder.Event(db, corev1.EventTypeWarning, fc.Reason, fc.Message)
		}
	}
	if newStatus.Phase == dbv1alpha1.PhaseRunning && db.Status.Phase != dbv1alpha1.PhaseRunning && newReady != nil {
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonRunning, "%s %s is running: %s", db.Spec.Engine, newStatus.CurrentVersion, newReady.Message)
	}
	return nil
}
