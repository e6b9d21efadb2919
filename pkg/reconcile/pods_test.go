package reconcile

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// rollingOut seeds db, converged but for its StatefulSet, which rolls out
// revision rev-2, and pod, its pod orders-0 of revision, as status has it.
func rollingOut(t *testing.T, f *fixture, db *dbv1alpha1.Database, revision string, spec corev1.PodSpec, status corev1.PodStatus) {
	sts := expectedStatefulSet(t, db)
	sts.UID = "sts-uid"
	sts.Generation = 2
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, CurrentRevision: "rev-1", UpdateRevision: "rev-2"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default", UID: "pod-uid",
			Labels: map[string]string{"app.kubernetes.io/name": string(db.Spec.Engine), "app.kubernetes.io/instance": "orders",
				"app.kubernetes.io/managed-by": "database-controller", "controller-revision-hash": revision},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "orders", UID: "sts-uid", Controller: ptr.To(true)}}},
		Spec: spec, Status: status,
	}
	f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), pod)
}

// expectPodReplaced expects the delete of orders-0 on its UID, and its event.
func (f *fixture) expectPodReplaced(why string) {
	uid := types.UID("pod-uid")
	f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
	f.events = append(f.events, "Normal Updated Deleted pod orders-0: "+why+", and it is of an earlier revision")
}

// A pod of an earlier revision that was never scheduled blocks a rolling
// update for good: it is deleted, so that the StatefulSet makes it again at
// the current revision. Any other pod is left alone.
func TestUnscheduledPodOfAnEarlierRevisionIsReplaced(t *testing.T) {
	for _, tt := range []struct {
		name     string
		revision string
		node     string
		deleted  bool
	}{
		{"earlier revision, never scheduled", "rev-1", "", true},
		{"current revision, never scheduled", "rev-2", "", false},
		{"earlier revision, scheduled", "rev-1", "node-1", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "mysql", "8.4", 1)
			rollingOut(t, f, db, tt.revision, corev1.PodSpec{NodeName: tt.node},
				corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}})
			if tt.deleted {
				f.expectPodReplaced("it was never scheduled")
			}
			msg := "pod orders-0 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."
			f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "Unschedulable", "0/1 replicas are ready: "+msg,
				"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
			f.events = append(f.events, "Warning Unschedulable "+msg)
			f.run(ctx, ref(db), synced)
		})
	}
}

// A pod of an earlier revision whose server fails to start (a parameter
// read at start it cannot start with, since corrected) blocks a rolling
// update as well: it is deleted. One of the current revision is left to
// its restarts, and so is one that has not failed yet.
func TestCrashLoopingPodOfAnEarlierRevisionIsReplaced(t *testing.T) {
	for _, tt := range []struct {
		name     string
		revision string
		waiting  string
		deleted  bool
	}{
		{"earlier revision, crash looping", "rev-1", "CrashLoopBackOff", true},
		{"current revision, crash looping", "rev-2", "CrashLoopBackOff", false},
		{"earlier revision, starting", "rev-1", "ContainerCreating", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			server := corev1.ContainerStatus{Name: "postgresql", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: tt.waiting}}}
			if tt.waiting == "CrashLoopBackOff" {
				server.RestartCount = 4
				server.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
					Message: `FATAL:  could not map anonymous shared memory: Cannot allocate memory`}}
			}
			rollingOut(t, f, db, tt.revision, corev1.PodSpec{NodeName: "node-1"},
				corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
					ContainerStatuses: []corev1.ContainerStatus{server}})
			if tt.deleted {
				f.expectPodReplaced("its server fails to start")
			}
			if tt.waiting == "CrashLoopBackOff" {
				msg := "container postgresql of pod orders-0 keeps crashing; it last ended with Error (exit code 1): FATAL:  could not map anonymous shared memory: Cannot allocate memory"
				f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "CrashLooping", "0/1 replicas are ready: "+msg,
					"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
				f.events = append(f.events, "Warning CrashLooping "+msg)
			} else {
				f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
					"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
			}
			f.run(ctx, ref(db), synced)
		})
	}
}
