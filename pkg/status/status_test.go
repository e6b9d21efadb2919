package status

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

const (
	dbGeneration = int64(4)
	image16      = "postgres:16"
	image15      = "postgres:15"
)

var (
	then = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	now  = metav1.NewTime(time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC))
)

// endpoint is what the plan computes for the test Database.
const endpoint = "orders.default.svc:5432"

// database returns a PostgreSQL Database asking for version 16 with
// replicas desired replicas (nil leaves spec.replicas unset).
func database(replicas *int32, old dbv1alpha1.DatabaseStatus) *dbv1alpha1.Database {
	return &dbv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default", Generation: dbGeneration},
		Spec: dbv1alpha1.DatabaseSpec{
			Engine:   dbv1alpha1.EnginePostgreSQL,
			Version:  "16",
			Replicas: replicas,
		},
		Status: old,
	}
}

// settled returns a StatefulSet that has finished rolling out replicas
// replicas of image.
func settled(replicas int32, image string, mutate ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default", Generation: 7},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "postgresql", Image: image}},
			}},
		},
		Status: appsv1.StatefulSetStatus{
			ObservedGeneration: 7,
			Replicas:           replicas,
			ReadyReplicas:      replicas,
			CurrentReplicas:    replicas,
			UpdatedReplicas:    replicas,
			CurrentRevision:    "orders-6d5f8c7b9",
			UpdateRevision:     "orders-6d5f8c7b9",
		},
	}
	for _, m := range mutate {
		m(sts)
	}
	return sts
}

// convergedStatus is the status of a Database that converged at
// generation, running version.
func convergedStatus(version string, generation int64) dbv1alpha1.DatabaseStatus {
	return dbv1alpha1.DatabaseStatus{CurrentVersion: version, Conditions: []metav1.Condition{
		{Type: dbv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: ReasonConverged, ObservedGeneration: generation},
	}}
}

