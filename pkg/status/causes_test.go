package status

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFindCause(t *testing.T) {
	claim := func(name string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	waiting := func(name, reason, message string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "mysql", Image: "mysql:8.4",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}}
	}
	tests := []struct {
		name string
		in   CauseInput
		want *Cause
	}{
		{name: "nothing known", in: CauseInput{Claims: []*corev1.PersistentVolumeClaim{claim("data-x-0", corev1.ClaimBound)}, Pods: []*corev1.Pod{{}}}},
		{
			name: "the first pending claim by name, before any pod",
			in: CauseInput{
				Claims:               []*corev1.PersistentVolumeClaim{claim("data-x-1", corev1.ClaimPending), claim("data-x-0", corev1.ClaimPending)},
				ProvisioningFailures: map[string]string{"data-x-1": "no space"},
				Pods:                 []*corev1.Pod{waiting("x-0", "ErrImagePull", "not found")},
			},
			want: &Cause{Reason: ReasonVolumePending, Subject: "PersistentVolumeClaim data-x-0", Message: "PersistentVolumeClaim data-x-0 is waiting for its volume"},
		},
		{
			name: "an image that cannot be pulled",
			in:   CauseInput{Pods: []*corev1.Pod{waiting("x-0", "ImagePullBackOff", `Back-off pulling image "mysql:8.4"`+"\nmore")}},
			want: &Cause{Reason: ReasonImagePullFailed, Stuck: true, Subject: "pod x-0 cannot pull image mysql:8.4", Message: `pod x-0 cannot pull image mysql:8.4: Back-off pulling image "mysql:8.4"`},
		},
		{
			name: "a container that cannot start",
			in:   CauseInput{Pods: []*corev1.Pod{waiting("x-0", "CreateContainerConfigError", `secret "x-credentials" not found`)}},
			want: &Cause{Reason: ReasonContainerCannotStart, Stuck: true, Subject: "container mysql of pod x-0", Message: `container mysql of pod x-0 cannot start: secret "x-credentials" not found`},
		},
		{
			name: "a container crash-looping with no last state",
			in:   CauseInput{Pods: []*corev1.Pod{waiting("x-0", "CrashLoopBackOff", "")}},
			want: &Cause{Reason: ReasonCrashLooping, Stuck: true, Subject: "container mysql of pod x-0", Message: "container mysql of pod x-0 keeps crashing; it last ended with an unknown exit"},
		},
		{
			name: "a pod waiting for its claim to bind is not stuck",
			in: CauseInput{Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."}}}}}},
			want: &Cause{Reason: ReasonVolumePending, Subject: "pod x-0", Message: "pod x-0 waits for its volume: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."},
		},
		{
			name: "a pod whose claim's new volume the scheduler has not seen yet is not stuck",
			in: CauseInput{Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: `0/1 nodes are available: persistentvolume "pvc-776d6387-a8ce-4969-9e6b-520d2bc5f92e" not found. not found`}}}}}},
			want: &Cause{Reason: ReasonVolumePending, Subject: "pod x-0",
				Message: `pod x-0 waits for its volume: 0/1 nodes are available: persistentvolume "pvc-776d6387-a8ce-4969-9e6b-520d2bc5f92e" not found. not found`},
		},
		{
			name: "a container running without passing readiness for too long",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "mysql", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-NotReadyAfter - time.Second))}}}}}}}},
			want: &Cause{Reason: ReasonContainerNotReady, Stuck: true, Subject: "container mysql of pod x-0",
				Message: "container mysql of pod x-0 has run for more than 20m0s without passing its readiness probe (kubectl describe pod x-0 shows what the probe said)"},
		},
		{
			name: "a container starting is not a cause yet",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "mysql", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-NotReadyAfter))}}}}}}}},
		},
		{
			name: "a container running between two crashes is still crash-looping",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "mysql", RestartCount: 3,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Second))}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}}}}},
			want: &Cause{Reason: ReasonCrashLooping, Stuck: true, Subject: "container mysql of pod x-0", Message: "container mysql of pod x-0 keeps crashing; it last ended with Error (exit code 1)"},
		},
		{
			// MariaDB asked to replicate: the replication init container
			// fails at each run, and the kubelet shows it ended, or
			// running again, between two back-offs.
			name: "an init container that has just failed again is crash-looping",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-1"}, Status: corev1.PodStatus{
				InitContainerStatuses: []corev1.ContainerStatus{{
					Name: "replication", RestartCount: 2,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1,
						Message:   "x-1 cannot become a replica of x-0: MariaDB replication is not supported yet. Set spec.replicas to 1\n",
						StartedAt: metav1.NewTime(now.Add(-2 * time.Second)), FinishedAt: metav1.NewTime(now.Add(-time.Second))}}}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "mysql", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}}}},
			want: &Cause{Reason: ReasonCrashLooping, Stuck: true, Subject: "container replication of pod x-1",
				Message: "container replication of pod x-1 keeps crashing; it last ended with Error (exit code 1): x-1 cannot become a replica of x-0: MariaDB replication is not supported yet. Set spec.replicas to 1"},
		},
		{
			name: "an init container running again after failures is crash-looping",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-1"}, Status: corev1.PodStatus{
				InitContainerStatuses: []corev1.ContainerStatus{{
					Name: "replication", RestartCount: 3,
					State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Second))}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}}}}},
			want: &Cause{Reason: ReasonCrashLooping, Stuck: true, Subject: "container replication of pod x-1",
				Message: "container replication of pod x-1 keeps crashing; it last ended with Error (exit code 1)"},
		},
		{
			name: "an init container that completed is no cause",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-1"}, Status: corev1.PodStatus{
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "replication", Ready: true,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0}}}}}}}},
		},
		{
			name: "a container that has just crashed, the first time, is restarting: no loop, nothing stuck",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name:  "mysql",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}}}}},
			want: &Cause{Reason: ReasonRestarting, Subject: "container mysql of pod x-0", Message: "container mysql of pod x-0 is restarting; it ended with OOMKilled (exit code 137)"},
		},
		{
			name: "a container running again after one crash (kill -9) is restarting",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "mysql", RestartCount: 1,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Second))}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137,
					StartedAt: metav1.NewTime(now.Add(-time.Hour)), FinishedAt: metav1.NewTime(now.Add(-2 * time.Second))}}}}}}}},
			want: &Cause{Reason: ReasonRestarting, Subject: "container mysql of pod x-0", Message: "container mysql of pod x-0 is restarting; it ended with Error (exit code 137)"},
		},
		{
			name: "a container that crashed again soon after its restart is crash-looping",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "mysql", RestartCount: 1,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137,
					StartedAt: metav1.NewTime(now.Add(-5 * time.Second)), FinishedAt: metav1.NewTime(now.Add(-time.Second))}}}}}}}},
			want: &Cause{Reason: ReasonCrashLooping, Stuck: true, Subject: "container mysql of pod x-0", Message: "container mysql of pod x-0 keeps crashing; it last ended with Error (exit code 137)"},
		},
		{
			name: "a container that crashed after running longer than the back-off's reset is restarting, whatever its restarts before",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "mysql", RestartCount: 5,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Second))}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1,
					StartedAt: metav1.NewTime(now.Add(-CrashLoopReset - time.Minute)), FinishedAt: metav1.NewTime(now.Add(-2 * time.Second))}}}}}}}},
			want: &Cause{Reason: ReasonRestarting, Subject: "container mysql of pod x-0", Message: "container mysql of pod x-0 is restarting; it ended with Error (exit code 1)"},
		},
		{
			name: "a pod being deleted is no cause, however its containers ended",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0", DeletionTimestamp: &now},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "mysql", RestartCount: 4,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}}}},
		},
		{
			name: "the kubelet's ContainerStatusUnknown (a container it lost) is no crash",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name:  "mysql",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", ExitCode: 137}}}}}}}},
		},
		{
			name: "a container restarted after a clean exit (a rollout restart) is not crash-looping",
			in: CauseInput{Now: now.Time, Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "mysql", RestartCount: 1,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Second))}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0}}}}}}}},
		},
		{
			name: "a container creating is not a cause",
			in:   CauseInput{Pods: []*corev1.Pod{waiting("x-0", "ContainerCreating", "")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindCause(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("FindCause = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A volume being provisioned, as every new one is for a moment, is not a
// cause until VolumeGrace has passed, for the claim or for the pod that
// waits for it.
func TestFindCauseGivesProvisioningItsGrace(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	pending := func(age time.Duration) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-x-0", CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	}
	bound := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	}
	waitingPod := func(age time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x-0", CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/21 nodes are available: pod has unbound immediate PersistentVolumeClaims."}}}}
	}
	for _, tc := range []struct {
		name string
		in   CauseInput
		want string
	}{
		{"a claim 5 s old", CauseInput{Now: now, Claims: []*corev1.PersistentVolumeClaim{pending(5 * time.Second)}}, ""},
		{"a claim 31 s old", CauseInput{Now: now, Claims: []*corev1.PersistentVolumeClaim{pending(31 * time.Second)}}, ReasonVolumePending},
		{"a pod 5 s old waiting for its claim", CauseInput{Now: now, Pods: []*corev1.Pod{waitingPod(5 * time.Second)}}, ""},
		{"a pod 31 s old waiting for its claim", CauseInput{Now: now, Pods: []*corev1.Pod{waitingPod(31 * time.Second)}}, ReasonVolumePending},
		{"a pod 31 s old whose claim has just bound: the scheduler tries it again", CauseInput{Now: now, Pods: []*corev1.Pod{waitingPod(31 * time.Second)},
			Claims: []*corev1.PersistentVolumeClaim{bound("data-x-0")}}, ""},
		{"another pod's claim bound is not this pod's", CauseInput{Now: now, Pods: []*corev1.Pod{waitingPod(31 * time.Second)},
			Claims: []*corev1.PersistentVolumeClaim{bound("data-x-10")}}, ReasonVolumePending},
		{"a young claim that failed is not read as failed yet", CauseInput{Now: now, Claims: []*corev1.PersistentVolumeClaim{pending(time.Second)},
			ProvisioningFailures: map[string]string{"data-x-0": "no such class"}}, ""},
	} {
		got := FindCause(tc.in)
		if (got == nil && tc.want != "") || (got != nil && got.Reason != tc.want) {
			t.Errorf("%s: cause %+v, want reason %q", tc.name, got, tc.want)
		}
	}
}

