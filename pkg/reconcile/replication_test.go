package reconcile

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// probes are the calls that ask the servers of the pods of ordinals ks
// what they are.
func probes(ks ...int) []string {
	var out []string
	for _, k := range ks {
		out = append(out, "probe "+podIP(k)+" as postgres")
	}
	return out
}

// podIP is the address of the fixture's pod of ordinal k.
func podIP(k int) string { return fmt.Sprintf("192.0.2.%d", 10+k) }

// replicatedPod is pod k of db, ready or not, with the role label role.
func replicatedPod(db *dbv1alpha1.Database, k int, role string, ready bool) *corev1.Pod {
	labels := names.SelectorLabels(db)
	// The revision rolledOut gives the StatefulSet.
	labels["controller-revision-hash"] = "rev-1"
	if role != "" {
		labels[dbv1alpha1.LabelRole] = role
	}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: names.PodName(db, k), Namespace: db.Namespace, UID: types.UID(fmt.Sprintf("%s-%d-uid", db.Name, k)),
			Labels: labels, ResourceVersion: "7"},
		Status: corev1.PodStatus{PodIP: podIP(k), Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}},
			// Made to replicate: its replication init container ran.
			InitContainerStatuses: []corev1.ContainerStatus{{Name: builder.ReplicationContainer,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}},
	}
}

// primaryFacts and replicaFacts are servers as they answer: a primary at
// WAL position lsn that streams to the replicas named, and a replica that
// received and replayed up to lsn.
func primaryFacts(name string, lsn uint64, standbys ...string) *ha.Facts {
	f := &ha.Facts{Name: name, Written: lsn}
	for _, s := range standbys {
		f.Standbys = append(f.Standbys, ha.Standby{Name: s, Streaming: true, LagBytes: ptr.To[int64](0)})
	}
	return f
}

func replicaFacts(name string, lsn uint64) *ha.Facts {
	return &ha.Facts{Name: name, Replica: true, Received: lsn, Applied: lsn}
}

// convergedReplicated seeds a replicated PostgreSQL Database that reached
// Running with orders-0 as its primary and every other pod streaming from
// it, as the controller last wrote it, and its servers answering so.
func (f *fixture) convergedReplicated(db *dbv1alpha1.Database) {
	n := int(*db.Spec.Replicas)
	rs := &dbv1alpha1.ReplicationStatus{Primary: names.PodName(db, 0)}
	f.sql.Facts = map[string]*ha.Facts{}
	var standbys []string
	for k := range n {
		name := names.PodName(db, k)
		is := dbv1alpha1.InstanceStatus{Name: name, Role: dbv1alpha1.RolePrimary}
		role := dbv1alpha1.RolePrimary
		if k > 0 {
			role = dbv1alpha1.RoleReplica
			is = dbv1alpha1.InstanceStatus{Name: name, Role: dbv1alpha1.RoleReplica, Streaming: true, LagBytes: ptr.To[int64](0)}
			standbys = append(standbys, name)
			f.sql.Facts[podIP(k)] = replicaFacts(name, 100)
		}
		rs.Instances = append(rs.Instances, is)
		f.seed(replicatedPod(db, k, role, true))
	}
	f.sql.Facts[podIP(0)] = primaryFacts(names.PodName(db, 0), 100, standbys...)
	db.Status.Replication = rs
	p := desired(f.t, db)
	ro := &corev1.Service{}
	if err := builder.Convert(p.ReadOnlyService, ro); err != nil {
		f.t.Fatal(err)
	}
	sts, _, _, _ := f.converged(db)
	replicating := &metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: metav1.ConditionTrue, Reason: status.ReasonStreaming,
		Message: fmt.Sprintf("orders-0 is the primary; %d/%d replicas stream from it", n-1, n-1)}
	e := profile(f.t, db)
	image, _ := e.Image(db.Spec.Version, db.Spec.Image)
	db.Status = status.Compute(status.Input{Database: db, Endpoint: names.Endpoint(db, e.Runtime().Port), StatefulSet: sts, Image: image,
		Replication: rs, Replicating: replicating, Now: metav1.NewTime(testNow.Add(-time.Hour))})
	ro.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	f.seed(ro)
	for _, b := range p.DisruptionBudgets {
		budget := &policyv1.PodDisruptionBudget{}
		if err := builder.Convert(b, budget); err != nil {
			f.t.Fatal(err)
		}
		budget.UID = types.UID(budget.Name + "-uid")
		f.seed(budget)
	}
}

// newReplicated seeds a replicated Database as created, its pods ready and
// their servers answering (convergedReplicated): no role labels, no
// replication status yet, never Running; its children as the plan of the
// first sync makes them, whose client Service selects every pod until a
// primary is recorded.
func (f *fixture) newReplicated(db *dbv1alpha1.Database) {
	f.convergedReplicated(db)
	db.Status.Replication = nil
	db.Status.CurrentVersion = ""
	db.Status.Conditions = db.Status.Conditions[:2]
	for _, pod := range f.podLister {
		delete(pod.Labels, dbv1alpha1.LabelRole)
	}
	f.serviceLister[1].Spec.Selector = names.SelectorLabels(db)
	f.serviceLister[1].Annotations = expectedService(f.t, db).Annotations
	f.statefulSetLister[0].Annotations = expectedStatefulSet(f.t, db).Annotations
}

// expectTargetRecorded expects the status write that records name as the
// target of a failover or switchover, before anything is done for it, and
// returns the replication status written.
func (f *fixture) expectTargetRecorded(db *dbv1alpha1.Database, name string) *dbv1alpha1.ReplicationStatus {
	target := db.Status.Replication.DeepCopy()
	target.TargetPrimary = name
	msg := "making " + name + " the primary"
	f.expectStatusUpdate(db, replicatedStatus(db, "Updating", target, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
	return target
}

// expectFirstPrimaryRecorded expects the first pass of newReplicated's
// Database to read its credentials and record orders-0 as the target of
// its first primary, before any label is given.
func (f *fixture) expectFirstPrimaryRecorded(db *dbv1alpha1.Database) {
	f.expectGet(secretsResource, "default", "orders-credentials")
	target := &dbv1alpha1.ReplicationStatus{TargetPrimary: "orders-0"}
	f.expectStatusUpdate(db, replicatedStatus(db, "Provisioning", target,
		"False", "NoPrimary", "making orders-0 the first primary",
		"True", "NoPrimary", "making orders-0 the first primary",
		"False", "NoPrimary", "making orders-0 the first primary"))
}

// expectPodRole expects the role label of pod k of db set (or removed, with
// ""), on that pod's UID.
func (f *fixture) expectPodRole(db *dbv1alpha1.Database, k int, role string) {
	var value any
	if role != "" {
		value = role
	}
	f.expectPodMetadata(db, k, "labels", map[string]any{dbv1alpha1.LabelRole: value})
}

// expectPodMetadata expects the keys of values set in the metadata field
// of pod k of db, by a merge patch on that pod's UID (patchPodMetadata).
func (f *fixture) expectPodMetadata(db *dbv1alpha1.Database, k int, field string, values map[string]any) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": fmt.Sprintf("%s-%d-uid", db.Name, k), field: values}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(podsResource, db.Namespace, names.PodName(db, k), types.MergePatchType, patch))
}

// replicatedStatus is the status the controller writes for a replicated
// Database whose pods are all ready at spec.version.
func replicatedStatus(db *dbv1alpha1.Database, phase dbv1alpha1.Phase, rs *dbv1alpha1.ReplicationStatus,
	readyStatus metav1.ConditionStatus, readyReason, readyMsg string,
	progStatus metav1.ConditionStatus, progReason, progMsg string,
	replStatus metav1.ConditionStatus, replReason, replMsg string) dbv1alpha1.DatabaseStatus {
	n := *db.Spec.Replicas
	st := wantStatus(db, phase, n, n, db.Spec.Version, readyStatus, readyReason, readyMsg, progStatus, progReason, progMsg)
	st.Replication = rs
	st.Conditions = append(st.Conditions, metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: replStatus, Reason: replReason,
		Message: replMsg, ObservedGeneration: db.Generation, LastTransitionTime: metav1.NewTime(testNow)})
	return st
}