type wantCondition struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func TestCompute(t *testing.T) {
	running16 := dbv1alpha1.DatabaseStatus{CurrentVersion: "16"}
	running15 := dbv1alpha1.DatabaseStatus{CurrentVersion: "15"}
	converged := wantCondition{metav1.ConditionFalse, ReasonConverged, "the Database matches its spec"}

	tests := []struct {
		name     string
		replicas *int32
		old      dbv1alpha1.DatabaseStatus
		sts      *appsv1.StatefulSet
		image    string
		problem  *Problem

		wantPhase          dbv1alpha1.Phase
		wantReplicas       int32
		wantReady          int32
		wantCurrentVersion string
		wantReadyCond      wantCondition
		wantProgressing    wantCondition
	}{
		{
			name:          "no StatefulSet",
			replicas:      ptr.To[int32](1),
			image:         image16,
			wantPhase:     dbv1alpha1.PhasePending,
			wantReadyCond: wantCondition{metav1.ConditionFalse, ReasonProvisioning, "the StatefulSet does not exist yet"},
			wantProgressing: wantCondition{metav1.ConditionTrue, ReasonProvisioning,
				"creating the Secret, the Services and the StatefulSet"},
		},
		{
			name:     "provisioning: first replica not ready",
			replicas: ptr.To[int32](1),
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Status.ReadyReplicas = 0
			}),
			image:           image16,
			wantPhase:       dbv1alpha1.PhaseProvisioning,
			wantReplicas:    1,
			wantReady:       0,
			wantReadyCond:   wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "0/1 replicas are ready"},
			wantProgressing: wantCondition{metav1.ConditionTrue, ReasonProvisioning, "waiting for 0/1 replicas to become ready"},
		},
		{
			name:     "provisioning: no pod created yet",
			replicas: ptr.To[int32](3),
			sts: settled(3, image16, func(s *appsv1.StatefulSet) {
				s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 7}
			}),
			image:           image16,
			wantPhase:       dbv1alpha1.PhaseProvisioning,
			wantReadyCond:   wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "0/3 replicas are ready"},
			wantProgressing: wantCondition{metav1.ConditionTrue, ReasonProvisioning, "waiting for 0/3 replicas to become ready"},
		},
		{
			name:               "running: first rollout done sets currentVersion",
			replicas:           ptr.To[int32](1),
			sts:                settled(1, image16),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseRunning,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"},
			wantProgressing:    converged,
		},
		{
			name:               "running: replicas unset defaults to 1",
			replicas:           nil,
			sts:                settled(1, image16),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseRunning,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"},
			wantProgressing:    converged,
		},
		{
			name:               "running: three replicas after an upgrade",
			replicas:           ptr.To[int32](3),
			old:                running15,
			sts:                settled(3, image16),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseRunning,
			wantReplicas:       3,
			wantReady:          3,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "3/3 replicas are ready"},
			wantProgressing:    converged,
		},
		{
			name:     "running: StatefulSet replicas unset",
			replicas: ptr.To[int32](1),
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Spec.Replicas = nil
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseRunning,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"},
			wantProgressing:    converged,
		},
		{
			name:     "running: no updateRevision reported",
			replicas: ptr.To[int32](1),
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Status.CurrentRevision, s.Status.UpdateRevision = "", ""
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseRunning,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"},
			wantProgressing:    converged,
		},
		{
			name:               "running with an unknown image does not set currentVersion",
			replicas:           ptr.To[int32](1),
			old:                running15,
			sts:                settled(1, image16),
			image:              "",
			wantPhase:          dbv1alpha1.PhaseRunning,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"},
			wantProgressing:    converged,
		},
		{
			name:     "stale observedGeneration on the first rollout",
			replicas: ptr.To[int32](1),
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Status.ObservedGeneration = 6
			}),
			image:           image16,
			wantPhase:       dbv1alpha1.PhaseProvisioning,
			wantReplicas:    1,
			wantReady:       1,
			wantReadyCond:   wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "1/1 replicas are ready"},
			wantProgressing: wantCondition{metav1.ConditionTrue, ReasonProvisioning, "waiting for 1/1 replicas to become ready"},
		},
		{
			name:     "stale observedGeneration after a version change",
			replicas: ptr.To[int32](1),
			old:      running15,
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Status.ObservedGeneration = 6
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "1/1 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 1/1 replicas updated, 1 ready"},
		},
		{
			name:               "image mismatch: StatefulSet not yet written",
			replicas:           ptr.To[int32](1),
			old:                running15,
			sts:                settled(1, image15),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "1/1 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 1/1 replicas updated, 1 ready"},
		},
		{
			name:     "image mismatch: StatefulSet has no container",
			replicas: ptr.To[int32](1),
			old:      running16,
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Spec.Template.Spec.Containers = nil
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "1/1 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 1/1 replicas updated, 1 ready"},
		},
		{
			name:     "rolling update in progress",
			replicas: ptr.To[int32](3),
			old:      running15,
			sts: settled(3, image16, func(s *appsv1.StatefulSet) {
				s.Status.ReadyReplicas = 2
				s.Status.UpdatedReplicas = 1
				s.Status.CurrentReplicas = 2
				s.Status.UpdateRevision = "orders-7f9b6d4c2"
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       3,
			wantReady:          2,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "2/3 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 1/3 replicas updated, 2 ready"},
		},
		{
			name:     "running, then a replica stops being ready: degraded, not rolling out",
			replicas: ptr.To[int32](3),
			old:      running15,
			sts: settled(3, image16, func(s *appsv1.StatefulSet) {
				s.Status.ReadyReplicas = 2
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseDegraded,
			wantReplicas:       3,
			wantReady:          2,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "2/3 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonWaitingForReady, "every replica runs the current spec; waiting for 1/3 to pass the readiness probe"},
		},
		{
			// kubectl delete pod: the StatefulSet counts no pod for a
			// moment. Nothing in the spec changed since it converged.
			name:     "converged, then its one pod deleted: degraded, not scaling",
			replicas: ptr.To[int32](1),
			old:      convergedStatus("16", dbGeneration),
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Status.Replicas, s.Status.ReadyReplicas, s.Status.UpdatedReplicas = 0, 0, 0
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseDegraded,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "0/1 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonWaitingForReady, "every replica runs the current spec; waiting for 1/1 to pass the readiness probe"},
		},
		{
			name:     "converged, then its pod made again and not counted as updated yet: degraded, not rolling out",
			replicas: ptr.To[int32](1),
			old:      convergedStatus("16", dbGeneration),
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Status.ReadyReplicas, s.Status.UpdatedReplicas = 0, 0
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseDegraded,
			wantReplicas:       1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "0/1 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonWaitingForReady, "every replica runs the current spec; waiting for 1/1 to pass the readiness probe"},
		},
		{
			name:     "converged at the last generation, then scaled up: scaling",
			replicas: ptr.To[int32](3),
			old:      convergedStatus("16", dbGeneration-1),
			sts: settled(3, image16, func(s *appsv1.StatefulSet) {
				s.Status.Replicas, s.Status.ReadyReplicas, s.Status.UpdatedReplicas = 1, 1, 1
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "1/3 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonScaling, "scaling from 1 to 3 replicas: 1 ready"},
		},
		{
			name:     "converged, then a revision of another template: rolling out",
			replicas: ptr.To[int32](1),
			old:      convergedStatus("16", dbGeneration),
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Status.ReadyReplicas, s.Status.UpdatedReplicas = 0, 0
				s.Status.UpdateRevision = "orders-7f9b6d4c2"
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "0/1 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 0/1 replicas updated, 0 ready"},
		},
		{
			name:     "rolling update: all updated but revisions not yet swapped",
			replicas: ptr.To[int32](3),
			old:      running15,
			sts: settled(3, image16, func(s *appsv1.StatefulSet) {
				s.Status.UpdateRevision = "orders-7f9b6d4c2"
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       3,
			wantReady:          3,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "3/3 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 3/3 replicas updated, 3 ready"},
		},
		{
			name:     "scaling up",
			replicas: ptr.To[int32](3),
			old:      running16,
			sts: settled(3, image16, func(s *appsv1.StatefulSet) {
				s.Status.Replicas = 2
				s.Status.ReadyReplicas = 1
				s.Status.UpdatedReplicas = 2
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       2,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "1/3 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonScaling, "scaling from 2 to 3 replicas: 1 ready"},
		},
		{
			name:     "scaling down",
			replicas: ptr.To[int32](1),
			old:      running16,
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Status.Replicas = 3
				s.Status.ReadyReplicas = 3
				s.Status.UpdatedReplicas = 3
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       3,
			wantReady:          3,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "3/1 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonScaling, "scaling from 3 to 1 replicas: 3 ready"},
		},
		{
			name:     "scaling: StatefulSet spec not yet written",
			replicas: ptr.To[int32](2),
			old:      running16,
			sts:      settled(1, image16),
			image:    image16,
			// The StatefulSet still asks for 1 replica, so it has not rolled out.
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "1/2 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonScaling, "scaling from 1 to 2 replicas: 1 ready"},
		},
		{
			name:     "rolling update: revisions not reported, updated replicas lagging",
			replicas: ptr.To[int32](3),
			old:      running15,
			sts: settled(3, image16, func(s *appsv1.StatefulSet) {
				s.Status.CurrentRevision, s.Status.UpdateRevision = "", ""
				s.Status.UpdatedReplicas = 2
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       3,
			wantReady:          3,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "3/3 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 2/3 replicas updated, 3 ready"},
		},
		{
			// The StatefulSet still asks for 3 replicas and has made 1 so
			// far: its status matches the spec's 1 by accident.
			name:     "StatefulSet asks for other replicas than the spec",
			replicas: ptr.To[int32](1),
			old:      running15,
			sts: settled(1, image16, func(s *appsv1.StatefulSet) {
				s.Spec.Replicas = ptr.To[int32](3)
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "1/1 replicas are ready"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 1/1 replicas updated, 1 ready"},
		},
		{
			name:     "stopping",
			replicas: ptr.To[int32](0),
			old:      running16,
			sts: settled(0, image16, func(s *appsv1.StatefulSet) {
				s.Status.Replicas = 2
				s.Status.ReadyReplicas = 1
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       2,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonStopping, "stopping: 2 replicas still running"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonStopping, "stopping: 2 replicas still running"},
		},
		{
			name:               "stopping: StatefulSet spec not yet written",
			replicas:           ptr.To[int32](0),
			old:                running16,
			sts:                settled(1, image16),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseUpdating,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonStopping, "stopping: 1 replicas still running"},
			wantProgressing:    wantCondition{metav1.ConditionTrue, ReasonStopping, "stopping: 1 replicas still running"},
		},
		{
			name:     "stopped",
			replicas: ptr.To[int32](0),
			old:      running16,
			sts: settled(0, image16, func(s *appsv1.StatefulSet) {
				// Revisions are ignored when nothing runs.
				s.Status.UpdateRevision = "orders-7f9b6d4c2"
			}),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseStopped,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonStopped, "replicas is 0: the database is stopped and its data is kept"},
			wantProgressing:    converged,
		},
		{
			name:               "stopped before it ever ran keeps currentVersion empty",
			replicas:           ptr.To[int32](0),
			sts:                settled(0, image16),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseStopped,
			wantCurrentVersion: "",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonStopped, "replicas is 0: the database is stopped and its data is kept"},
			wantProgressing:    converged,
		},
		{
			name:               "stopped with a new version does not move currentVersion",
			replicas:           ptr.To[int32](0),
			old:                running15,
			sts:                settled(0, image16),
			image:              image16,
			wantPhase:          dbv1alpha1.PhaseStopped,
			wantCurrentVersion: "15",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonStopped, "replicas is 0: the database is stopped and its data is kept"},
			wantProgressing:    converged,
		},
		{
			name:     "problem: unknown version",
			replicas: ptr.To[int32](1),
			old:      running16,
			sts:      settled(1, image16),
			image:    "",
			problem: &Problem{Reason: ReasonUnknownVersion,
				Message: `version "19" of postgresql is not in the catalog (known: 14, 15, 16, 17, 18); use one of those or set spec.image`},
			wantPhase:          dbv1alpha1.PhaseFailed,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "16",
			wantReadyCond: wantCondition{metav1.ConditionFalse, ReasonUnknownVersion,
				`version "19" of postgresql is not in the catalog (known: 14, 15, 16, 17, 18); use one of those or set spec.image`},
			wantProgressing: wantCondition{metav1.ConditionFalse, ReasonUnknownVersion,
				`version "19" of postgresql is not in the catalog (known: 14, 15, 16, 17, 18); use one of those or set spec.image`},
		},
		{
			// The StatefulSet is settled at the image the spec names, but a
			// problem must still keep currentVersion where it was.
			name:               "problem: downgrade refused",
			replicas:           ptr.To[int32](1),
			old:                dbv1alpha1.DatabaseStatus{CurrentVersion: "17"},
			sts:                settled(1, image16),
			image:              image16,
			problem:            &Problem{Reason: reasonDowngradeRefused, Message: "cannot go from 17 to 16"},
			wantPhase:          dbv1alpha1.PhaseFailed,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "17",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, reasonDowngradeRefused, "cannot go from 17 to 16"},
			wantProgressing:    wantCondition{metav1.ConditionFalse, reasonDowngradeRefused, "cannot go from 17 to 16"},
		},
		{
			name:               "problem: resource conflict before any StatefulSet",
			replicas:           ptr.To[int32](1),
			image:              image16,
			problem:            &Problem{Reason: ReasonResourceConflict, Message: "StatefulSet default/orders is not owned by this Database"},
			wantPhase:          dbv1alpha1.PhaseFailed,
			wantCurrentVersion: "",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonResourceConflict, "StatefulSet default/orders is not owned by this Database"},
			wantProgressing:    wantCondition{metav1.ConditionFalse, ReasonResourceConflict, "StatefulSet default/orders is not owned by this Database"},
		},
		{
			name:               "problem: resource conflict on a settled first rollout",
			replicas:           ptr.To[int32](1),
			sts:                settled(1, image16),
			image:              image16,
			problem:            &Problem{Reason: ReasonResourceConflict, Message: "Service default/orders is not owned by this Database"},
			wantPhase:          dbv1alpha1.PhaseFailed,
			wantReplicas:       1,
			wantReady:          1,
			wantCurrentVersion: "",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonResourceConflict, "Service default/orders is not owned by this Database"},
			wantProgressing:    wantCondition{metav1.ConditionFalse, ReasonResourceConflict, "Service default/orders is not owned by this Database"},
		},
		{
			name:               "problem while stopped",
			replicas:           ptr.To[int32](0),
			old:                running16,
			sts:                settled(0, image16),
			image:              image16,
			problem:            &Problem{Reason: ReasonCredentialsMissing, Message: "the Secret orders-credentials was deleted"},
			wantPhase:          dbv1alpha1.PhaseFailed,
			wantCurrentVersion: "16",
			wantReadyCond:      wantCondition{metav1.ConditionFalse, ReasonCredentialsMissing, "the Secret orders-credentials was deleted"},
			wantProgressing:    wantCondition{metav1.ConditionFalse, ReasonCredentialsMissing, "the Secret orders-credentials was deleted"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := database(tt.replicas, tt.old)
			got := Compute(Input{
				Database:    db,
				Endpoint:    endpoint,
				StatefulSet: tt.sts,
				Image:       tt.image,
				Problem:     tt.problem,
				Now:         now,
			})
			if got.Phase != tt.wantPhase {
				t.Errorf("phase = %q, want %q", got.Phase, tt.wantPhase)
			}
			if got.Replicas != tt.wantReplicas || got.ReadyReplicas != tt.wantReady {
				t.Errorf("replicas/ready = %d/%d, want %d/%d", got.Replicas, got.ReadyReplicas, tt.wantReplicas, tt.wantReady)
			}
			if got.CurrentVersion != tt.wantCurrentVersion {
				t.Errorf("currentVersion = %q, want %q", got.CurrentVersion, tt.wantCurrentVersion)
			}
			if got.Endpoint != "orders.default.svc:5432" {
				t.Errorf("endpoint = %q, want orders.default.svc:5432", got.Endpoint)
			}
			if got.CredentialsSecret != "orders-credentials" {
				t.Errorf("credentialsSecret = %q, want orders-credentials", got.CredentialsSecret)
			}
			if want := "app.kubernetes.io/instance=orders,app.kubernetes.io/name=postgresql"; got.Selector != want {
				t.Errorf("selector = %q, want %q", got.Selector, want)
			}
			if got.ObservedGeneration != dbGeneration {
				t.Errorf("observedGeneration = %d, want %d", got.ObservedGeneration, dbGeneration)
			}
			if len(got.Conditions) != 2 {
				t.Fatalf("conditions = %+v, want exactly Ready and Progressing", got.Conditions)
			}
			checkCondition(t, got.Conditions, dbv1alpha1.ConditionReady, tt.wantReadyCond, now)
			checkCondition(t, got.Conditions, dbv1alpha1.ConditionProgressing, tt.wantProgressing, now)
		})
	}
}

func checkCondition(t *testing.T, conds []metav1.Condition, typ string, want wantCondition, wantTime metav1.Time) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		t.Errorf("condition %s missing from %+v", typ, conds)
		return
	}
	if c.Status != want.status || c.Reason != want.reason || c.Message != want.message {
		t.Errorf("condition %s = %s/%s/%q, want %s/%s/%q", typ, c.Status, c.Reason, c.Message, want.status, want.reason, want.message)
	}
	if c.ObservedGeneration != dbGeneration {
		t.Errorf("condition %s observedGeneration = %d, want %d", typ, c.ObservedGeneration, dbGeneration)
	}
	if !c.LastTransitionTime.Equal(&wantTime) {
		t.Errorf("condition %s lastTransitionTime = %v, want %v", typ, c.LastTransitionTime, wantTime)
	}
}

