package reconcile

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// A replica that cannot become ready is explained in the Ready condition,
// with a Warning event when the cause is new, and nothing more while it lasts.
func TestNotReadyNamesTheCause(t *testing.T) {
	pending := func(db *dbv1alpha1.Database) *corev1.PersistentVolumeClaim {
		c := claim(db, 0, "1Gi")
		c.UID = "claim-uid"
		c.Status.Phase = corev1.ClaimPending
		return c
	}
	provisioningFailed := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "data-orders-0.1", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "data-orders-0", Namespace: "default", UID: "claim-uid"},
		Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed",
		Message:       `storageclass.storage.k8s.io "does-not-exist" not found`,
		Count:         4,
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Minute)),
	}
	// A failure the volume controller retried at once: followed by a Normal
	// event, or seen only once.
	transient := func(normalAfter bool) []runtime.Object {
		failed := provisioningFailed.DeepCopy()
		failed.Name, failed.Count = "data-orders-0.2", 1
		failed.Message = `Error saving claim: Operation cannot be fulfilled on persistentvolumeclaims "data-orders-0": the object has been modified`
		if !normalAfter {
			return []runtime.Object{failed}
		}
		failed.Count = 5
		waiting := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "data-orders-0.3", Namespace: "default"},
			InvolvedObject: failed.InvolvedObject, Type: corev1.EventTypeNormal, Reason: "ExternalProvisioning",
			Message: "Waiting for a volume to be created", Count: 1, LastTimestamp: metav1.NewTime(testNow),
		}
		return []runtime.Object{failed, waiting}
	}
	pod := func(db *dbv1alpha1.Database) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default", Labels: names.Labels(db)}}
	}
	tests := []struct {
		name    string
		objects func(db *dbv1alpha1.Database) []runtime.Object
		reason  string
		message string
		stuck   bool
	}{
		{
			name: "a claim whose StorageClass does not exist",
			objects: func(db *dbv1alpha1.Database) []runtime.Object {
				return []runtime.Object{pending(db), provisioningFailed}
			},
			reason:  "VolumeNotProvisioned",
			message: `PersistentVolumeClaim data-orders-0 cannot be provisioned: storageclass.storage.k8s.io "does-not-exist" not found`,
			stuck:   true,
		},
		{
			name:    "a claim waiting for its volume",
			objects: func(db *dbv1alpha1.Database) []runtime.Object { return []runtime.Object{pending(db)} },
			reason:  "VolumePending",
			message: "PersistentVolumeClaim data-orders-0 is waiting for its volume",
		},
		{
			name:    "a claim whose provisioning failed once",
			objects: func(db *dbv1alpha1.Database) []runtime.Object { return append(transient(false), pending(db)) },
			reason:  "VolumePending",
			message: "PersistentVolumeClaim data-orders-0 is waiting for its volume",
		},
		{
			name:    "a claim whose provisioning failure was followed by progress",
			objects: func(db *dbv1alpha1.Database) []runtime.Object { return append(transient(true), pending(db)) },
			reason:  "VolumePending",
			message: "PersistentVolumeClaim data-orders-0 is waiting for its volume",
		},
		{
			name: "a pod the scheduler cannot place",
			objects: func(db *dbv1alpha1.Database) []runtime.Object {
				p := pod(db)
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					Message: "0/1 nodes are available: 1 Insufficient memory."}}
				return []runtime.Object{p}
			},
			reason:  "Unschedulable",
			message: "pod orders-0 cannot be scheduled: 0/1 nodes are available: 1 Insufficient memory.",
			stuck:   true,
		},
		{
			name: "a container that runs and has not been ready for too long",
			objects: func(db *dbv1alpha1.Database) []runtime.Object {
				p := pod(db)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgresql",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testNow.Add(-21 * time.Minute))}}}}
				return []runtime.Object{p}
			},
			reason:  "ContainerNotReady",
			message: "container postgresql of pod orders-0 has run for more than 20m0s without passing its readiness probe (kubectl describe pod orders-0 shows what the probe said)",
			stuck:   true,
		},
		{
			name: "a crash-looping container",
			objects: func(db *dbv1alpha1.Database) []runtime.Object {
				p := pod(db)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgresql",
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
				return []runtime.Object{p}
			},
			reason:  "CrashLooping",
			message: "container postgresql of pod orders-0 keeps crashing; it last ended with OOMKilled (exit code 137)",
			stuck:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts := notReadyStatefulSet(t, db)
			f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
			f.seed(tt.objects(db)...)
			st := wantStatus(db, "Provisioning", 1, 0, "", "False", tt.reason, "0/1 replicas are ready: "+tt.message,
				"True", "Provisioning", "waiting for 0/1 replicas to become ready")
			f.expectStatusUpdate(db, st)
			if tt.stuck {
				f.events = []string{"Warning " + tt.reason + " " + tt.message}
			}
			// What would change any of these causes reaches the Database
			// through an informer, the claim's events included: no recheck.
			f.run(ctx, ref(db), synced)

			// The same cause with that status stored: no write, no event.
			f2 := newFixture(t)
			db2 := db.DeepCopy()
			db2.Status = st
			f2.seed(db2, sts.DeepCopy(), expectedHeadless(t, db2), expectedService(t, db2), expectedSecret(t, db2, "pw"))
			f2.seed(tt.objects(db2)...)
			f2.run(ctx, ref(db2), synced)
		})
	}
}

