package reconcile

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replaceUnscheduledPods deletes the pods of an earlier revision of the
// StatefulSet that were never scheduled. A rolling update waits for such a
// pod to become ready before it replaces it, which it never will: after
// spec.resources is lowered to fit a node, the StatefulSet would wait
// forever. A pod that was never scheduled never ran and holds no data (its
// claim stays), so the StatefulSet makes it again at the current revision.
func (p *pass) replaceUnscheduledPods(ctx context.Context, sts *appsv1.StatefulSet, pods []*corev1.Pod) error {
	if sts == nil || sts.Status.UpdateRevision == "" {
		return nil
	}
	db := p.db
	for _, pod := range pods {
		if !metav1.IsControlledBy(pod, sts) || pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" ||
			pod.Labels[appsv1.ControllerRevisionHashLabelKey] == sts.Status.UpdateRevision || !unschedulable(pod) {
			continue
		}
		err := p.r.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
		}
		if err == nil {
			p.r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated,
				"Deleted pod %s: it was never scheduled and is of an earlier revision; the StatefulSet makes it again at the current one", pod.Name)
		}
	}
	return nil
}

func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}