// TestComputeLastTransitionTime checks that a condition keeps its
// lastTransitionTime while its status stays, even when its reason and
// message change, and takes Input.Now when its status changes.
func TestComputeLastTransitionTime(t *testing.T) {
	oldCond := func(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
			ObservedGeneration: 1, LastTransitionTime: then}
	}
	tests := []struct {
		name            string
		replicas        int32
		oldConditions   []metav1.Condition
		currentVersion  string
		sts             *appsv1.StatefulSet
		problem         *Problem
		wantReady       wantCondition
		wantReadyTime   metav1.Time
		wantProgressing wantCondition
		wantProgTime    metav1.Time
	}{
		{
			name:     "provisioning to running: both statuses flip",
			replicas: 1,
			oldConditions: []metav1.Condition{
				oldCond(dbv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonReplicasNotReady, "0/1 replicas are ready"),
				oldCond(dbv1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonProvisioning, "waiting for 0/1 replicas to become ready"),
			},
			sts:             settled(1, image16),
			wantReady:       wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"},
			wantReadyTime:   now,
			wantProgressing: wantCondition{metav1.ConditionFalse, ReasonConverged, "the Database matches its spec"},
			wantProgTime:    now,
		},
		{
			name:     "running stays running: times kept, message updated",
			replicas: 3,
			oldConditions: []metav1.Condition{
				oldCond(dbv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"),
				oldCond(dbv1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonConverged, "the Database matches its spec"),
			},
			currentVersion:  "16",
			sts:             settled(3, image16),
			wantReady:       wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "3/3 replicas are ready"},
			wantReadyTime:   then,
			wantProgressing: wantCondition{metav1.ConditionFalse, ReasonConverged, "the Database matches its spec"},
			wantProgTime:    then,
		},
		{
			name:     "provisioning to stopped: Ready stays False with a new reason, Progressing flips",
			replicas: 0,
			oldConditions: []metav1.Condition{
				oldCond(dbv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonReplicasNotReady, "0/1 replicas are ready"),
				oldCond(dbv1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonProvisioning, "waiting for 0/1 replicas to become ready"),
			},
			sts:             settled(0, image16),
			wantReady:       wantCondition{metav1.ConditionFalse, ReasonStopped, "replicas is 0: the database is stopped and its data is kept"},
			wantReadyTime:   then,
			wantProgressing: wantCondition{metav1.ConditionFalse, ReasonConverged, "the Database matches its spec"},
			wantProgTime:    now,
		},
		{
			name:     "rolling update to scaling: both statuses kept, reasons change",
			replicas: 3,
			oldConditions: []metav1.Condition{
				oldCond(dbv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonReplicasNotReady, "2/3 replicas are ready"),
				oldCond(dbv1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonRollingUpdate, "rolling out: 1/3 replicas updated, 2 ready"),
			},
			currentVersion: "16",
			sts: settled(3, image16, func(s *appsv1.StatefulSet) {
				s.Status.Replicas, s.Status.ReadyReplicas = 2, 2
			}),
			wantReady:       wantCondition{metav1.ConditionFalse, ReasonReplicasNotReady, "2/3 replicas are ready"},
			wantReadyTime:   then,
			wantProgressing: wantCondition{metav1.ConditionTrue, ReasonScaling, "scaling from 2 to 3 replicas: 2 ready"},
			wantProgTime:    then,
		},
		{
			name:     "running to failed: both statuses flip",
			replicas: 1,
			oldConditions: []metav1.Condition{
				oldCond(dbv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"),
				oldCond(dbv1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonConverged, "the Database matches its spec"),
			},
			currentVersion:  "16",
			sts:             settled(1, image16),
			problem:         &Problem{Reason: ReasonCredentialsMissing, Message: "recreate the Secret"},
			wantReady:       wantCondition{metav1.ConditionFalse, ReasonCredentialsMissing, "recreate the Secret"},
			wantReadyTime:   now,
			wantProgressing: wantCondition{metav1.ConditionFalse, ReasonCredentialsMissing, "recreate the Secret"},
			wantProgTime:    then,
		},
		{
			name:     "only Ready stored before: Progressing is added at Now",
			replicas: 1,
			oldConditions: []metav1.Condition{
				oldCond(dbv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"),
			},
			currentVersion:  "16",
			sts:             settled(1, image16),
			wantReady:       wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "1/1 replicas are ready"},
			wantReadyTime:   then,
			wantProgressing: wantCondition{metav1.ConditionFalse, ReasonConverged, "the Database matches its spec"},
			wantProgTime:    now,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := database(ptr.To(tt.replicas), dbv1alpha1.DatabaseStatus{
				CurrentVersion: tt.currentVersion,
				Conditions:     tt.oldConditions,
			})
			stored := append([]metav1.Condition(nil), db.Status.Conditions...)
			got := Compute(Input{
				Database:    db,
				Endpoint:    endpoint,
				StatefulSet: tt.sts,
				Image:       image16,
				Problem:     tt.problem,
				Now:         now,
			})
			if len(got.Conditions) != 2 {
				t.Fatalf("conditions = %+v, want exactly Ready and Progressing", got.Conditions)
			}
			checkCondition(t, got.Conditions, dbv1alpha1.ConditionReady, tt.wantReady, tt.wantReadyTime)
			checkCondition(t, got.Conditions, dbv1alpha1.ConditionProgressing, tt.wantProgressing, tt.wantProgTime)
			if !reflect.DeepEqual(db.Status.Conditions, stored) {
				t.Errorf("Compute changed the stored conditions:\n got %+v\nwant %+v", db.Status.Conditions, stored)
			}
		})
	}
}