// The first sync of a new replicated Database whose pods serve: orders-0
// out of recovery is recorded as the target before any label is given,
// then labelled primary, recorded as the primary, and the replicas that
// stream from it labelled replica.
func TestReplicationFirstPrimary(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.newReplicated(db)

	f.expectFirstPrimaryRecorded(db)
	f.expectPodRole(db, 0, "primary")
	f.expectPodRole(db, 1, "replica")
	f.expectPodRole(db, 2, "replica")
	done := &dbv1alpha1.ReplicationStatus{Primary: "orders-0", Instances: []dbv1alpha1.InstanceStatus{
		{Name: "orders-0", Role: "primary"},
		{Name: "orders-1", Role: "replica", Streaming: true, LagBytes: ptr.To[int64](0)},
		{Name: "orders-2", Role: "replica", Streaming: true, LagBytes: ptr.To[int64](0)},
	}}
	f.expectStatusUpdate(db, replicatedStatus(db, "Running", done,
		"True", "AllReplicasReady", "3/3 replicas are ready",
		"False", "Converged", "the Database matches its spec",
		"True", "Streaming", "orders-0 is the primary; 2/2 replicas stream from it"))
	f.events = []string{"Normal PrimaryChosen first primary: orders-0 runs out of recovery", "Normal Running"}
	f.calls = probes(0, 1, 2)
	f.run(ctx, ref(db), pollServers)
}

// A pod replaced after the cache's copy, on which the pass decided, is
// not labelled: the API server refuses the label on the old pod's UID, or
// finds no pod at all, and the pass ends quietly, waiting for the informer
// to bring the pod as it is (no error, no retry with backoff).
func TestReplicationRoleOfAReplacedPodWaitsForTheCache(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refusal error
		want    outcome
	}{
		{"replaced: its UID refused", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "orders-1", field.ErrorList{
			field.Invalid(field.NewPath("metadata", "uid"), "orders-1-uid", "field is immutable")}), waiting},
		{"deleted", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "orders-1"), waiting},
		{"another refusal is an error", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "orders-1", field.ErrorList{
			field.Invalid(field.NewPath("metadata", "labels"), "x", "not allowed")}), transient},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			f.newReplicated(db)
			r, recorder := f.newReconciler()
			f.kubeclient.PrependReactor("patch", "pods", func(a core.Action) (bool, runtime.Object, error) {
				if a.(core.PatchAction).GetName() == "orders-1" {
					return true, nil, tt.refusal
				}
				return false, nil, nil
			})
			f.expectFirstPrimaryRecorded(db)
			f.expectPodRole(db, 0, "primary")
			f.expectPodRole(db, 1, "replica")
			f.events = []string{"Normal PrimaryChosen first primary: orders-0 runs out of recovery"}
			f.calls = probes(0, 1, 2)
			f.syncAndCheck(ctx, r, recorder, ref(db), tt.want)
		})
	}
}

// primaryDown seeds a replicated Database of 3 pods whose primary, orders-0,
// has not served for 40 s, past the default failover delay of 30 s, and
// whose replicas received WAL up to 90 (orders-1) and 120 (orders-2).
func (f *fixture) primaryDown(db *dbv1alpha1.Database) {
	f.convergedReplicated(db)
	lost := metav1.NewTime(testNow.Add(-40 * time.Second))
	db.Status.Replication.PrimaryLostSince = &lost
	delete(f.sql.Facts, podIP(0))
	f.sql.Facts[podIP(1)] = replicaFacts("orders-1", 90)
	f.sql.Facts[podIP(2)] = replicaFacts("orders-2", 120)
}

// switchoverUnderway is a 2-pod Database switching over to orders-1, its
// target recorded.
func switchoverUnderway(t *testing.T) (*fixture, *dbv1alpha1.Database) {
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 2)
	db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Primary: "orders-1"}
	f.convergedReplicated(db)
	db.Status.Replication.TargetPrimary = "orders-1"
	return f, db
}

// deletingLive makes the API server's copy of the pod name one being
// deleted, its grace period ending at end, while the cache's is not: the
// cache has not shown the delete yet.
func (f *fixture) deletingLive(name string, end time.Time) {
	for k, o := range f.kubeobjects {
		if pod, ok := o.(*corev1.Pod); ok && pod.Name == name {
			live := pod.DeepCopy()
			live.DeletionTimestamp = ptr.To(metav1.NewTime(end))
			f.kubeobjects[k] = live
		}
	}
}

// expectFailover expects the failover of primaryDown, after the calls
// asked: the replica with the most WAL received, orders-2, is recorded as
// the target, the old primary loses its label before anything is promoted,
// the target is promoted, labelled, and recorded as the primary.
func (f *fixture) expectFailover(db *dbv1alpha1.Database, asked []string, why string) {
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.expectTargetRecorded(db, "orders-2")
	f.expectPodRole(db, 0, "")
	f.expectPodRole(db, 2, "primary")
	done := &dbv1alpha1.ReplicationStatus{Primary: "orders-2", Instances: []dbv1alpha1.InstanceStatus{
		{Name: "orders-0"}, {Name: "orders-1", Role: "replica"}, {Name: "orders-2", Role: "primary"},
	}}
	f.expectStatusUpdate(db, replicatedStatus(db, "Running", done,
		"True", "AllReplicasReady", "3/3 replicas are ready",
		"False", "Converged", "the Database matches its spec",
		"False", "ReplicasNotStreaming", "orders-2 is the primary; 0/2 replicas stream from it; not streaming yet: orders-0, orders-1"))
	f.events = []string{
		"Warning FailingOver primary orders-0 has not served for 40s (" + why + "); failing over to orders-2, the replica with the most WAL received",
		"Normal PrimaryChanged orders-2 is the primary, in place of orders-0",
		"Normal Running",
	}
	f.primaryChanges = []string{"default/orders failover"}
	f.calls = append(asked, "promote 192.0.2.12", "probe 192.0.2.12 as postgres")
}

// The primary's pod stopped answering 40 s ago, past the default delay: a
// failover (expectFailover).
func TestReplicationFailover(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.primaryDown(db)
	f.podLister[0].Status.Conditions[0].Status = corev1.ConditionFalse
	f.expectFailover(db, probes(0, 1, 2), "its pod is not ready, and its server does not answer: dial tcp 192.0.2.10: connect: connection refused")
	f.run(ctx, ref(db), pollServers)
}

// A failover to orders-2 is under way (its target recorded, the old
// primary's label removed) when orders-0 answers again as the primary, not
// fenced: its pod was made again after its server was stopped, and its
// init container found no other primary. It wrote WAL up to 130, which
// orders-2 (up to 120) has not received and cannot, as it streams from no
// one. Promoting orders-2 would throw that WAL away, and fencing orders-0
// would wait for ever: the failover is called off, and orders-0 is
// labelled and recorded as the primary again, with no PrimaryChanged.
func TestReplicationFailoverCalledOffWhenTheOldPrimaryIsBackAhead(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.primaryDown(db)
	db.Status.Replication.TargetPrimary = "orders-2"
	delete(f.podLister[0].Labels, dbv1alpha1.LabelRole)
	f.sql.Facts[podIP(0)] = primaryFacts("orders-0", 130)

	f.expectGet(secretsResource, "default", "orders-credentials")
	f.expectTargetRecorded(db, "orders-0")
	f.expectPodRole(db, 0, "primary")
	done := &dbv1alpha1.ReplicationStatus{Primary: "orders-0", Instances: []dbv1alpha1.InstanceStatus{
		{Name: "orders-0", Role: "primary"}, {Name: "orders-1", Role: "replica"}, {Name: "orders-2", Role: "replica"},
	}}
	f.expectStatusUpdate(db, replicatedStatus(db, "Running", done,
		"True", "AllReplicasReady", "3/3 replicas are ready",
		"False", "Converged", "the Database matches its spec",
		"False", "ReplicasNotStreaming", "orders-0 is the primary; 0/2 replicas stream from it; not streaming yet: orders-1, orders-2"))
	f.events = []string{
		"Normal FailoverCalledOff orders-0 answers again as the primary before orders-2 was promoted, having written WAL up to 0/82, which orders-2 has not received (up to 0/78) and does not stream from it: the failover is called off, and orders-0 stays the primary",
		"Normal Running",
	}
	f.calls = probes(0, 1, 2)
	f.run(ctx, ref(db), pollServers)
}

