package reconcile

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbcontroller/database-controller/pkg/builder"
)

// ownJob is the pass's Database's Job name as the cache has it; or, when
// there is none, the one build makes, created (created says so, and
// "Job <name>" is added to made); or nil while the cache has yet to show
// one created before. A Job of that name the Database does not control is
// a conflict.
func (p *pass) ownJob(ctx context.Context, name string, made *[]string, build func() (*batchv1.Job, error)) (job *batchv1.Job, created bool, err error) {
	r, db := p.r, p.db
	key := ChildKey{Kind: "Job", Namespace: db.Namespace, Name: name}
	r.expectations.Look(key)
	job, err = p.read.job(db.Namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		if r.expectations.Pending(key) {
			return nil, false, &WaitingError{Kind: "Job", Name: name}
		}
		if job, err = build(); err != nil {
			return nil, false, err
		}
		stored, err := r.kube.BatchV1().Jobs(db.Namespace).Create(ctx, job, createOptions)
		if apierrors.IsAlreadyExists(err) {
			return nil, false, nil // the cache shows it soon
		}
		if err != nil {
			return nil, false, fmt.Errorf("creating Job %s: %w", name, err)
		}
		r.expectations.Created(key, stored.ResourceVersion)
		*made = append(*made, "Job "+name)
		return job, true, nil
	case err != nil:
		return nil, false, err
	}
	r.expectations.Observed(key)
	if !metav1.IsControlledBy(job, db) {
		return nil, false, conflict(db, "Job", name)
	}
	return job, false, nil
}

// deleteJob deletes job, the one observed (its UID), with its pods.
func (r *Reconciler) deleteJob(ctx context.Context, job *batchv1.Job) error {
	background := metav1.DeletePropagationBackground
	err := r.kube.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &background,
		Preconditions: &metav1.Preconditions{UID: &job.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Job %s: %w", job.Name, err)
	}
	return nil
}

// jobObject is the Job to create from its apply configuration.
func jobObject(ac any) *batchv1.Job {
	job := &batchv1.Job{}
	_ = builder.Convert(ac, job) // an apply configuration always converts
	return job
}