// A claim being provisioned for less than status.VolumeGrace is not a
// cause: no read of its events, no cause in the status, and a look again
// when the grace is over.
func TestYoungPendingClaimIsNotACauseYet(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	sts := notReadyStatefulSet(t, db)
	young := claim(db, 0, "1Gi")
	young.Status.Phase = corev1.ClaimPending
	young.CreationTimestamp = metav1.NewTime(testNow.Add(-5 * time.Second))
	f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), young)
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	f.run(ctx, ref(db), recheckDue)
	if after := f.err.(*RecheckError).After; after != status.VolumeGrace-5*time.Second {
		t.Errorf("looks again after %s, want %s", after, status.VolumeGrace-5*time.Second)
	}
}

// A container that runs and is not ready yet is not a cause, but becomes
// one with time alone: the Database is looked at again when it does.
func TestStartingContainerIsRechecked(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	sts := notReadyStatefulSet(t, db)
	pod := startingPod(db)
	f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), pod)
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	f.run(ctx, ref(db), recheckDue)
	// Started a minute ago, its startup probe not passed.
	if after, want := f.err.(*RecheckError).After, status.NotReadyAfter-time.Minute+time.Nanosecond; after != want {
		t.Errorf("looks again after %s, want %s", after, want)
	}
}

// The events of a claim that waits for its volume come from the informer's
// cache, never from a read of the API. A Database whose claim waits has
// settled: the next pass runs when an event about the claim arrives, which
// changes what the pass reads, and names the failure at once.
func TestClaimEventsComeFromTheCache(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.ResourceVersion = "10"
	sts := notReadyStatefulSet(t, db)
	pending := claim(db, 0, "1Gi")
	pending.UID = "claim-uid"
	pending.Status.Phase = corev1.ClaimPending
	headless, svc, secret := expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw")
	for i, o := range []metav1.Object{sts, headless, svc, secret, pending} {
		o.SetResourceVersion(fmt.Sprint(i + 1))
	}
	waiting := wantStatus(db, "Provisioning", 1, 0, "", "False", "VolumePending",
		"0/1 replicas are ready: PersistentVolumeClaim data-orders-0 is waiting for its volume",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready")
	db.Status = waiting
	f.seed(db, sts, headless, svc, secret, pending)
	r, recorder := f.newReconciler()
	sync := func(wantSkipped bool) {
		t.Helper()
		f.syncAndCheck(ctx, r, recorder, ref(db), map[bool]outcome{true: skipped, false: synced}[wantSkipped])
	}
	sync(false) // nothing to write, and no recheck (done, not recheckSoon): settled
	sync(true)

	// An event about another claim of the same name, deleted since,
	// changes nothing.
	earlier := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "data-orders-0.0", Namespace: "default", ResourceVersion: "20"},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "data-orders-0", Namespace: "default", UID: "an-earlier-claim"},
		Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed", Message: "an old failure", Count: 9,
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Hour)),
	}
	if err := f.caches.ClaimEvents.Add(earlier); err != nil {
		t.Fatal(err)
	}
	sync(true)

	failed := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "data-orders-0.1", Namespace: "default", ResourceVersion: "21"},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "data-orders-0", Namespace: "default", UID: "claim-uid"},
		Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed",
		Message:       `storageclass.storage.k8s.io "does-not-exist" not found`,
		Count:         3,
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Minute)),
	}
	if err := f.caches.ClaimEvents.Add(failed); err != nil {
		t.Fatal(err)
	}
	msg := `PersistentVolumeClaim data-orders-0 cannot be provisioned: storageclass.storage.k8s.io "does-not-exist" not found`
	st := wantStatus(db, "Provisioning", 1, 0, "", "False", "VolumeNotProvisioned", "0/1 replicas are ready: "+msg,
		"True", "Provisioning", "waiting for 0/1 replicas to become ready")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning VolumeNotProvisioned " + msg}
	sync(false)
}