// The primary's pod is being deleted (a drain, or kubectl delete pod), and
// the failover delay has run out. While its grace period lasts, its server
// shuts down cleanly, sending its last WAL to the replicas, and nothing is
// promoted before it is gone; but the controller hands over at once: the
// replica that streamed from it with the most WAL is recorded as the
// target (a switchover, not a failover), and the old primary loses its
// label. With no replica that streamed at the last look, it is only
// waited for. A pod whose grace period ran out (its node is gone) is not
// waited for. A pod deleted a moment ago, whose server stopped answering
// before the cache showed the deletion, is read live and handed over from
// alike, not failed over from at once (failoverDelaySeconds 0).
func TestReplicationPrimaryBeingDeleted(t *testing.T) {
	for _, tt := range []struct {
		name     string
		deletion time.Duration // from now, when its grace period ends
		streamed bool          // the status says the replicas streamed
		stale    bool          // the cache does not show the deletion yet
		want     string        // handover, wait or failover
	}{
		{"its grace period lasts: handed over to the replica that streamed with the most WAL, after its shutdown", 25 * time.Second, true, false, "handover"},
		{"its grace period lasts, no replica streamed: waited for", 25 * time.Second, false, false, "wait"},
		{"its grace period ran out: failed over", -10 * time.Second, true, false, "failover"},
		{"the cache does not show the deletion yet: read live, handed over", 25 * time.Second, true, true, "handover"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			if tt.stale {
				db.Spec.Replication = &dbv1alpha1.ReplicationSpec{FailoverDelaySeconds: ptr.To[int32](0)}
			}
			f.primaryDown(db)
			if tt.stale {
				// Its server stopped answering just now.
				db.Status.Replication.PrimaryLostSince = ptr.To(metav1.NewTime(testNow))
				f.deletingLive("orders-0", testNow.Add(tt.deletion))
			} else {
				f.podLister[0].DeletionTimestamp = ptr.To(metav1.NewTime(testNow.Add(tt.deletion)))
			}
			if !tt.streamed {
				for k := range db.Status.Replication.Instances {
					db.Status.Replication.Instances[k].Streaming = false
				}
			}
			// A pod being deleted is not asked.
			switch tt.want {
			case "failover":
				// A pod being deleted is not asked: why its server does
				// not answer is not known.
				f.expectFailover(db, probes(1, 2), "its pod is not ready, and its server does not answer")
				f.run(ctx, ref(db), pollServers)
				return
			case "handover":
				f.expectGet(secretsResource, "default", "orders-credentials")
				if tt.stale {
					f.expectGet(podsResource, "default", "orders-0")
				}
				target := f.expectTargetRecorded(db, "orders-2")
				f.expectPodRole(db, 0, "")
				target.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", Role: "replica"}, {Name: "orders-2", Role: "replica"}}
				msg := "making orders-2 the primary: waiting for the former primary orders-0 to shut down cleanly, sending its last WAL to the replicas"
				f.expectStatusUpdate(db, replicatedStatus(db, "Updating", target, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
				f.events = []string{"Normal SwitchingOver the pod of the primary orders-0 is being deleted; switching over to orders-2, the replica streaming from it with the most WAL received, as it shuts down"}
			case "wait":
				f.expectGet(secretsResource, "default", "orders-credentials")
				rs := db.Status.Replication.DeepCopy()
				rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", Role: "replica"}, {Name: "orders-2", Role: "replica"}}
				msg := "waiting for the former primary orders-0 to shut down cleanly, sending its last WAL to the replicas"
				f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "NoPrimary", msg, "True", "NoPrimary", msg, "False", "NoPrimary", msg))
			}
			f.calls = probes(1, 2)
			if tt.stale {
				f.calls = probes(0, 1, 2)
			}
			f.run(ctx, ref(db), pollServers)
			var recheck *RecheckError
			if errors.As(f.err, &recheck); recheck.After != time.Second {
				t.Errorf("looked at again after %s, want 1s", recheck.After)
			}
		})
	}
}

// The primary has not served for 40 s, past the failover delay, but its
// kubelet reports its server's container running (a server starved on a
// busy node, say): it may still take writes from clients that reach it,
// so no replica is promoted beside it. Its pod is deleted, and the role is
// handed over as it shuts down, as for any primary whose pod is deleted.
func TestReplicationPrimaryWhoseServerRunsIsStopped(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.primaryDown(db)
	f.podLister[0].CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour))
	f.podLister[0].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgresql",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}

	f.expectGet(secretsResource, "default", "orders-credentials")
	// Its pod is read live, as its server does not answer while the cache
	// has it ready: it is not being deleted.
	f.expectGet(podsResource, "default", "orders-0")
	f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-0-uid"))}}))
	f.expectTargetRecorded(db, "orders-2")
	f.expectPodRole(db, 0, "")
	f.events = []string{
		"Warning FailingOver primary orders-0 has not served for 40s (its pod is ready, and its server does not answer: dial tcp 192.0.2.10: connect: connection refused); its server still runs: it is stopped, so that it takes no more writes and hands its role over as it shuts down",
		"Normal SwitchingOver the pod of the primary orders-0 is being deleted; switching over to orders-2, the replica streaming from it with the most WAL received, as it shuts down",
	}
	f.calls = probes(0, 1, 2)
	// The fake clientset removes a deleted pod at once, where a kubelet
	// stops it first: the label's removal finds it gone, and the pass
	// waits for the cache (the handover itself: TestReplicationPrimaryBeingDeleted).
	f.run(ctx, ref(db), waiting)
}

// A primary that does not serve is waited for, and the servers are looked
// at again at their pace, not at once, while the Database is not Running:
// one that stopped answering just now (a restart) until the failover delay
// ends, its loss recorded; one whose server answers the controller as the
// primary while its pod is not ready (its readiness probe timed out three
// times on a busy node) for 2 minutes, whatever the failover delay.
func TestReplicationPrimaryNotServingIsWaitedFor(t *testing.T) {
	for _, tt := range []struct {
		name    string
		delay   int32
		answers bool
		msg     string
	}{
		{"stopped answering just now", 20, false, "primary orders-0 does not serve; failing over if it does not serve again within 20s"},
		{"answers, its pod not ready for a minute", 0, true, "primary orders-0 answers, but its pod is not ready; failing over if it is not ready again within 2m0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 2)
			db.Spec.Replication = &dbv1alpha1.ReplicationSpec{FailoverDelaySeconds: ptr.To(tt.delay)}
			f.convergedReplicated(db)
			f.podLister[0].Status.Conditions[0].Status = corev1.ConditionFalse
			rs := db.Status.Replication.DeepCopy()
			if tt.answers {
				since := metav1.NewTime(testNow.Add(-time.Minute))
				db.Status.Replication.PrimaryLostSince = &since
				rs.PrimaryLostSince = &since
			} else {
				delete(f.sql.Facts, podIP(0))
				f.sql.Facts[podIP(1)] = replicaFacts("orders-1", 100)
				now := metav1.NewTime(testNow)
				rs = &dbv1alpha1.ReplicationStatus{Primary: "orders-0", PrimaryLostSince: &now, Instances: []dbv1alpha1.InstanceStatus{
					{Name: "orders-0"}, {Name: "orders-1", Role: "replica"}}}
			}

			f.expectGet(secretsResource, "default", "orders-credentials")
			f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "NoPrimary", tt.msg, "True", "NoPrimary", tt.msg, "False", "NoPrimary", tt.msg))
			f.calls = probes(0, 1)
			f.run(ctx, ref(db), pollServers)
			var recheck *RecheckError
			if errors.As(f.err, &recheck); recheck.After != ReplicationPoll {
				t.Errorf("looked at again after %s, want %s", recheck.After, ReplicationPoll)
			}
		})
	}
}

