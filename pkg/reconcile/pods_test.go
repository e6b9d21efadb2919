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
)

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
			sts := expectedStatefulSet(t, db)
			sts.UID = "sts-uid"
			sts.Generation = 2
			sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, CurrentRevision: "rev-1", UpdateRevision: "rev-2"}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default", UID: "pod-uid",
					Labels: map[string]string{"app.kubernetes.io/name": "mysql", "app.kubernetes.io/instance": "orders",
						"app.kubernetes.io/managed-by": "database-controller", "controller-revision-hash": tt.revision},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "orders", UID: "sts-uid", Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{NodeName: tt.node},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}},
			}
			f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), pod)
			if tt.deleted {
				uid := types.UID("pod-uid")
				f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
					metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
				f.events = append(f.events, "Normal Updated Deleted pod orders-0: it was never scheduled and is of an earlier revision")
			}
			msg := "pod orders-0 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."
			f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "Unschedulable", "0/1 replicas are ready: "+msg,
				"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
			f.events = append(f.events, "Warning Unschedulable "+msg)
			f.run(ctx, ref(db), synced)
		})
	}
}