// A cause is reported once: its identity is its reason and what it is
// about, not the kubelet's words, which for an image that cannot be pulled
// alternate between the pull error and "Back-off pulling image". While the
// same cause lasts, its words in the status stay: no write, no event. A
// cause about another pod is a new cause.
func TestCauseIsReportedOnce(t *testing.T) {
	pulling := func(db *dbv1alpha1.Database, name, reason, message string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: names.Labels(db)},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:16",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}}
	}
	const pullError = `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/postgres:16": not found`
	stored := func(db *dbv1alpha1.Database) dbv1alpha1.DatabaseStatus {
		return wantStatus(db, "Provisioning", 1, 0, "", "False", "ImagePullFailed",
			"0/1 replicas are ready: pod orders-0 cannot pull image postgres:16: "+pullError,
			"True", "Provisioning", "waiting for 0/1 replicas to become ready")
	}
	for _, tt := range []struct {
		name  string
		pod   func(db *dbv1alpha1.Database) *corev1.Pod
		write func(db *dbv1alpha1.Database) []string // the event, and the status written (nil: none)
	}{
		{"the kubelet backs off: the same cause", func(db *dbv1alpha1.Database) *corev1.Pod {
			return pulling(db, "orders-0", "ImagePullBackOff", `Back-off pulling image "postgres:16"`)
		}, nil},
		{"the pull fails again, in other words: the same cause", func(db *dbv1alpha1.Database) *corev1.Pod {
			return pulling(db, "orders-0", "ErrImagePull", "rpc error: code = Unknown desc = failed to resolve reference: i/o timeout")
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			db.Status = stored(db)
			f.seed(db, notReadyStatefulSet(t, db), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), tt.pod(db))
			f.run(ctx, ref(db), synced)
		})
	}
	t.Run("another pod's image: a new cause, one Warning", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		// MongoDB (stored with two replicas before the API refused more than
		// one): two independent servers, nothing replicated to ask.
		db := newDatabase("orders", "mongodb", "7.0", 2)
		db.Status = wantStatus(db, "Provisioning", 2, 0, "", "False", "ImagePullFailed",
			"0/2 replicas are ready: pod orders-0 cannot pull image mongo:7.0: "+pullError,
			"True", "Provisioning", "waiting for 0/2 replicas to become ready")
		sts := notReadyStatefulSet(t, db)
		sts.Status.Replicas = 2
		second := pulling(db, "orders-1", "ImagePullBackOff", `Back-off pulling image "mongo:7.0"`)
		second.Status.ContainerStatuses[0].Name, second.Status.ContainerStatuses[0].Image = "mongodb", "mongo:7.0"
		f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), second)
		msg := `pod orders-1 cannot pull image mongo:7.0: Back-off pulling image "mongo:7.0"`
		f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 2, 0, "", "False", "ImagePullFailed", "0/2 replicas are ready: "+msg,
			"True", "Provisioning", "waiting for 0/2 replicas to become ready"))
		f.events = []string{"Warning ImagePullFailed " + msg}
		f.run(ctx, ref(db), synced)
	})
}