// A switchover to orders-1, as asked: no acknowledged write may be lost, so
// the old primary is fenced (it refuses writes and is marked to rejoin as a
// replica) and stopped only once orders-1 has received all it wrote; then
// orders-1 is promoted. Where the fence holds (MySQL), orders-1 is
// promoted while the fenced old primary runs, and that one restarts after.
func TestReplicationSwitchover(t *testing.T) {
	for _, tt := range []struct {
		name     string
		received uint64
	}{{"the replica has all the WAL", 100}, {"the replica lags behind", 90}} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 2)
			db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Primary: "orders-1"}
			f.convergedReplicated(db)
			db.Generation = 2
			f.sql.Facts[podIP(1)].Received = tt.received

			f.expectGet(secretsResource, "default", "orders-credentials")
			target := f.expectTargetRecorded(db, "orders-1")
			f.expectPodRole(db, 0, "")
			f.events = []string{"Normal SwitchingOver switchover to orders-1 as asked",
				"Normal Fenced orders-0 still accepts writes; it is fenced before orders-1 is promoted"}
			if tt.received < 100 {
				// It waits for the WAL: the old primary runs on, fenced.
				rs := target.DeepCopy()
				// orders-0 is still the primary, fenced, and orders-1 streams from it.
				rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0", Role: "primary"},
					{Name: "orders-1", Role: "replica", Streaming: true, LagBytes: ptr.To[int64](0)}}
				msg := "making orders-1 the primary: waiting for orders-1 to receive the WAL of orders-0 up to 0/64 before it is promoted"
				f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
				f.calls = append(probes(0, 1), "fence 192.0.2.10")
				f.run(ctx, ref(db), pollServers)
				return
			}
			// Stopped: its clean shutdown sends its last WAL, its shutdown
			// checkpoint included, before anything is promoted.
			f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-0-uid"))}}))
			rs := target.DeepCopy()
			rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", Role: "replica", Streaming: true}}
			msg := "making orders-1 the primary: waiting for the former primary orders-0 to shut down cleanly, sending its last WAL to the replicas"
			f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
			f.calls = append(probes(0, 1), "fence 192.0.2.10")
			f.run(ctx, ref(db), pollServers)
		})
	}
	t.Run("the fence holds: promoted while the old primary runs, fenced; it restarts after", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 2)
		db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Primary: "orders-1"}
		f.convergedReplicated(db)
		f.sql.Facts["192.0.2.10"].FenceHolds = true
		db.Generation = 2

		f.expectGet(secretsResource, "default", "orders-credentials")
		f.expectTargetRecorded(db, "orders-1")
		f.expectPodRole(db, 0, "")
		f.expectPodRole(db, 1, "primary")
		// Restarted once orders-1 is the primary, to rejoin as its replica.
		f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-0-uid"))}}))
		done := &dbv1alpha1.ReplicationStatus{Primary: "orders-1", Instances: []dbv1alpha1.InstanceStatus{
			{Name: "orders-0"}, {Name: "orders-1", Role: "primary"}}}
		st := replicatedStatus(db, "Running", done,
			"True", "AllReplicasReady", "2/2 replicas are ready",
			"False", "Converged", "the Database matches its spec",
			"False", "ReplicasNotStreaming", "orders-1 is the primary; 0/1 replicas stream from it; not streaming yet: orders-0")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal SwitchingOver switchover to orders-1 as asked",
			"Normal Fenced orders-0 still accepts writes; it is fenced before orders-1 is promoted",
			"Normal PrimaryChanged orders-1 is the primary, in place of orders-0",
			"Normal Running postgresql 16 is running: 2/2 replicas are ready"}
		f.primaryChanges = []string{"default/orders switchover"}
		f.calls = append(probes(0, 1), "fence 192.0.2.10", "promote 192.0.2.11", "probe 192.0.2.11 as postgres")
		r, recorder := f.newReconciler()
		f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)

		// The next pass starts before the cache shows the status written:
		// it works from the status as written, and neither finishes the
		// switchover again nor says it again.
		f.actions, f.kubeactions, f.events, f.primaryChanges = nil, nil, nil, nil
		f.podLister[0].DeletionTimestamp = &metav1.Time{Time: testNow}
		delete(f.podLister[0].Labels, dbv1alpha1.LabelRole)
		f.podLister[1].Labels[dbv1alpha1.LabelRole] = dbv1alpha1.RolePrimary
		f.updatePods()
		f.sql.Facts[podIP(0)] = nil
		f.calls = probes(1)
		f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
	})
	t.Run("the pass after the stop, before the cache shows it: the old primary's pod is read live, and its shutdown waited for", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f, db := switchoverUnderway(t)
		delete(f.podLister[0].Labels, dbv1alpha1.LabelRole)
		// Shutting down: it no longer answers, and the API server's pod
		// is being deleted.
		delete(f.sql.Facts, podIP(0))
		f.deletingLive("orders-0", testNow.Add(25*time.Second))

		f.expectGet(secretsResource, "default", "orders-credentials")
		f.expectGet(podsResource, "default", "orders-0")
		rs := db.Status.Replication.DeepCopy()
		rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", Role: "replica"}}
		msg := "making orders-1 the primary: waiting for the former primary orders-0 to shut down cleanly, sending its last WAL to the replicas"
		f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
		f.calls = probes(0, 1)
		f.run(ctx, ref(db), pollServers)
	})
	t.Run("the old primary has shut down", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f, db := switchoverUnderway(t)
		f.podLister = f.podLister[1:]
		delete(f.sql.Facts, podIP(0))

		f.expectGet(secretsResource, "default", "orders-credentials")
		f.expectPodRole(db, 1, "primary")
		done := &dbv1alpha1.ReplicationStatus{Primary: "orders-1", Instances: []dbv1alpha1.InstanceStatus{{Name: "orders-1", Role: "primary"}}}
		st := replicatedStatus(db, "Running", done,
			"True", "AllReplicasReady", "2/2 replicas are ready",
			"False", "Converged", "the Database matches its spec",
			"False", "ReplicasNotStreaming", "orders-1 is the primary; 0/1 replicas stream from it")
		keepTransitionTime(&st, "Ready")
		keepTransitionTime(&st, "Progressing")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal PrimaryChanged orders-1 is the primary, in place of orders-0"}
		f.primaryChanges = []string{"default/orders switchover"}
		f.calls = append(probes(1), "promote 192.0.2.11", "probe 192.0.2.11 as postgres")
		f.run(ctx, ref(db), pollServers)
	})
}

// rollingStatus is the status of a replicated Database of 3 ready pods
// while a rollout has updated updated of them.
func rollingStatus(db *dbv1alpha1.Database, rs *dbv1alpha1.ReplicationStatus, updated int,
	replStatus metav1.ConditionStatus, replReason, replMsg string) dbv1alpha1.DatabaseStatus {
	st := replicatedStatus(db, "Updating", rs,
		"False", "ReplicasNotReady", "3/3 replicas are ready",
		"True", "RollingUpdate", fmt.Sprintf("rolling out: %d/3 replicas updated, 3 ready", updated),
		replStatus, replReason, replMsg)
	if replStatus == "True" {
		keepTransitionTime(&st, dbv1alpha1.ConditionReplicating)
	}
	return st
}

// A rollout of a replicated Database (its StatefulSet updates OnDelete):
// the replica of the highest ordinal is restarted first, one pod per
// settled Database; once only the primary runs the earlier revision, the
// controller switches over to an updated replica, and the switchover stops
// the old primary: it restarts last, and once.
func TestReplicationRollout(t *testing.T) {
	for _, tt := range []struct {
		name     string
		outdated []int
		expect   func(f *fixture, db *dbv1alpha1.Database)
	}{
		{name: "every pod outdated: the replica of the highest ordinal first", outdated: []int{0, 1, 2},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-2",
					metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-2-uid"))}}))
				f.expectStatusUpdate(db, rollingStatus(db, db.Status.Replication, 0,
					"True", "Streaming", "orders-0 is the primary; 2/2 replicas stream from it"))
				f.events = []string{"Normal RollingOut Restarting orders-2 at the new revision of the pods"}
			}},
		{name: "a replica not streaming: nothing restarted", outdated: []int{0, 1},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.sql.Facts[podIP(0)].Standbys = f.sql.Facts[podIP(0)].Standbys[:1]
				rs := db.Status.Replication.DeepCopy()
				rs.Instances[2] = dbv1alpha1.InstanceStatus{Name: "orders-2", Role: "replica"}
				f.expectStatusUpdate(db, rollingStatus(db, rs, 1,
					"False", "ReplicasNotStreaming", "orders-0 is the primary; 1/2 replicas stream from it; not streaming yet: orders-2"))
			}},
		{name: "only the primary outdated: switch over to the most advanced replica", outdated: []int{0},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.sql.Facts[podIP(2)].Received = 100
				f.sql.Facts[podIP(1)].Received = 99
				target := f.expectTargetRecorded(db, "orders-2")
				f.expectPodRole(db, 0, "")
				f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
					metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-0-uid"))}}))
				rs := target.DeepCopy()
				rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", Role: "replica", Streaming: true}, {Name: "orders-2", Role: "replica", Streaming: true}}
				msg := "making orders-2 the primary: waiting for the former primary orders-0 to shut down cleanly, sending its last WAL to the replicas"
				f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
				f.events = []string{"Normal SwitchingOver switchover to orders-2 as asked",
					"Normal Fenced orders-0 still accepts writes; it is fenced before orders-2 is promoted"}
				f.calls = []string{"fence 192.0.2.10"}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			f.convergedReplicated(db)
			f.updatedTo("rev-2", slices.DeleteFunc([]int{0, 1, 2}, func(k int) bool { return slices.Contains(tt.outdated, k) })...)
			f.expectGet(secretsResource, "default", "orders-credentials")
			tt.expect(f, db)
			f.calls = append(probes(0, 1, 2), f.calls...)
			f.run(ctx, ref(db), pollServers)
		})
	}
}