// A container that passed its startup probe and fails its readiness probe
// is a cause once it has run, or been ready before, for ReadinessGrace:
// not while a restarted server comes up, which the probe's period allows.
func TestFindCauseNamesAFailingReadinessProbe(t *testing.T) {
	started := true
	pod := func(startedAt, readySince time.Duration, passedStartup *bool, restarts int32) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-readySince))}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql", Started: passedStartup, RestartCount: restarts,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-startedAt))}}}}}}
		if restarts > 0 {
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137,
				StartedAt: metav1.NewTime(now.Add(-time.Hour)), FinishedAt: metav1.NewTime(now.Add(-startedAt - time.Second))}
		}
		return p
	}
	failing := &Cause{Reason: ReasonReadinessFailing, Stuck: true, Subject: "container postgresql of pod x-0",
		Message: "container postgresql of pod x-0 runs but fails its readiness probe"}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		want *Cause
	}{
		{"not ready for two minutes, running for a day", pod(24*time.Hour, 2*time.Minute, &started, 0), failing},
		{"not ready for 30 s: within the grace", pod(24*time.Hour, 30*time.Second, &started, 0), nil},
		{"restarted 20 s ago after a crash: restarting, not failing", pod(20*time.Second, 5*time.Minute, &started, 1),
			&Cause{Reason: ReasonRestarting, Subject: "container postgresql of pod x-0",
				Message: "container postgresql of pod x-0 is restarting; it ended with Error (exit code 137)"}},
		{"restarted 5 min ago after a crash, still not ready", pod(5*time.Minute, 5*time.Minute, &started, 1), failing},
		{"its startup probe has not passed: still starting", pod(5*time.Minute, 5*time.Minute, nil, 0), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want != nil && want.Reason == ReasonReadinessFailing {
				// The pod whose events tell what the probe said.
				withPod := *want
				withPod.Pod = tt.pod
				want = &withPod
			}
			if got := FindCause(CauseInput{Now: now.Time, Pods: []*corev1.Pod{tt.pod}}); !reflect.DeepEqual(got, want) {
				t.Errorf("FindCause = %+v, want %+v", got, want)
			}
		})
	}
}