// One crash of a Database that ran is what it is: Restarting, with the
// last exit, in phase Degraded, not Updating (no rollout), and no Warning.
// A second crash soon after is a crash loop, with one Warning.
func TestOneRestartIsNoCrashLoop(t *testing.T) {
	crashed := func(db *dbv1alpha1.Database, restarts int32, state corev1.ContainerState) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default", Labels: names.Labels(db)},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql", RestartCount: restarts, State: state,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137,
					StartedAt: metav1.NewTime(testNow.Add(-time.Hour)), FinishedAt: metav1.NewTime(testNow.Add(-3 * time.Second))}}}}}}
	}
	for _, tt := range []struct {
		name          string
		restarts      int32
		state         corev1.ContainerState
		reason, cause string
		warning       bool
	}{
		{"killed once, running again", 1,
			corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testNow.Add(-2 * time.Second))}},
			"Restarting", "container postgresql of pod orders-0 is restarting; it ended with Error (exit code 137)", false},
		{"killed again 2 s after its restart", 1,
			corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137,
				StartedAt: metav1.NewTime(testNow.Add(-2 * time.Second)), FinishedAt: metav1.NewTime(testNow)}},
			"CrashLooping", "container postgresql of pod orders-0 keeps crashing; it last ended with Error (exit code 137)", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts, _, _, _ := f.converged(db)
			sts.Status.ReadyReplicas, sts.Status.AvailableReplicas = 0, 0
			f.seed(crashed(db, tt.restarts, tt.state))
			st := wantStatus(db, "Degraded", 1, 0, "16", "False", tt.reason, "0/1 replicas are ready: "+tt.cause,
				"True", "WaitingForReadiness", "every replica runs the current spec; waiting for 1/1 to pass the readiness probe")
			f.expectStatusUpdate(db, st)
			if tt.warning {
				f.events = []string{"Warning CrashLooping " + tt.cause}
			}
			f.run(ctx, ref(db), synced)
		})
	}
}

// A pod being deleted, such as one whose namespace goes, is no cause,
// however its containers ended: the kubelet's ContainerStatusUnknown (exit
// code 137) of a container that never started reads as no crash.
func TestPodBeingDeletedIsNoCause(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Status = wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default", Labels: names.Labels(db),
		DeletionTimestamp: ptr.To(metav1.NewTime(testNow))},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", ExitCode: 137,
				Message: "The container could not be located when the pod was deleted."}}}}}}
	f.seed(db, notReadyStatefulSet(t, db), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), pod)
	f.run(ctx, ref(db), synced)
}

// A server that passed its startup probe and fails its readiness probe,
// here for a pg_hba.conf that refuses its own address, is named with what
// the probe said, read once from the pod's Unhealthy events when the cause
// appears; while it lasts, no read, no write and no event.
func TestReadinessProbeFailingNamesWhatTheProbeSaid(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	sts, _, _, _ := f.converged(db)
	sts.Status.ReadyReplicas, sts.Status.AvailableReplicas = 0, 0
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default", UID: "pod-uid", Labels: names.Labels(db)},
		Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(testNow.Add(-2 * time.Minute))}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql", Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testNow.Add(-time.Hour))}}}}}}
	f.seed(pod)
	const said = `psql: error: connection to server at "10.88.0.5", port 5432 failed: FATAL:  no pg_hba.conf entry for host "10.88.0.5", user "postgres", database "orders", no encryption`
	unhealthy := func(name string, uid types.UID, at time.Duration, message string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Reason: "Unhealthy", Type: corev1.EventTypeWarning,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "orders-0", UID: uid},
			LastTimestamp:  metav1.NewTime(testNow.Add(-at)), Message: message}
	}
	f.kubeobjects = append(f.kubeobjects,
		unhealthy("older", "pod-uid", time.Minute, "Readiness probe failed: an older failure"),
		unhealthy("newest", "pod-uid", 10*time.Second, "Readiness probe failed: "+said+"\n"),
		unhealthy("liveness", "pod-uid", 5*time.Second, "Liveness probe failed: dial tcp 10.88.0.5:5432: connect: connection refused"),
		unhealthy("earlier-pod", "old-pod-uid", time.Second, "Readiness probe failed: the pod of the same name before"))

	cause := "container postgresql of pod orders-0 runs but fails its readiness probe: " + said
	f.kubeactions = []core.Action{actiontest.List(actiontest.Events, "default",
		"involvedObject.kind=Pod,involvedObject.name=orders-0,involvedObject.uid=pod-uid,reason=Unhealthy")}
	st := wantStatus(db, "Degraded", 1, 0, "16", "False", "ReadinessProbeFailing", "0/1 replicas are ready: "+cause,
		"True", "WaitingForReadiness", "every replica runs the current spec; waiting for 1/1 to pass the readiness probe")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning ReadinessProbeFailing " + cause}
	r := f.run(ctx, ref(db), synced)

	stored := db.DeepCopy()
	stored.Status = st
	f.update(f.databases, stored)
	f.kubeactions, f.actions, f.events = nil, nil, nil
	f.syncAndCheck(ctx, r, record.NewFakeRecorder(10), ref(db), synced)
}
