package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

func TestOnlyPodCountChanged(t *testing.T) {
	provisioning := func(replicas, ready int32, message string) dbv1alpha1.DatabaseStatus {
		return dbv1alpha1.DatabaseStatus{
			Phase: dbv1alpha1.PhaseProvisioning, Replicas: replicas, ReadyReplicas: ready,
			Conditions: []metav1.Condition{{Type: dbv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: "ReplicasNotReady", Message: message}},
		}
	}
	running := provisioning(1, 1, "1/1 replicas are ready")
	running.Phase = dbv1alpha1.PhaseRunning
	scaling := running
	scaling.Replicas = 2

	for _, tc := range []struct {
		name             string
		stored, computed dbv1alpha1.DatabaseStatus
		want             bool
	}{
		{"the pod of a Provisioning Database appeared", provisioning(0, 0, "0/1 replicas are ready"), provisioning(1, 0, "0/1 replicas are ready"), true},
		{"nothing changed", provisioning(1, 0, "0/1 replicas are ready"), provisioning(1, 0, "0/1 replicas are ready"), false},
		{"the count and the ready count changed", provisioning(0, 0, "0/1 replicas are ready"), provisioning(1, 1, "1/1 replicas are ready"), false},
		{"the count and a message changed", provisioning(0, 0, "0/1 replicas are ready"), provisioning(1, 0, "0/1 replicas are ready: a cause"), false},
		{"the count of a Running Database changed", running, scaling, false},
		{"Provisioning became Running", provisioning(1, 0, "0/1 replicas are ready"), running, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlyPodCountChanged(tc.stored, tc.computed); got != tc.want {
				t.Errorf("onlyPodCountChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
