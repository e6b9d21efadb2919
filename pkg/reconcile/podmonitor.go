package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// ensurePodMonitor gives a monitored Database a PodMonitor of the
// Prometheus Operator, where the cluster has its API (the controller
// watches PodMonitors then: Caches.PodMonitors), owned like any child:
// made, its spec and labels repaired, and deleted once spec.monitoring is
// off. A PodMonitor of the name that is not the Database's is left alone,
// said once in a Warning event: it does not stop the servers' pass.
func (p *pass) ensurePodMonitor(ctx context.Context) ([]string, error) {
	r, db := p.r, p.db
	if r.caches[srcPodMonitors] == nil || r.dynamic == nil {
		return nil, nil
	}
	name := db.Name
	key := ChildKey{Kind: "PodMonitor", Namespace: db.Namespace, Name: name}
	want := db.Spec.Monitored() && p.plan.Engine != nil && p.plan.Engine.Runtime().Exporter != nil
	r.expectations.Look(key)
	existing, err := p.read.podMonitor(db.Namespace, name)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	case err == nil:
		r.expectations.Observed(key)
	}
	client := r.dynamic.Resource(builder.PodMonitorGVR).Namespace(db.Namespace)
	desired := builder.NewPodMonitor(db)
	switch {
	case existing == nil && !want:
		return nil, nil
	case existing == nil:
		if r.expectations.Pending(key) {
			return nil, &WaitingError{Kind: "PodMonitor", Name: name}
		}
		if _, taken := r.conflicts.Get(key); taken {
			return nil, nil
		}
		created, err := client.Create(ctx, desired, createOptions)
		switch {
		case err == nil:
			r.expectations.Created(key, created.GetResourceVersion())
			return []string{"PodMonitor " + name}, nil
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("creating PodMonitor %s: %w", name, err)
		}
		// Not in the cache, which holds those labelled as the controller's.
		live, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading PodMonitor %s: %w", name, err)
		}
		if !metav1.IsControlledBy(live, db) {
			p.podMonitorTaken(key)
			return nil, nil
		}
		existing = live
	case !metav1.IsControlledBy(existing, db):
		p.podMonitorTaken(key)
		return nil, nil
	}
	if !want {
		uid := existing.GetUID()
		err := client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting PodMonitor %s: %w", name, err)
		}
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Deleted PodMonitor %s: spec.monitoring is off", name)
		return nil, nil
	}
	if podMonitorMatches(existing, desired) {
		return nil, nil
	}
	if _, err := client.Apply(ctx, name, desired, repairOptions); err != nil {
		return nil, fmt.Errorf("repairing PodMonitor %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Repaired the PodMonitor", "podMonitor", klog.KObj(existing))
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Updated PodMonitor %s to match the Database spec", name)
	return nil, nil
}

// podMonitorMatches reports whether existing has desired's spec, and its
// labels with their values (others' labels may be added).
func podMonitorMatches(existing, desired *unstructured.Unstructured) bool {
	labels := existing.GetLabels()
	for k, v := range desired.GetLabels() {
		if labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(existing.Object["spec"], desired.Object["spec"])
}

// podMonitorTaken says once, in a Warning event, that the PodMonitor of
// key is another's, and remembers it, so that the next passes do not try
// to make it again until memoryTTL has passed.
func (p *pass) podMonitorTaken(key ChildKey) {
	if _, said := p.r.conflicts.Get(key); said {
		return
	}
	p.r.conflicts.Put(key, struct{}{})
	p.r.recorder.Eventf(p.db, corev1.EventTypeWarning, status.ReasonResourceConflict,
		"PodMonitor %s/%s exists and is not controlled by this Database; it is left untouched, and the Database's servers get no PodMonitor of their own: delete or rename it",
		key.Namespace, key.Name)
}