// TestComputeKeepsOtherConditions checks that conditions Compute does not
// own survive untouched.
func TestComputeKeepsOtherConditions(t *testing.T) {
	// Not Backup: Compute owns that one since backups exist.
	other := metav1.Condition{Type: "Audited", Status: metav1.ConditionTrue, Reason: "Done", Message: "ok",
		ObservedGeneration: 2, LastTransitionTime: then}
	db := database(ptr.To[int32](1), dbv1alpha1.DatabaseStatus{Conditions: []metav1.Condition{other}})
	got := Compute(Input{Database: db, Endpoint: endpoint, StatefulSet: settled(1, image16), Image: image16, Now: now})
	if len(got.Conditions) != 3 {
		t.Fatalf("conditions = %+v, want Audited, Ready and Progressing", got.Conditions)
	}
	if c := meta.FindStatusCondition(got.Conditions, "Audited"); c == nil || !reflect.DeepEqual(*c, other) {
		t.Errorf("Audited condition = %+v, want %+v", c, other)
	}
}

// TestComputeWithoutEndpoint checks the status of a Database whose engine is
// unknown: no endpoint, but the other identifying fields are filled.
func TestComputeWithoutEndpoint(t *testing.T) {
	db := database(ptr.To[int32](1), dbv1alpha1.DatabaseStatus{})
	db.Spec.Engine = "oracle"
	got := Compute(Input{
		Database: db,
		Problem:  &Problem{Reason: ReasonUnknownVersion, Message: `unknown engine "oracle"`},
		Now:      now,
	})
	if got.Endpoint != "" {
		t.Errorf("endpoint = %q, want empty without an engine", got.Endpoint)
	}
	if got.Phase != dbv1alpha1.PhaseFailed {
		t.Errorf("phase = %q, want Failed", got.Phase)
	}
	if got.CredentialsSecret != "orders-credentials" {
		t.Errorf("credentialsSecret = %q, want orders-credentials", got.CredentialsSecret)
	}
	if want := "app.kubernetes.io/instance=orders,app.kubernetes.io/name=oracle"; got.Selector != want {
		t.Errorf("selector = %q, want %q", got.Selector, want)
	}
	if got.ObservedGeneration != dbGeneration {
		t.Errorf("observedGeneration = %d, want %d", got.ObservedGeneration, dbGeneration)
	}
}