// CauseDue is the moment FindCause starts naming a cause by time alone:
// none just before it, one at it. A pass looks again then, once.
func TestCauseDue(t *testing.T) {
	at := now.Time
	claim := func(age time.Duration, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-x-0", CreationTimestamp: metav1.NewTime(at.Add(-age))},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	unschedulable := func(age time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x-0", CreationTimestamp: metav1.NewTime(at.Add(-age))},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."}}}}
	}
	started := true
	running := func(startedAgo, readyChangedAgo time.Duration, passedStartup *bool) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x-0"}, Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at.Add(-readyChangedAgo))}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql", Started: passedStartup,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at.Add(-startedAgo))}}}}}}
	}
	deleting := running(time.Minute, 50*time.Second, &started)
	deleting.DeletionTimestamp = &metav1.Time{Time: at}
	for _, tt := range []struct {
		name   string
		claims []*corev1.PersistentVolumeClaim
		pods   []*corev1.Pod
		// in is how long after now the cause is due; 0 for never.
		in time.Duration
	}{
		{name: "a claim 5 s old", claims: []*corev1.PersistentVolumeClaim{claim(5*time.Second, corev1.ClaimPending)}, in: 25 * time.Second},
		{name: "a bound claim", claims: []*corev1.PersistentVolumeClaim{claim(5*time.Second, corev1.ClaimBound)}},
		{name: "a pod 10 s old waiting for its claim", pods: []*corev1.Pod{unschedulable(10 * time.Second)}, in: 20 * time.Second},
		{name: "a pod waiting for a claim that has bound", pods: []*corev1.Pod{unschedulable(10 * time.Second)},
			claims: []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data-x-0"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}}},
		{name: "the sooner of a claim and its pod", claims: []*corev1.PersistentVolumeClaim{claim(12*time.Second, corev1.ClaimPending)},
			pods: []*corev1.Pod{unschedulable(3 * time.Second)}, in: 18 * time.Second},
		{name: "not ready for 50 s after its startup probe passed", pods: []*corev1.Pod{running(time.Hour, 50*time.Second, &started)}, in: 10*time.Second + time.Nanosecond},
		{name: "started 40 s ago, the startup probe passed", pods: []*corev1.Pod{running(40*time.Second, time.Hour, &started)}, in: 20*time.Second + time.Nanosecond},
		{name: "started 5 min ago, the startup probe not passed", pods: []*corev1.Pod{running(5*time.Minute, 5*time.Minute, nil)}, in: 15*time.Minute + time.Nanosecond},
		{name: "a pod being deleted", pods: []*corev1.Pod{deleting}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := CauseInput{Claims: tt.claims, Pods: tt.pods, Now: at}
			if c := FindCause(in); c != nil {
				t.Fatalf("a cause now: %+v", c)
			}
			due := CauseDue(in)
			if tt.in == 0 {
				if !due.IsZero() {
					t.Fatalf("due in %s, want never", due.Sub(at))
				}
				return
			}
			if got := due.Sub(at); got != tt.in {
				t.Fatalf("due in %s, want %s", got, tt.in)
			}
			in.Now = due.Add(-time.Nanosecond)
			if c := FindCause(in); c != nil {
				t.Errorf("a cause just before it is due: %+v", c)
			}
			in.Now = due
			if FindCause(in) == nil {
				t.Errorf("no cause when it is due")
			}
		})
	}
}