// A replica that cannot replicate until it rejoins or is seeded again:
// its server says so (MySQL: the primary purged what it lacks), or the
// timelines do (PostgreSQL: it applied WAL of the old primary's timeline
// past where the promoted replica's history left it, and its server
// retries for ever without a word over SQL). The controller restarts its
// pod, with one Warning, so that its init container rewinds it or seeds it
// again; a pod younger than brokenRestartAge (restarted for it already) is
// left as it is, and the condition says why it does not stream.
func TestReplicationRestartsABrokenReplica(t *testing.T) {
	const purged = "error 13114 from the primary: Cannot replicate because the source purged required binary logs."
	causes := []struct {
		name, why string
		facts     func(primary, replica *ha.Facts)
	}{
		{"its server says why", purged, func(_, replica *ha.Facts) { replica.Broken = purged }},
		{"it diverged from the primary's timeline",
			"it applied WAL of timeline 1 up to 0/3000001, past 0/3000000 where the primary's history left that timeline: it diverged",
			func(primary, replica *ha.Facts) {
				primary.Timeline, primary.TimelineEnds = 2, map[uint32]uint64{1: 0x3000000}
				replica.Timeline, replica.Applied = 1, 0x3000001
			}},
		{"its timeline's end not passed: it follows, and is left as it is", "", func(primary, replica *ha.Facts) {
			primary.Timeline, primary.TimelineEnds = 2, map[uint32]uint64{1: 0x3000000}
			replica.Timeline, replica.Applied = 1, 0x3000000
		}},
	}
	type testCase struct {
		name   string
		why    string
		facts  func(primary, replica *ha.Facts)
		age    time.Duration
		expect func(f *fixture, db *dbv1alpha1.Database)
	}
	var cases []testCase
	for _, c := range causes {
		restarted := func(f *fixture, db *dbv1alpha1.Database) {}
		if c.why != "" {
			restarted = func(f *fixture, db *dbv1alpha1.Database) {
				f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-2",
					metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-2-uid"))}}))
				f.events = []string{"Warning ReplicaBroken Restarting orders-2: it cannot replicate from orders-0 (" + c.why + "); as it starts, it rejoins, or is seeded again from orders-0"}
			}
		}
		cases = append(cases,
			testCase{c.name + ": restarted", c.why, c.facts, brokenRestartAge, restarted},
			testCase{c.name + ": restarted less than brokenRestartAge ago: left as it is", c.why, c.facts, brokenRestartAge - time.Second,
				func(f *fixture, db *dbv1alpha1.Database) {}})
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			f.convergedReplicated(db)
			f.podLister[2].CreationTimestamp = metav1.NewTime(testNow.Add(-tt.age))
			f.sql.Facts[podIP(0)].Standbys = f.sql.Facts[podIP(0)].Standbys[:1]
			tt.facts(f.sql.Facts[podIP(0)], f.sql.Facts[podIP(2)])
			notStreaming := "orders-2"
			if tt.why != "" {
				notStreaming += " (it cannot replicate: " + tt.why + ")"
			}
			f.expectGet(secretsResource, "default", "orders-credentials")
			rs := db.Status.Replication.DeepCopy()
			rs.Instances[2] = dbv1alpha1.InstanceStatus{Name: "orders-2", Role: "replica"}
			st := replicatedStatus(db, "Running", rs,
				"True", "AllReplicasReady", "3/3 replicas are ready",
				"False", "Converged", "the Database matches its spec",
				"False", "ReplicasNotStreaming", "orders-0 is the primary; 1/2 replicas stream from it; not streaming yet: "+notStreaming)
			for k := range st.Conditions[:2] {
				// Unchanged: their times are kept.
				st.Conditions[k].LastTransitionTime = f.dbLister[0].Status.Conditions[k].LastTransitionTime
			}
			f.expectStatusUpdate(db, st)
			tt.expect(f, db)
			f.calls = probes(0, 1, 2)
			r, recorder := f.newReconciler()
			f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
			// The next pass, before the caches show the delete: nothing
			// again (seen in CI: two ReplicaBroken Warnings for one
			// restart).
			f.kubeactions, f.actions, f.events = nil, nil, nil
			f.sql.ResetCalls()
			f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
		})
	}
}

// Synchronous replication asked for: the serving primary's
// synchronous_standby_names is set over SQL, with no API write.
func TestReplicationSynchronous(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Synchronous: &dbv1alpha1.SynchronousReplication{Number: 1, DataDurability: dbv1alpha1.DataDurabilityRequired}}
	f.convergedReplicated(db)
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = append(probes(0, 1, 2), "set synchronous replicas of 192.0.2.10 to 1")
	f.run(ctx, ref(db), pollServers)
	// Set: the next pass leaves it.
	f.calls = probes(0, 1, 2)
	r, recorder := f.newReconciler()
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
}

// Synchronous replication the primary's server cannot do (MariaDB waits
// for one replica at most): the Replicating condition says why, with one
// Warning, and the replication is left as it is. The next pass asks again
// (the spec may have changed), and writes nothing.
func TestReplicationSynchronousUnsupported(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	f.sql.SynchronousLimit = 1
	db := newDatabase("orders", "postgresql", "16", 3)
	db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Synchronous: &dbv1alpha1.SynchronousReplication{Number: 2, DataDurability: dbv1alpha1.DataDurabilityRequired}}
	f.convergedReplicated(db)
	f.expectGet(secretsResource, "default", "orders-credentials")
	msg := "orders-0 is the primary; 2/2 replicas stream from it; spec.replication.synchronous is not applied: it waits for 1 replica at most, not 2"
	st := replicatedStatus(db, "Running", db.Status.Replication.DeepCopy(),
		"True", "AllReplicasReady", "3/3 replicas are ready",
		"False", "Converged", "the Database matches its spec",
		"False", "SynchronousUnsupported", msg)
	for k := range st.Conditions[:2] {
		// Unchanged: their times are kept.
		st.Conditions[k].LastTransitionTime = f.dbLister[0].Status.Conditions[k].LastTransitionTime
	}
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning SynchronousUnsupported " + msg}
	f.calls = append(probes(0, 1, 2), "set synchronous replicas of 192.0.2.10 to 2")
	f.run(ctx, ref(db), pollServers)
	// Said: the next pass asks again, and writes and tells nothing.
	f.dbLister[0].Status = *st.DeepCopy()
	f.kubeactions, f.actions, f.events = nil, nil, nil
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = append(probes(0, 1, 2), "set synchronous replicas of 192.0.2.10 to 2")
	r, recorder := f.newReconciler()
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
}

// Commits that have waited long for their acknowledgements (a MySQL
// primary's semi-synchronous replication, with too few replicas
// streaming, dataDurability Required): the Replicating condition says so
// in the server's words, with what holds them and what would let them go
// on. While a replica is not ready, the Ready condition names them too,
// with one Warning when a clone from the primary waits for them, as they
// then do not end by themselves. Said once: the next pass writes and tells
// nothing.
func TestReplicationStalledCommits(t *testing.T) {
	const required = " (dataDurability Required holds each commit until enough replicas have it; Preferred lets commits go on while too few replicas stream)"
	const stalledClone = "on orders-0, commits have waited 5 s or more for replicas to acknowledge them, and a clone from it waits for them to end" + required
	for _, tt := range []struct {
		name       string
		stalled    string
		cloneWaits bool
		// notReady: orders-2 waits in its init container.
		notReady bool
		// status is the status written, from the Replicating condition's
		// message; events the events told.
		status func(f *fixture, db *dbv1alpha1.Database, rs *dbv1alpha1.ReplicationStatus, replicating string) dbv1alpha1.DatabaseStatus
		events []string
	}{{
		name:    "every replica ready: the Replicating condition alone",
		stalled: "commits have waited 5 s or more for replicas to acknowledge them",
		status: func(f *fixture, db *dbv1alpha1.Database, rs *dbv1alpha1.ReplicationStatus, replicating string) dbv1alpha1.DatabaseStatus {
			st := replicatedStatus(db, "Running", rs,
				"True", "AllReplicasReady", "3/3 replicas are ready",
				"False", "Converged", "the Database matches its spec",
				"False", "ReplicasNotStreaming", replicating)
			for k := range st.Conditions[:2] {
				// Unchanged: their times are kept.
				st.Conditions[k].LastTransitionTime = f.dbLister[0].Status.Conditions[k].LastTransitionTime
			}
			return st
		},
	}, {
		name:       "a replica not ready, a clone waiting: Ready names them, with a Warning",
		stalled:    "commits have waited 5 s or more for replicas to acknowledge them, and a clone from it waits for them to end",
		cloneWaits: true,
		notReady:   true,
		status: func(f *fixture, db *dbv1alpha1.Database, rs *dbv1alpha1.ReplicationStatus, replicating string) dbv1alpha1.DatabaseStatus {
			st := replicatedStatus(db, "Degraded", rs,
				"False", "CommitsStalled", "2/3 replicas are ready: "+stalledClone,
				"True", "WaitingForReadiness", "every replica runs the current spec; waiting for 1/3 to pass the readiness probe",
				"False", "ReplicasNotStreaming", replicating)
			st.ReadyReplicas = 2
			return st
		},
		events: []string{"Warning CommitsStalled " + stalledClone},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Synchronous: &dbv1alpha1.SynchronousReplication{Number: 2, DataDurability: dbv1alpha1.DataDurabilityRequired}}
			f.convergedReplicated(db)
			primary := f.sql.Facts[podIP(0)]
			primary.Synchronous = 2
			primary.Standbys = primary.Standbys[:1]
			primary.Stalled, primary.CloneWaits = tt.stalled, tt.cloneWaits
			rs := db.Status.Replication.DeepCopy()
			rs.Instances[2] = dbv1alpha1.InstanceStatus{Name: "orders-2", Role: "replica"}
			if tt.notReady {
				f.podLister[2].Status.Conditions[0].Status = corev1.ConditionFalse
				f.statefulSetLister[0].Status.ReadyReplicas = 2
				delete(f.sql.Facts, podIP(2))
				rs.Instances[2].Role = ""
			}
			f.expectGet(secretsResource, "default", "orders-credentials")
			st := tt.status(f, db, rs, "orders-0 is the primary; 1/2 replicas stream from it; not streaming yet: orders-2; on orders-0, "+tt.stalled+required)
			f.expectStatusUpdate(db, st)
			f.events = tt.events
			f.calls = probes(0, 1, 2)
			f.run(ctx, ref(db), pollServers)
			// Said: the next pass writes and tells nothing.
			f.dbLister[0].Status = *st.DeepCopy()
			f.kubeactions, f.actions, f.events = nil, nil, nil
			f.expectGet(secretsResource, "default", "orders-credentials")
			f.calls = probes(0, 1, 2)
			r, recorder := f.newReconciler()
			f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
		})
	}
}

