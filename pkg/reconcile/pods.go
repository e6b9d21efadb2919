package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// patchPodMetadata sets the keys of values (a nil value removes its key)
// in pod's metadata field, "labels" or "annotations", by a merge patch on
// the pod's UID: a pod of the same name made since (another UID) is left
// as it is, and the patch fails (podReplaced).
func (r *Reconciler) patchPodMetadata(ctx context.Context, pod *corev1.Pod, field string, values map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID, field: values}})
	if err != nil {
		return err
	}
	_, err = r.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// replaceStuckPods deletes the pods of an earlier revision of the
// StatefulSet that cannot become ready: never scheduled, or with a
// container that fails to start (CrashLoopBackOff). A rolling update waits
// for such a pod to become ready before it replaces it, which it never
// will: after spec.resources is lowered to fit a node, or a parameter
// read at start that the server cannot start with is corrected, the
// StatefulSet would wait forever (the controller's own rollout of a
// replicated Database waits for every pod to be ready too). Such a pod
// serves nothing; its claim stays, so the StatefulSet makes it again at
// the current revision, on the same data.
func (p *pass) replaceStuckPods(ctx context.Context, sts *appsv1.StatefulSet, pods []*corev1.Pod) error {
	if sts == nil || sts.Status.UpdateRevision == "" {
		return nil
	}
	db := p.db
	for _, pod := range pods {
		if !metav1.IsControlledBy(pod, sts) || pod.DeletionTimestamp != nil ||
			pod.Labels[appsv1.ControllerRevisionHashLabelKey] == sts.Status.UpdateRevision {
			continue
		}
		var why string
		switch {
		case pod.Spec.NodeName == "" && unschedulable(pod):
			why = "it was never scheduled"
		case crashLooping(pod):
			why = "its server fails to start"
		default:
			continue
		}
		err := p.r.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
		}
		if err == nil {
			p.r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated,
				"Deleted pod %s: %s, and it is of an earlier revision; the StatefulSet makes it again at the current one", pod.Name, why)
		}
	}
	return nil
}

// crashLooping reports whether a container of pod, an init container or
// not, waits to be started again after failing (CrashLoopBackOff).
func crashLooping(pod *corev1.Pod) bool {
	for _, cs := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if !cs.Ready && cs.RestartCount > 0 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
			return true
		}
	}
	return false
}

func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}