// reasonDowngradeRefused is the engine's reason for a refused downgrade;
// status only reports what the plan found.
const reasonDowngradeRefused = "DowngradeRefused"

// An end-of-life version adds a VersionSupported condition, False, and the
// Database still runs; once the version moves on, the condition goes.
func TestComputeEndOfLife(t *testing.T) {
	db := database(ptr.To[int32](1), dbv1alpha1.DatabaseStatus{})
	in := Input{Database: db, Endpoint: endpoint, StatefulSet: settled(1, image16), Image: image16, Now: now,
		EndOfLife: "MySQL 8.0 is end of life"}
	got := Compute(in)
	if got.Phase != dbv1alpha1.PhaseRunning {
		t.Errorf("phase = %q, want Running", got.Phase)
	}
	c := meta.FindStatusCondition(got.Conditions, dbv1alpha1.ConditionVersionSupported)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonEndOfLife || c.Message != "MySQL 8.0 is end of life" {
		t.Fatalf("VersionSupported = %+v, want False EndOfLife", c)
	}
	db.Status = got
	in.EndOfLife = ""
	if c := meta.FindStatusCondition(Compute(in).Conditions, dbv1alpha1.ConditionVersionSupported); c != nil {
		t.Fatalf("VersionSupported = %+v after moving to a supported version, want none", c)
	}
}