// A single server scaled up into a replicated Database: it runs the earlier
// revision of the pods, made without the replication init container (no
// replication access yet), and no replica can take over, so it restarts
// first, in place. A primary made to replicate never does, whatever one
// look at its replicas says. And a replicated Database scaled to 0 is no
// failover.
func TestReplicationScaling(t *testing.T) {
	for _, tt := range []struct {
		name string
		// restarted are the replicas at the new revision, which start
		// again and do not answer yet; the others answer, of the earlier
		// revision. No replica streams, and none is ready.
		restarted []int
		// single: the primary's pod was made for a single server.
		single, restarts bool
	}{{
		// orders-1 and orders-2 wait in their init containers to clone.
		name: "a lone primary of an earlier revision restarts in place", restarted: []int{1, 2}, single: true, restarts: true,
	}, {
		// The same look, but the primary was made to replicate: the
		// rollout restarted both replicas (or one, and the other's
		// server did not answer in time, on a busy machine). They come
		// back, stream, and the role moves to one before the primary
		// restarts. (Seen in CI with two MySQL servers: the primary
		// restarted in place 4 s after its replica, and was failed over
		// from 33 s later.)
		name: "a primary made to replicate, with no replica answering, waits for them", restarted: []int{1, 2},
	}, {
		// The rollout restarted orders-2, which starts again; orders-1,
		// of the earlier revision, answers but does not stream at this
		// look (a busy machine): the primary is not alone. It waits:
		// restarted in place now, its clients would wait, and a replica
		// that falls behind may take over in a failover.
		name: "a primary of an earlier revision whose replicas restart one after the other waits for them", restarted: []int{2},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			f.convergedReplicated(db)
			f.updatedTo("rev-2", tt.restarted...)
			rs := db.Status.Replication.DeepCopy()
			for _, i := range []int{1, 2} {
				f.podLister[i].Status.Conditions[0].Status = corev1.ConditionFalse
				rs.Instances[i] = dbv1alpha1.InstanceStatus{Name: fmt.Sprintf("orders-%d", i), Role: "replica"}
			}
			for _, i := range tt.restarted {
				delete(f.sql.Facts, podIP(i))
				rs.Instances[i].Role = ""
			}
			f.sql.Facts[podIP(0)].Standbys = nil
			if tt.single {
				f.podLister[0].Status.InitContainerStatuses = nil
			}

			f.expectGet(secretsResource, "default", "orders-credentials")
			if tt.restarts {
				f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
					metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-0-uid"))}}))
				f.events = []string{"Normal RollingOut Restarting orders-0 at the new revision of the pods"}
			}
			st := replicatedStatus(db, "Updating", rs,
				"False", "ReplicasNotReady", "1/3 replicas are ready",
				"True", "RollingUpdate", fmt.Sprintf("rolling out: %d/3 replicas updated, 1 ready", len(tt.restarted)),
				"False", "ReplicasNotStreaming", "orders-0 is the primary; 0/2 replicas stream from it; not streaming yet: orders-1, orders-2")
			st.ReadyReplicas = 1
			f.statefulSetLister[0].Status.ReadyReplicas = 1
			f.expectStatusUpdate(db, st)
			f.calls = probes(0, 1, 2)
			f.run(ctx, ref(db), pollServers)
		})
	}
	t.Run("scaled to 0: the primary stops and stays the primary", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 3)
		f.convergedReplicated(db)
		db.Spec.Replicas = ptr.To[int32](0)
		db.Generation = 2
		// The StatefulSet stops the pods from the highest ordinal: the
		// primary's pod is going, and no replica is promoted.
		f.podLister[0].DeletionTimestamp = &metav1.Time{Time: testNow.Add(30 * time.Second)}
		delete(f.sql.Facts, podIP(0))

		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
		// No server to keep up through a drain: the budgets go.
		for _, name := range []string{"orders", "orders-primary"} {
			f.expectDelete(budgetsResource, "default", name, types.UID(name+"-uid"))
		}
		f.expectGet(secretsResource, "default", "orders-credentials")
		rs := db.Status.Replication.DeepCopy()
		rs.Instances[0] = dbv1alpha1.InstanceStatus{Name: "orders-0"}
		rs.Instances[1].LagBytes, rs.Instances[2].LagBytes = nil, nil
		rs.Instances[1].Streaming, rs.Instances[2].Streaming = false, false
		st := replicatedStatus(db, "Updating", rs,
			"False", "Stopping", "stopping: 3 replicas still running",
			"True", "Stopping", "stopping: 3 replicas still running",
			"False", "Stopped", "replicas is 0: no server runs; orders-0 stays the primary")
		st.ReadyReplicas, st.Replicas = 3, 3
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		// No promote: the replicas are asked what they are, and that is all.
		f.calls = probes(1, 2)
		f.run(ctx, ref(db), synced)
	})
}

// The superuser credentials are read from the Secret once per version of
// it: a second pass over an unchanged replicated Database reads nothing,
// and one after the Secret changed reads it again.
func TestReplicationReadsCredentialsOncePerSecretVersion(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.convergedReplicated(db)
	r, recorder := f.newReconciler()
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = probes(0, 1, 2)
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)

	f.kubeactions = nil
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)

	rotated := f.secretLister[0].DeepCopy()
	rotated.ResourceVersion = "rotated"
	if err := f.caches.Secrets.Update(rotated); err != nil {
		t.Fatal(err)
	}
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
}

