package reconcile

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// featureCompatibilityFindings is what ensureFeatureCompatibility did.
type featureCompatibilityFindings struct {
	// condition is the FeatureCompatibility condition to report: nil when
	// nothing is being set and nothing failed.
	condition *metav1.Condition
	// set is a featureCompatibilityVersion the Job just set.
	set string
	// created is what it created.
	created []string
}

// ensureFeatureCompatibility sets the featureCompatibilityVersion of an
// upgraded MongoDB Database to its new series, once the upgrade has rolled
// out and every replica is ready, with a Job (see
// builder.NewFeatureCompatibilityJob). Until it is set, the next series is
// refused. New data needs no Job: it starts at its own series, which the
// status records. A failed Job is reported, deleted, and made again: the
// Job controller's own backoff paces the attempts.
func (p *pass) ensureFeatureCompatibility(ctx context.Context, sts *appsv1.StatefulSet) (featureCompatibilityFindings, error) {
	var found featureCompatibilityFindings
	db, e := p.db, p.plan.Engine
	// The version that runs: spec.version, or while a change of it is
	// refused (waiting for this very step), the version that ran last.
	running := db.Spec.Version
	if p.plan.Problem != nil {
		running = db.Status.CurrentVersion
	}
	want := e.FeatureCompatibilityVersion(running)
	if want == "" || db.Status.CurrentVersion == "" || db.Status.FeatureCompatibilityVersion == want || sts == nil {
		return found, nil
	}
	replicas := db.Spec.DesiredReplicas()
	containers := sts.Spec.Template.Spec.Containers
	if replicas == 0 || len(containers) == 0 || !status.RolledOut(sts, replicas, containers[0].Image) {
		return found, nil // not yet: every replica must run the new series
	}
	image := containers[0].Image
	name := builder.FeatureCompatibilityJobName(db, want)
	setting := &metav1.Condition{Type: dbv1alpha1.ConditionFeatureCompatibility, Status: metav1.ConditionFalse,
		Reason: status.ReasonSettingFCV, Message: fmt.Sprintf("setting featureCompatibilityVersion %s with Job %s", want, name)}

	job, created, err := p.ownJob(ctx, name, &found.created, func() (*batchv1.Job, error) {
		return jobObject(builder.NewFeatureCompatibilityJob(db, e, image, want, replicas)), nil
	})
	if err != nil {
		return found, err
	}
	if job == nil || created {
		if db.Status.FeatureCompatibilityVersion == "" {
			// A Database from before this controller recorded it: the
			// Job sets the series that runs, which is what it must be.
			setting.Message = fmt.Sprintf("featureCompatibilityVersion not known: setting %s with Job %s", want, name)
		}
		found.condition = setting
		return found, nil
	}
	finished, succeeded, why := builder.JobFinished(job)
	switch {
	case !finished:
		found.condition = setting
	case succeeded:
		found.set = want
	default:
		found.condition = &metav1.Condition{Type: dbv1alpha1.ConditionFeatureCompatibility, Status: metav1.ConditionFalse,
			Reason: status.ReasonFCVFailed, Message: fmt.Sprintf(
				"Job %s could not set featureCompatibilityVersion %s (%s); it is made again. Its pod's log says why: kubectl logs -n %s job/%s",
				name, want, why, db.Namespace, name)}
		if err := p.r.deleteJob(ctx, job); err != nil {
			return found, err
		}
	}
	return found, nil
}