// A new Database records the featureCompatibilityVersion of its version
// when it first runs; later rollouts keep the recorded one.
func TestComputeFeatureCompatibilityVersion(t *testing.T) {
	db := database(ptr.To[int32](1), dbv1alpha1.DatabaseStatus{})
	in := Input{Database: db, Endpoint: endpoint, StatefulSet: settled(1, image16), Image: image16, Now: now,
		NewFeatureCompatibilityVersion: "7.0"}
	if got := Compute(in); got.FeatureCompatibilityVersion != "7.0" {
		t.Fatalf("featureCompatibilityVersion of new data = %q, want 7.0", got.FeatureCompatibilityVersion)
	}
	in.StatefulSet = nil
	if got := Compute(in); got.FeatureCompatibilityVersion != "" {
		t.Fatalf("featureCompatibilityVersion before the first run = %q, want none", got.FeatureCompatibilityVersion)
	}
	db.Status = dbv1alpha1.DatabaseStatus{CurrentVersion: "16", FeatureCompatibilityVersion: "6.0"}
	in.StatefulSet = settled(1, image16)
	if got := Compute(in); got.FeatureCompatibilityVersion != "6.0" {
		t.Fatalf("featureCompatibilityVersion after an upgrade = %q, want the recorded 6.0", got.FeatureCompatibilityVersion)
	}
}