// A replicated Database's Secret that lacks the read-only Service's keys
// (made before its engine replicated, or adopted without them) gets the
// ones it lacks, with the password it holds, once; no other key changes.
func TestReplicationAddsReadOnlyKeysToTheSecret(t *testing.T) {
	for _, tt := range []struct {
		name    string
		lacking []string
		patch   string
		// readBefore: the credentials check read this version of the
		// Secret while the Database was not replicated yet.
		readBefore bool
	}{
		{"both lacking", []string{"ro-host", "ro-uri"},
			`{"data":{"ro-host":"b3JkZXJzLXJvLmRlZmF1bHQuc3Zj","ro-uri":"%s"},"metadata":{"resourceVersion":"7"}}`, false},
		{"ro-uri lacking", []string{"ro-uri"},
			`{"data":{"ro-uri":"%s"},"metadata":{"resourceVersion":"7"}}`, false},
		{"both lacking, the Secret read before the Database replicated", []string{"ro-host", "ro-uri"},
			`{"data":{"ro-host":"b3JkZXJzLXJvLmRlZmF1bHQuc3Zj","ro-uri":"%s"},"metadata":{"resourceVersion":"7"}}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 2)
			f.convergedReplicated(db)
			secret := f.secretLister[0]
			secret.ResourceVersion = "7"
			// The password the user rotated to: the URI carries it.
			secret.Data["password"] = []byte("rotated-by-user")
			for _, k := range tt.lacking {
				delete(secret.Data, k)
			}

			f.expectGet(secretsResource, "default", "orders-credentials")
			uri := base64.StdEncoding.EncodeToString([]byte("postgresql://postgres:rotated-by-user@orders-ro.default.svc:5432/orders"))
			f.kubeactions = append(f.kubeactions, actiontest.Patch(secretsResource, "default", "orders-credentials", types.MergePatchType,
				[]byte(fmt.Sprintf(tt.patch, uri))))
			f.events = []string{"Normal Updated Updated Secret orders-credentials: added " + strings.Join(tt.lacking, " and ") +
				", for the read-only Service of the replicas; no other key changed"}
			f.calls = probes(0, 1)
			r, recorder := f.newReconciler()
			if tt.readBefore {
				r.creds.Put(secret.UID, cachedCredentials{resourceVersion: "7",
					cred: ha.Credentials{User: "postgres", Password: "rotated-by-user"}, database: "orders"})
			}
			f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
		})
	}
}

// The quorum a spec asks for, as the number of replicas a commit waits for
// (ha.SynchronousReplicas decides; package pgsql writes it as
// synchronous_standby_names "ANY n (*)", or "" for 0).
func TestSynchronousReplicasOfTheSpec(t *testing.T) {
	sync := func(n int32, d dbv1alpha1.DataDurability) *dbv1alpha1.ReplicationSpec {
		return &dbv1alpha1.ReplicationSpec{Synchronous: &dbv1alpha1.SynchronousReplication{Number: n, DataDurability: d}}
	}
	for _, tt := range []struct {
		name      string
		spec      *dbv1alpha1.ReplicationSpec
		streaming int
		desired   int32
		want      int32
	}{
		{"no replication spec: asynchronous", nil, 2, 3, 0},
		{"no synchronous: asynchronous", &dbv1alpha1.ReplicationSpec{}, 2, 3, 0},
		{"a quorum of one", sync(1, dbv1alpha1.DataDurabilityRequired), 2, 3, 1},
		{"required: the quorum stays while too few stream, and writes wait", sync(2, dbv1alpha1.DataDurabilityRequired), 1, 3, 2},
		{"preferred: asynchronous while too few stream", sync(2, dbv1alpha1.DataDurabilityPreferred), 1, 3, 0},
		{"preferred: the quorum once enough stream", sync(2, dbv1alpha1.DataDurabilityPreferred), 2, 3, 2},
		{"never more than the replicas there are (scaled down)", sync(2, dbv1alpha1.DataDurabilityRequired), 1, 2, 1},
		{"one pod: no replica to wait for", sync(1, dbv1alpha1.DataDurabilityRequired), 0, 1, 0},
		{"durability unset is Required", sync(2, ""), 1, 3, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := synchronousReplicas(tt.spec, tt.streaming, tt.desired); got != tt.want {
				t.Errorf("synchronousReplicas = %d, want %d", got, tt.want)
			}
		})
	}
}

// A former primary whose data held transactions the primary did not have
// was cloned again by its init container (package mysql's script), which
// said so as it ended: the controller reports it once, in the status and in
// a Warning, and not again for the same pod. Reporting is the same for
// every engine.
func TestReplicationDivergenceIsReported(t *testing.T) {
	const said = "orders-1 held transactions orders-0 does not (3e11fa47-71ca-11e1-9e33-c80aa9429562:41-43); its binary logs are kept in its volume as dbc-diverged-*, and it is cloned again from orders-0"
	diverged := func(f *fixture) {
		f.podLister[1].Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "replication", Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", Message: "diverged: " + said + "\n"}}}}
	}
	reported := []dbv1alpha1.Divergence{{Instance: "orders-1", PodUID: "orders-1-uid", Time: metav1.NewTime(testNow), Message: said}}

	t.Run("seen: reported", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 3)
		f.convergedReplicated(db)
		diverged(f)
		f.expectGet(secretsResource, "default", "orders-credentials")
		st := db.Status.DeepCopy()
		st.Replication.Divergences = reported
		f.expectStatusUpdate(db, *st)
		f.events = []string{"Warning Diverged " + said}
		f.calls = probes(0, 1, 2)
		f.run(ctx, ref(db), pollServers)
	})
	t.Run("reported already: nothing", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 3)
		f.convergedReplicated(db)
		diverged(f)
		db.Status.Replication.Divergences = reported
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.calls = probes(0, 1, 2)
		f.run(ctx, ref(db), pollServers)
	})
}

// onNodes puts the fixture's pods of db on nodes node-0, node-1, ..., and
// seeds those nodes, cordoned where asked.
func (f *fixture) onNodes(cordoned ...int) {
	for k, pod := range f.podLister {
		pod.Spec.NodeName = fmt.Sprintf("node-%d", k)
		f.seed(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName, UID: types.UID(pod.Spec.NodeName + "-uid")},
			Spec: corev1.NodeSpec{Unschedulable: slices.Contains(cordoned, k)}})
	}
}

// The primary's node is cordoned, for a drain: the controller switches
// over at once to the replica on a node that is not cordoned with the most
// WAL received (orders-1 here: orders-2's node is cordoned too), as for a
// switchover asked for, and the budgets stay. With every node cordoned,
// no switchover can move the primary off first: the primary's budget lets
// it go instead (it hands over as its pod is deleted). A replica's node
// cordoned changes nothing. (Three pods, orders-0 the primary.)
func TestReplicationCordonedNodes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		cordoned []int
		expect   func(f *fixture, db *dbv1alpha1.Database)
	}{
		{"the primary's node: a switchover to a replica on a node that is not cordoned", []int{0, 2}, func(f *fixture, db *dbv1alpha1.Database) {
			f.sql.Facts[podIP(2)].Received = 100
			f.expectGet(secretsResource, "default", "orders-credentials")
			target := f.expectTargetRecorded(db, "orders-1")
			f.expectPodRole(db, 0, "")
			f.expectDelete(podsResource, "default", "orders-0", "orders-0-uid")
			rs := target.DeepCopy()
			rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", Role: "replica", Streaming: true},
				{Name: "orders-2", Role: "replica", Streaming: true}}
			msg := "making orders-1 the primary: waiting for the former primary orders-0 to shut down cleanly, sending its last WAL to the replicas"
			f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
			f.events = []string{"Normal SwitchingOver the node of the primary orders-0 is cordoned; switching over to orders-1, on a node that is not, before it is drained",
				"Normal Fenced orders-0 still accepts writes; it is fenced before orders-1 is promoted"}
			f.calls = append(probes(0, 1, 2), "fence 192.0.2.10")
		}},
		{"every node: the primary's budget lets it go", []int{0, 1, 2}, func(f *fixture, db *dbv1alpha1.Database) {
			f.expectApply(budgetsResource, "default", "orders-primary", plan.Compute(db, plan.Observed{ToolsImage: actiontest.ToolsImage, Stranded: true}).DisruptionBudgets[1])
			f.expectGet(secretsResource, "default", "orders-credentials")
			f.events = []string{"Normal Updated Updated PodDisruptionBudget orders-primary to match the Database spec"}
			f.calls = probes(0, 1, 2)
		}},
		{"a replica's node: nothing", []int{1}, func(f *fixture, db *dbv1alpha1.Database) {
			f.expectGet(secretsResource, "default", "orders-credentials")
			f.calls = probes(0, 1, 2)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			f.convergedReplicated(db)
			f.onNodes(tt.cordoned...)
			tt.expect(f, db)
			f.run(ctx, ref(db), pollServers)
		})
	}
}

// A replicated Database gets its two PodDisruptionBudgets, made once (and
// deleted when it is scaled below two: TestReplicationScaling); a budget
// of the same name that another owner controls is left alone.
func TestDisruptionBudgets(t *testing.T) {
	for _, tt := range []struct {
		name     string
		replicas int32
		seed     func(f *fixture, db *dbv1alpha1.Database)
		outcome  outcome
	}{
		{"made for a replicated Database", 3, func(f *fixture, db *dbv1alpha1.Database) {
			f.budgetLister = nil
			f.kubeobjects = slices.DeleteFunc(f.kubeobjects, func(o runtime.Object) bool { _, ok := o.(*policyv1.PodDisruptionBudget); return ok })
			for _, b := range desired(f.t, db).DisruptionBudgets {
				f.kubeactions = append(f.kubeactions, actiontest.Create(budgetsResource, actiontest.Object[policyv1.PodDisruptionBudget](f.t, b)))
			}
			f.events = []string{"Normal Created Created PodDisruptionBudget orders, PodDisruptionBudget orders-primary"}
		}, pollServers},
		{"kept while they match", 3, func(*fixture, *dbv1alpha1.Database) {}, pollServers},
		{"another owner's budget of the name is not deleted", 1, func(f *fixture, db *dbv1alpha1.Database) {
			f.seed(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default", UID: "theirs"}})
		}, synced},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", tt.replicas)
			if tt.replicas > 1 {
				f.convergedReplicated(db)
			} else {
				f.converged(db)
			}
			tt.seed(f, db)
			if tt.replicas > 1 {
				f.expectGet(secretsResource, "default", "orders-credentials")
				f.calls = probes(0, 1, 2)
			}
			f.run(ctx, ref(db), tt.outcome)
		})
	}
}

// A replica whose server failed to start reseedAfterCrashes times in a row,
// while the primary serves the same revision of the pods, is seeded again:
// its data volume claim, then its pod, deleted on their UIDs, with a
// Warning that names the claim, its volume and the server's last words.
// Fewer crashes, a server killed for want of memory, a replica of another
// revision than the primary, or a primary that does not serve: left alone.
func TestReplicationReseedsAReplicaWhoseDataCannotStart(t *testing.T) {
	const fatal = `postgres: could not find the database system
Expected to find it in the directory "/var/lib/postgresql/data/pgdata",
but could not open file "/var/lib/postgresql/data/pgdata/global/pg_control": No such file or directory`
	for _, tt := range []struct {
		name    string
		change  func(f *fixture, db *dbv1alpha1.Database)
		reseeds bool
	}{
		{"crashed 3 times: seeded again", func(*fixture, *dbv1alpha1.Database) {}, true},
		{"its claim deleted already (a pass that could not delete the pod): only the pod, with no second Warning", func(f *fixture, db *dbv1alpha1.Database) {
			f.claimLister[0].DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
		}, false},
		{"crashed 2 times: left alone", func(f *fixture, db *dbv1alpha1.Database) {
			f.podLister[2].Status.ContainerStatuses[0].RestartCount = reseedAfterCrashes - 1
		}, false},
		{"killed for want of memory: left alone", func(f *fixture, db *dbv1alpha1.Database) {
			last := f.podLister[2].Status.ContainerStatuses[0].LastTerminationState.Terminated
			last.Reason, last.ExitCode = "OOMKilled", 137
		}, false},
		{"a revision the primary does not run: left alone", func(f *fixture, db *dbv1alpha1.Database) {
			f.podLister[2].Labels[revisionLabel] = "rev-2"
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			f.convergedReplicated(db)
			pod := f.podLister[2]
			pod.Status.Conditions[0].Status = corev1.ConditionFalse
			started := testNow.Add(-30 * time.Second)
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgresql", RestartCount: reseedAfterCrashes, Started: ptr.To(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: fatal,
					StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(started.Add(time.Second))}}}}
			delete(f.sql.Facts, podIP(2))
			f.sql.Facts[podIP(0)].Standbys = f.sql.Facts[podIP(0)].Standbys[:1]
			data := claim(db, 2, "1Gi")
			data.UID, data.Spec.VolumeName = "data-orders-2-uid", "pv-17"
			f.seed(data)
			tt.change(f, db)

			f.expectGet(secretsResource, "default", "orders-credentials")
			rs := db.Status.Replication.DeepCopy()
			rs.Instances[2] = dbv1alpha1.InstanceStatus{Name: "orders-2"}
			crashing := "container postgresql of pod orders-2 keeps crashing; it last ended with " + status.DescribeExit(pod.Status.ContainerStatuses[0].LastTerminationState.Terminated)
			st := replicatedStatus(db, "Degraded", rs,
				"False", "CrashLooping", "2/3 replicas are ready: "+crashing,
				"True", "WaitingForReadiness", "every replica runs the current spec; waiting for 1/3 to pass the readiness probe",
				"False", "ReplicasNotStreaming", "orders-0 is the primary; 1/2 replicas stream from it; not streaming yet: orders-2")
			st.ReadyReplicas = 2
			f.statefulSetLister[0].Status.ReadyReplicas = 2
			f.expectStatusUpdate(db, st)
			if f.claimLister[0].DeletionTimestamp != nil {
				f.expectDelete(podsResource, "default", "orders-2", "orders-2-uid")
			}
			if tt.reseeds {
				f.expectDelete(claimsResource, "default", "data-orders-2", "data-orders-2-uid")
				f.expectDelete(podsResource, "default", "orders-2", "orders-2-uid")
				f.events = []string{"Warning Reseeding Seeding orders-2 again from orders-0: its server failed to start 3 times in a row, while orders-0 runs the same pods, and last ended with Error (exit code 1): postgres: could not find the database system. Its data volume claim data-orders-2 (volume pv-17) is deleted, with its data unless the volume's reclaim policy keeps it"}
			}
			f.events = append(f.events, "Warning CrashLooping "+crashing)
			f.calls = probes(0, 1, 2)
			r, recorder := f.newReconciler()
			f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
			if !tt.reseeds {
				return
			}
			// The next pass, before the caches show the deletes: nothing
			// again (the written status is the same, no second Warning).
			f.kubeactions, f.actions, f.events = nil, nil, nil
			f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
		})
	}
}

// Servers that their kubelets report ready but that do not answer the
// controller (out of the cluster, where the pods' addresses are not routed
// and no tunnel goes through the API server) are a cause of their own,
// with the address and the error: of the first primary chosen, and of a
// primary. The Database is not Running.
func TestReplicationServersUnreachable(t *testing.T) {
	t.Run("the first primary", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 2)
		f.newReplicated(db)
		f.sql.Facts = map[string]*ha.Facts{}

		f.expectGet(secretsResource, "default", "orders-credentials")
		// No server answers: orders-0 is taken to initialise the data, as
		// a first primary's does, and named unreachable.
		rs := &dbv1alpha1.ReplicationStatus{TargetPrimary: "orders-0"}
		msg := "making orders-0 the first primary: the controller cannot reach orders-0, which its kubelet reports ready: " +
			"dial tcp 192.0.2.10: connect: connection refused"
		f.expectStatusUpdate(db, replicatedStatus(db, "Provisioning", rs,
			"False", "ServersUnreachable", msg, "True", "ServersUnreachable", msg, "False", "ServersUnreachable", msg))
		// Then it waits for the server to answer, and says why it does not.
		waiting := rs.DeepCopy()
		waiting.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1"}}
		msg = "making orders-0 the first primary: waiting for the new primary orders-0 to answer: the controller cannot reach orders-0, " +
			"which its kubelet reports ready: dial tcp 192.0.2.10: connect: connection refused"
		f.expectStatusUpdate(db, replicatedStatus(db, "Updating", waiting,
			"False", "ServersUnreachable", msg, "True", "ServersUnreachable", msg, "False", "ServersUnreachable", msg))
		f.events = []string{"Normal PrimaryChosen first primary: orders-0 initialises the data"}
		f.calls = probes(0, 1)
		f.run(ctx, ref(db), pollServers)
	})
	t.Run("the primary", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 2)
		f.convergedReplicated(db)
		delete(f.sql.Facts, podIP(0))

		f.expectGet(secretsResource, "default", "orders-credentials")
		now := metav1.NewTime(testNow)
		rs := &dbv1alpha1.ReplicationStatus{Primary: "orders-0", PrimaryLostSince: &now, Instances: []dbv1alpha1.InstanceStatus{
			{Name: "orders-0"}, {Name: "orders-1", Role: "replica"}}}
		msg := "the controller cannot reach the primary orders-0, which its kubelet reports ready: dial tcp 192.0.2.10: connect: connection refused; " +
			"primary orders-0 does not serve; failing over if it does not serve again within 30s"
		// Its pod is read live: it is not being deleted.
		f.expectGet(podsResource, "default", "orders-0")
		f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "ServersUnreachable", msg, "True", "ServersUnreachable", msg, "False", "ServersUnreachable", msg))
		f.calls = probes(0, 1)
		f.run(ctx, ref(db), pollServers)
	})
}

// updatedTo makes revision the StatefulSet's update revision, with the
// pods of the ordinals updated at it and the others at the earlier one.
func (f *fixture) updatedTo(revision string, updated ...int) {
	f.statefulSetLister[0].Status.UpdateRevision = revision
	f.statefulSetLister[0].Status.UpdatedReplicas = int32(len(updated))
	for _, k := range updated {
		f.podLister[k].Labels["controller-revision-hash"] = revision
	}
}
