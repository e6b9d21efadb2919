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

// writeStatus writes the status computed from the pass when it differs from
// the stored one, and emits events for the transitions that matter to a
// person: a new problem (Warning), and reaching Running.
func (r *Reconciler) writeStatus(ctx context.Context, p *pass, problem *status.Problem) error {
	db := p.db
	var cause *status.Cause
	if problem == nil && p.terminating == nil {
		var err error
		if cause, err = p.cause(ctx); err != nil {
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
	})
	if equality.Semantic.DeepEqual(db.Status, newStatus) {
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
	if _, err := r.dbs.DbcontrollerV1alpha1().Databases(db.Namespace).ApplyStatus(ctx, ac, repairOptions); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}

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