// A Database held for its deletion is Terminating, whatever its replicas
// say, with the termination's reason and message.
func TestComputeTerminating(t *testing.T) {
	db := database(ptr.To[int32](1), dbv1alpha1.DatabaseStatus{CurrentVersion: "16"})
	got := Compute(Input{Database: db, Endpoint: endpoint, StatefulSet: settled(1, image16), Image: image16, Now: now,
		Termination: &Termination{Reason: ReasonFinalBackup, Message: "taking the final backup"}})
	ready := meta.FindStatusCondition(got.Conditions, dbv1alpha1.ConditionReady)
	if got.Phase != dbv1alpha1.PhaseTerminating || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonFinalBackup ||
		ready.Message != "taking the final backup" {
		t.Errorf("phase %s, Ready %+v", got.Phase, ready)
	}
}

// A restore: not Running while the pods restore; completed when every
// replica first serves; Running only after a rollout without the backup's
// volume; a failure is reported.
func TestComputeRestore(t *testing.T) {
	for _, tt := range []struct {
		name          string
		old           *dbv1alpha1.RestoreStatus
		sts           *appsv1.StatefulSet
		in            Restore
		wantPhase     dbv1alpha1.Phase
		wantReady     string
		wantCompleted *metav1.Time
		wantMessage   string
		wantVersion   string
	}{
		{name: "restoring", sts: settled(1, image16, func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 0 }),
			in: Restore{Backup: "nightly", InTemplate: true}, wantPhase: dbv1alpha1.PhaseProvisioning,
			wantReady: "restoring backup nightly: 0/1 replicas ready"},
		{name: "failed", sts: settled(1, image16, func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 0 }),
			in: Restore{Backup: "nightly", InTemplate: true, Failure: "pg_restore: error: could not read input file"}, wantPhase: dbv1alpha1.PhaseProvisioning,
			wantReady:   "restoring backup nightly failed: pg_restore: error: could not read input file",
			wantMessage: "pg_restore: error: could not read input file"},
		{name: "every replica serves: completed, restarting without the volume", sts: settled(1, image16),
			in: Restore{Backup: "nightly", InTemplate: true}, wantPhase: dbv1alpha1.PhaseProvisioning,
			wantReady: "restored backup nightly; restarting without its volume", wantCompleted: &now},
		{name: "rolled out without the volume: Running", old: &dbv1alpha1.RestoreStatus{Backup: "nightly", CompletionTime: &then},
			sts: settled(1, image16), in: Restore{Backup: "nightly"}, wantPhase: dbv1alpha1.PhaseRunning,
			wantReady: "1/1 replicas are ready", wantCompleted: &then, wantVersion: "16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := database(ptr.To[int32](1), dbv1alpha1.DatabaseStatus{Restore: tt.old})
			in := tt.in
			got := Compute(Input{Database: db, Endpoint: endpoint, StatefulSet: tt.sts, Image: image16, Now: now, Restore: &in})
			ready := meta.FindStatusCondition(got.Conditions, dbv1alpha1.ConditionReady)
			if got.Phase != tt.wantPhase || ready.Message != tt.wantReady || got.CurrentVersion != tt.wantVersion {
				t.Errorf("phase %s version %q Ready %q, want %s %q %q", got.Phase, got.CurrentVersion, ready.Message, tt.wantPhase, tt.wantVersion, tt.wantReady)
			}
			if got.Restore == nil || got.Restore.Backup != "nightly" || !reflect.DeepEqual(got.Restore.CompletionTime, tt.wantCompleted) ||
				got.Restore.Message != tt.wantMessage {
				t.Errorf("restore %+v, want completed %v message %q", got.Restore, tt.wantCompleted, tt.wantMessage)
			}
		})
	}
}

// The Backup condition is the caller's, present only when given; the last
// schedule time is recorded as given.
func TestComputeBackupCondition(t *testing.T) {
	db := database(ptr.To[int32](1), dbv1alpha1.DatabaseStatus{Conditions: []metav1.Condition{
		{Type: dbv1alpha1.ConditionBackup, Status: metav1.ConditionTrue, Reason: ReasonBackupsReady, LastTransitionTime: then}}})
	got := Compute(Input{Database: db, Endpoint: endpoint, StatefulSet: settled(1, image16), Image: image16, Now: now})
	if meta.FindStatusCondition(got.Conditions, dbv1alpha1.ConditionBackup) != nil {
		t.Errorf("Backup condition kept without spec.backup: %+v", got.Conditions)
	}
	failed := &metav1.Condition{Type: dbv1alpha1.ConditionBackup, Status: metav1.ConditionFalse, Reason: ReasonScheduleInvalid, Message: "bad"}
	got = Compute(Input{Database: db, Endpoint: endpoint, StatefulSet: settled(1, image16), Image: image16, Now: now,
		Backup: failed, LastScheduleTime: &then})
	c := meta.FindStatusCondition(got.Conditions, dbv1alpha1.ConditionBackup)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonScheduleInvalid || !c.LastTransitionTime.Equal(&now) {
		t.Errorf("Backup condition %+v", c)
	}
	if !reflect.DeepEqual(got.LastScheduleTime, &then) {
		t.Errorf("lastScheduleTime %v", got.LastScheduleTime)
	}
}

// A replicated Database whose pods are all ready is not Running while no
// primary serves: clients cannot write. The Replicating condition's reason
// and message are the Ready condition's; it is Provisioning before it first
// ran, Updating after. A primary that serves (Streaming, or replicas not
// streaming yet) leaves the pods to say.
func TestComputeReplicatedWithoutPrimary(t *testing.T) {
	replicating := func(st metav1.ConditionStatus, reason, message string) *metav1.Condition {
		return &metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: st, Reason: reason, Message: message}
	}
	for _, tt := range []struct {
		name        string
		old         dbv1alpha1.DatabaseStatus
		replicating *metav1.Condition
		refusal     *Cause
		wantPhase   dbv1alpha1.Phase
		wantReady   wantCondition
	}{
		{"the primary does not serve", dbv1alpha1.DatabaseStatus{CurrentVersion: "16"},
			replicating(metav1.ConditionFalse, ReasonNoPrimary, "the primary orders-0 does not serve"), nil,
			dbv1alpha1.PhaseUpdating, wantCondition{metav1.ConditionFalse, ReasonNoPrimary, "the primary orders-0 does not serve"}},
		{"failing over", dbv1alpha1.DatabaseStatus{CurrentVersion: "16"},
			replicating(metav1.ConditionFalse, ReasonFailingOver, "making orders-1 the primary"), nil,
			dbv1alpha1.PhaseUpdating, wantCondition{metav1.ConditionFalse, ReasonFailingOver, "making orders-1 the primary"}},
		{"no primary yet, never ran", dbv1alpha1.DatabaseStatus{},
			replicating(metav1.ConditionFalse, ReasonNoPrimary, "making orders-0 the first primary"), nil,
			dbv1alpha1.PhaseProvisioning, wantCondition{metav1.ConditionFalse, ReasonNoPrimary, "making orders-0 the first primary"}},
		{"a primary serves, a replica does not stream yet", dbv1alpha1.DatabaseStatus{CurrentVersion: "16"},
			replicating(metav1.ConditionFalse, ReasonReplicasNotStreaming, "orders-0 is the primary; 1/2 replicas stream from it"), nil,
			dbv1alpha1.PhaseRunning, wantCondition{metav1.ConditionTrue, ReasonAllReplicasReady, "3/3 replicas are ready"}},
		// The servers refuse the Secret's password, the controller's too:
		// it cannot ask them, and the refusal is what it can name.
		{"the servers refuse the Secret's password", dbv1alpha1.DatabaseStatus{CurrentVersion: "16"},
			replicating(metav1.ConditionFalse, ReasonNoPrimary, "the primary orders-0 does not serve"),
			&Cause{Reason: ReasonCredentialsRejected, Subject: "Secret orders-credentials", Message: "Secret orders-credentials: refused"},
			dbv1alpha1.PhaseDegraded, wantCondition{metav1.ConditionFalse, ReasonCredentialsRejected, "Secret orders-credentials: refused"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(Input{Database: database(ptr.To[int32](3), tt.old), Endpoint: endpoint, StatefulSet: settled(3, image16),
				Image: image16, Now: now, Replication: &dbv1alpha1.ReplicationStatus{Primary: "orders-0"}, Replicating: tt.replicating,
				Refusal: tt.refusal})
			ready := meta.FindStatusCondition(got.Conditions, dbv1alpha1.ConditionReady)
			if got.Phase != tt.wantPhase || ready.Status != tt.wantReady.status || ready.Reason != tt.wantReady.reason || ready.Message != tt.wantReady.message {
				t.Errorf("phase %s, Ready %s %s %q; want %s, %+v", got.Phase, ready.Status, ready.Reason, ready.Message, tt.wantPhase, tt.wantReady)
			}
		})
	}
}

// A refusal of the Secret's password is the Ready condition's cause only
// once every replica is ready: while pods are not, they say why.
func TestComputeRefusalWaitsForTheReplicas(t *testing.T) {
	refusal := &Cause{Reason: ReasonCredentialsRejected, Subject: "Secret orders-credentials", Message: "Secret orders-credentials: refused"}
	sts := settled(3, image16)
	sts.Status.ReadyReplicas = 2
	got := Compute(Input{Database: database(ptr.To[int32](3), dbv1alpha1.DatabaseStatus{CurrentVersion: "16"}), Endpoint: endpoint, StatefulSet: sts,
		Image: image16, Now: now, Refusal: refusal})
	ready := meta.FindStatusCondition(got.Conditions, dbv1alpha1.ConditionReady)
	if ready.Reason != ReasonReplicasNotReady || ready.Message != "2/3 replicas are ready" {
		t.Errorf("Ready %s %q, want %s %q", ready.Reason, ready.Message, ReasonReplicasNotReady, "2/3 replicas are ready")
	}
	got = Compute(Input{Database: database(ptr.To[int32](3), dbv1alpha1.DatabaseStatus{CurrentVersion: "16"}), Endpoint: endpoint, StatefulSet: settled(3, image16),
		Image: image16, Now: now, Refusal: refusal})
	if ready := meta.FindStatusCondition(got.Conditions, dbv1alpha1.ConditionReady); got.Phase != dbv1alpha1.PhaseDegraded || ready.Reason != ReasonCredentialsRejected {
		t.Errorf("every replica ready: phase %s, Ready %s; want Degraded, %s", got.Phase, ready.Reason, ReasonCredentialsRejected)
	}
}
