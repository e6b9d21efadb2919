package reconcile

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
)

// upgradeTo16To17 is a single PostgreSQL 16 server that converged, whose
// spec.version is now 17 (generation 2), at phase of its major upgrade
// (none: not begun), and its StatefulSet.
func upgrade16To17(t *testing.T, f *fixture, phase dbv1alpha1.MajorUpgradePhase) (*dbv1alpha1.Database, *appsv1.StatefulSet) {
	db := newDatabase("orders", "postgresql", "16", 1)
	sts, headless, svc, secret := actiontest.Converged(t, db)
	db.Spec.Version = "17"
	db.Generation = 2
	if phase != "" {
		start := metav1.NewTime(testNow.Add(-10 * time.Minute))
		db.Status.MajorUpgrade = &dbv1alpha1.MajorUpgradeStatus{From: "16", To: "17", FromImage: "postgres:16", Phase: phase,
			Backup: "orders-before-17-2", StartTime: &start}
	}
	f.seed(db, headless, svc, secret)
	return db, sts
}

// heldAt16 is db's StatefulSet as a major upgrade holds it: PostgreSQL
// 16's, with replicas.
func heldAt16(t *testing.T, db *dbv1alpha1.Database, replicas int32) *appsv1.StatefulSet {
	held := db.DeepCopy()
	held.Spec.Version, held.Spec.Replicas = "16", ptr.To(replicas)
	return expectedStatefulSet(t, held)
}

// upgradeStatus is the status of db during its major upgrade u, with the
// Ready condition ready (Progressing: MajorUpgrade, msg).
func upgradeStatus(db *dbv1alpha1.Database, replicas, readyReplicas int32, currentVersion string, ready metav1.Condition, msg string, u *dbv1alpha1.MajorUpgradeStatus) dbv1alpha1.DatabaseStatus {
	st := wantStatus(db, "Updating", replicas, readyReplicas, currentVersion, ready.Status, ready.Reason, ready.Message, "True", "MajorUpgrade", msg)
	st.MajorUpgrade = u
	return st
}

func TestMajorUpgrade(t *testing.T) {
	serving := metav1.Condition{Status: "True", Reason: "AllReplicasReady", Message: "1/1 replicas are ready"}
	ago := func(d time.Duration) *metav1.Time { t := metav1.NewTime(testNow.Add(-d)); return &t }

	t.Run("a higher major begins with a backup, and the server serves on", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db, sts := upgrade16To17(t, f, "")
		f.seed(sts)
		f.actions = append(f.actions, core.NewCreateAction(backupsResource, "default", backup.NewMajorUpgradeBackup(db, "orders-before-17-2")))
		now := metav1.NewTime(testNow)
		u := &dbv1alpha1.MajorUpgradeStatus{From: "16", To: "17", FromImage: "postgres:16", Phase: "BackingUp", Backup: "orders-before-17-2", StartTime: &now}
		st := upgradeStatus(db, 1, 1, "16", serving,
			"upgrading the data from 16 to 17 in place: taking DatabaseBackup orders-before-17-2 first; 16 serves until it completed", u)
		keepTransitionTime(&st, "Ready") // True before and after
		f.expectStatusUpdate(db, st)
		f.events = []string{
			"Normal MajorUpgrade Upgrading the data from postgresql 16 to 17 in place: first a backup, DatabaseBackup orders-before-17-2",
			"Normal Created Created DatabaseBackup orders-before-17-2",
		}
		f.run(ctx, ref(db), synced)
	})

	t.Run("the backup completed: the server stops", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db, sts := upgrade16To17(t, f, "BackingUp")
		b := backup.NewMajorUpgradeBackup(db, "orders-before-17-2")
		b.Status.Phase = dbv1alpha1.BackupCompleted
		f.seed(sts, b)
		f.expectApply(statefulSetsResource, "default", "orders", desired(t, heldAt16Database(db, 0)).StatefulSet)
		u := db.Status.MajorUpgrade.DeepCopy()
		u.Phase = "Upgrading"
		msg := "upgrading the data from 16 to 17 in place: DatabaseBackup orders-before-17-2 completed; stopping the server"
		f.expectStatusUpdate(db, upgradeStatus(db, 1, 1, "16", metav1.Condition{Status: "False", Reason: "MajorUpgrade", Message: msg}, msg, u))
		f.events = []string{"Normal MajorUpgrade DatabaseBackup orders-before-17-2 completed: stopping postgresql 16 to upgrade its data to 17",
			"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("stopping: no Job while a pod of the server is left", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db, _ := upgrade16To17(t, f, "Upgrading")
		sts := heldAt16(t, db, 0)
		sts.Generation = 1
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, CurrentRevision: "rev-1", UpdateRevision: "rev-1"}
		f.seed(sts, startingPod(db))
		msg := "upgrading the data from 16 to 17 in place: DatabaseBackup orders-before-17-2 completed; stopping the server"
		f.expectStatusUpdate(db, upgradeStatus(db, 1, 0, "16", metav1.Condition{Status: "False", Reason: "MajorUpgrade", Message: msg}, msg, db.Status.MajorUpgrade))
		f.run(ctx, ref(db), recheckDue) // the pod is looked at again when it may be stuck; its deletion queues the Database
	})

	t.Run("stopped: the Job upgrades the data of the first claim", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db, _ := upgrade16To17(t, f, "Upgrading")
		sts := actiontest.RolledOut(heldAt16(t, db, 0), 0)
		f.seed(sts)
		e := profile(t, db)
		f.expectCreate(actiontest.Jobs, jobObject(builder.NewMajorUpgradeJob(db, e, "postgres:16", "postgres:17", "17", "data-orders-0")))
		u := db.Status.MajorUpgrade.DeepCopy()
		u.StoppedTime = ago(0)
		msg := "upgrading the data from 16 to 17 in place: the server is stopped while the upgrade Job runs"
		f.expectStatusUpdate(db, upgradeStatus(db, 0, 0, "16", metav1.Condition{Status: "False", Reason: "MajorUpgrade", Message: msg}, msg, u))
		f.events = []string{
			"Normal MajorUpgrade Stopped postgresql 16: Job orders-upgrade-17 upgrades the data of claim data-orders-0 to 17",
			"Normal Created Created Job orders-upgrade-17",
		}
		f.run(ctx, ref(db), synced)
	})

	upgradeJob := func(t *testing.T, db *dbv1alpha1.Database, c batchv1.JobConditionType) *batchv1.Job {
		j := jobObject(builder.NewMajorUpgradeJob(db, profile(t, db), "postgres:16", "postgres:17", "17", "data-orders-0"))
		j.UID = "job-uid"
		j.Status.Conditions = []batchv1.JobCondition{{Type: c, Status: corev1.ConditionTrue}}
		return j
	}
	stopped := func(t *testing.T, f *fixture) *dbv1alpha1.Database {
		db, _ := upgrade16To17(t, f, "Upgrading")
		db.Status.MajorUpgrade.StoppedTime = ago(time.Minute)
		f.seed(actiontest.RolledOut(heldAt16(t, db, 0), 0))
		return db
	}

	t.Run("the Job failed: 16 serves again, and the status says why in its words", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := stopped(t, f)
		said := "pg_upgrade from PostgreSQL 16 to 17 failed, and PostgreSQL 16's data is as it was: Checking for reg* data types in user tables"
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-upgrade-17-x", Namespace: "default",
			Labels: map[string]string{"app.kubernetes.io/instance": "orders", builder.LabelJob: builder.JobMajorUpgrade}},
			Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "upgrade",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: said}}}}}}
		f.seed(upgradeJob(t, db, batchv1.JobFailed), pod)
		f.expectApply(statefulSetsResource, "default", "orders", desired(t, heldAt16Database(db, 1)).StatefulSet)
		msg := "the upgrade from 16 to 17 failed, and 16 serves its data as it was. Job orders-upgrade-17 said: " + said +
			". To try again once the cause is mended, set spec.version back to 16, then to 17"
		u := db.Status.MajorUpgrade.DeepCopy()
		u.Phase, u.Message = "Failed", msg
		st := wantStatus(db, "Failed", 0, 0, "16", "False", "MajorUpgradeFailed", msg, "False", "MajorUpgradeFailed", msg)
		st.MajorUpgrade = u
		keepTransitionTime(&st, "Progressing") // False before and after
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec", "Warning MajorUpgradeFailed " + msg}
		f.run(ctx, ref(db), needsPerson)
	})

	t.Run("the Job succeeded: 17 starts on the upgraded data", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := stopped(t, f)
		f.seed(upgradeJob(t, db, batchv1.JobComplete))
		upgraded := db.DeepCopy()
		upgraded.Status.CurrentVersion, upgraded.Status.MajorUpgrade = "17", nil
		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, upgraded))
		u := db.Status.MajorUpgrade.DeepCopy()
		u.Phase, u.UpgradedTime = "Analyzing", ago(0)
		msg := "upgrading the data from 16 to 17 in place: the data is upgraded; starting 17, then the Job that runs after it"
		f.expectStatusUpdate(db, upgradeStatus(db, 0, 0, "17", metav1.Condition{Status: "False", Reason: "ReplicasNotReady", Message: "0/1 replicas are ready"}, msg, u))
		f.events = []string{"Normal MajorUpgrade Upgraded the data from 16 to 17 in 1m0s with the server stopped: starting postgresql 17",
			"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.run(ctx, ref(db), synced)
	})

	analyzing := func(t *testing.T, f *fixture) *dbv1alpha1.Database {
		db, _ := upgrade16To17(t, f, "Analyzing")
		db.Status.MajorUpgrade.StoppedTime, db.Status.MajorUpgrade.UpgradedTime = ago(5*time.Minute), ago(4*time.Minute)
		db.Status.CurrentVersion = "17"
		f.seed(actiontest.RolledOut(expectedStatefulSet(t, db), 1), upgradeJob(t, db, batchv1.JobComplete))
		return db
	}

	t.Run("17 serves: the Job after the upgrade runs", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := analyzing(t, f)
		f.expectCreate(actiontest.Jobs, jobObject(builder.NewAfterMajorUpgradeJob(db, profile(t, db), "postgres:17", "17")))
		msg := "upgrading the data from 16 to 17 in place: the data is upgraded; starting 17, then the Job that runs after it"
		st := upgradeStatus(db, 1, 1, "17", serving, msg, db.Status.MajorUpgrade)
		keepTransitionTime(&st, "Ready")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Created Created Job orders-after-upgrade-17"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("the Job after it completed: the upgrade ends, its Jobs go, the backup stays", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := analyzing(t, f)
		after := jobObject(builder.NewAfterMajorUpgradeJob(db, profile(t, db), "postgres:17", "17"))
		after.UID = "after-uid"
		after.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		f.seed(after)
		f.expectJobDeleted("orders-upgrade-17", "job-uid")
		f.expectJobDeleted("orders-after-upgrade-17", "after-uid")
		st := wantStatus(db, "Running", 1, 1, "17", "True", "AllReplicasReady", "1/1 replicas are ready", "False", "Converged", "the Database matches its spec")
		keepTransitionTime(&st, "Ready")
		keepTransitionTime(&st, "Progressing") // as seeded: False
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal MajorUpgrade postgresql 17 serves the upgraded data, and Job orders-after-upgrade-17 ran after it. The upgrade took 10m0s, 1m0s of it with the data being upgraded; DatabaseBackup orders-before-17-2 of 16 is kept"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("the backup failed: nothing changes, and the status says so", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db, sts := upgrade16To17(t, f, "BackingUp")
		b := backup.NewMajorUpgradeBackup(db, "orders-before-17-2")
		b.Status.Phase, b.Status.Message = dbv1alpha1.BackupFailed, "pg_dump: error: connection refused"
		f.seed(sts, b)
		msg := "the backup taken before the upgrade, DatabaseBackup orders-before-17-2, failed (pg_dump: error: connection refused), so nothing was changed and 16 serves as before. " +
			"Delete it to take it again (kubectl delete dbbackup -n default orders-before-17-2), or set spec.version back to 16"
		u := db.Status.MajorUpgrade.DeepCopy()
		u.Phase, u.Message = "Failed", msg
		st := wantStatus(db, "Failed", 1, 1, "16", "False", "MajorUpgradeFailed", msg, "False", "MajorUpgradeFailed", msg)
		st.MajorUpgrade = u
		keepTransitionTime(&st, "Progressing")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Warning MajorUpgradeFailed " + msg}
		f.run(ctx, ref(db), needsPerson)
	})

	t.Run("the failed backup deleted: it is taken again", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db, sts := upgrade16To17(t, f, "Failed")
		db.Status.MajorUpgrade.Message = "the backup ... failed"
		f.seed(sts)
		f.actions = append(f.actions, core.NewCreateAction(backupsResource, "default", backup.NewMajorUpgradeBackup(db, "orders-before-17-2")))
		u := db.Status.MajorUpgrade.DeepCopy()
		u.Phase, u.Message = "BackingUp", ""
		st := upgradeStatus(db, 1, 1, "16", serving,
			"upgrading the data from 16 to 17 in place: taking DatabaseBackup orders-before-17-2 first; 16 serves until it completed", u)
		keepTransitionTime(&st, "Ready")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Created Created DatabaseBackup orders-before-17-2"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("spec.version set back after the upgrade failed: its Job goes, and the upgrade ends", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db, sts := upgrade16To17(t, f, "Failed")
		db.Status.MajorUpgrade.StoppedTime = ago(time.Minute)
		f.seed(sts, upgradeJob(t, db, batchv1.JobFailed))
		db.Spec.Version = "16"
		db.Generation = 3
		f.expectJobDeleted("orders-upgrade-17", "job-uid")
		st := wantStatus(db, "Running", 1, 1, "16", "True", "AllReplicasReady", "1/1 replicas are ready", "False", "Converged", "the Database matches its spec")
		keepTransitionTime(&st, "Ready")
		keepTransitionTime(&st, "Progressing")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal MajorUpgrade Upgrade from 16 to 17 abandoned: spec.version is 16; the data is 16's as it was, and DatabaseBackup orders-before-17-2 is kept"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("spec.version set back before the data was touched: the upgrade ends", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db, sts := upgrade16To17(t, f, "BackingUp")
		db.Spec.Version = "16"
		db.Generation = 3
		f.seed(sts)
		st := wantStatus(db, "Running", 1, 1, "16", "True", "AllReplicasReady", "1/1 replicas are ready", "False", "Converged", "the Database matches its spec")
		keepTransitionTime(&st, "Ready")
		keepTransitionTime(&st, "Progressing")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal MajorUpgrade Upgrade from 16 to 17 abandoned: spec.version is 16; the data is 16's as it was, and DatabaseBackup orders-before-17-2 is kept"}
		f.run(ctx, ref(db), synced)
	})
}

// heldAt16Database is db as the plan runs it while an upgrade holds it at
// 16, with replicas.
func heldAt16Database(db *dbv1alpha1.Database, replicas int32) *dbv1alpha1.Database {
	held := db.DeepCopy()
	held.Spec.Version, held.Spec.Image, held.Spec.Replicas = "16", "postgres:16", ptr.To(replicas)
	return held
}

// expectJobDeleted expects the delete of the Job name, of uid, with its pods.
func (f *fixture) expectJobDeleted(name string, uid types.UID) {
	background := metav1.DeletePropagationBackground
	f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(actiontest.Jobs, "default", name,
		metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}}))
}

// A replicated Database whose servers an upgrade stopped: the replication
// step asks no server and fails nothing over, the primary stays the
// primary, and the Replicating condition says why no server replicates.
func TestMajorUpgradeOfAReplicatedDatabaseStopsReplication(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.convergedReplicated(db)
	f.podLister, f.kubeobjects = nil, slices.DeleteFunc(f.kubeobjects, func(o runtime.Object) bool { _, pod := o.(*corev1.Pod); return pod })
	db.Spec.Version = "17"
	db.Generation = 2
	start, stopped := metav1.NewTime(testNow.Add(-10*time.Minute)), metav1.NewTime(testNow.Add(-time.Minute))
	db.Status.MajorUpgrade = &dbv1alpha1.MajorUpgradeStatus{From: "16", To: "17", FromImage: "postgres:16", Phase: "Upgrading",
		Backup: "orders-before-17-2", StartTime: &start, StoppedTime: &stopped}
	held := heldAt16Database(db, 0)
	sts := actiontest.RolledOut(expectedStatefulSet(t, held), 0)
	f.statefulSetLister = []*appsv1.StatefulSet{sts}
	f.kubeobjects = append(slices.DeleteFunc(f.kubeobjects, func(o runtime.Object) bool { _, ok := o.(*appsv1.StatefulSet); return ok }), sts)
	f.expectCreate(actiontest.Jobs, jobObject(builder.NewMajorUpgradeJob(db, profile(t, db), "postgres:16", "postgres:17", "17", "data-orders-0")))
	msg := "upgrading the data from 16 to 17 in place: the server is stopped while the upgrade Job runs"
	st := upgradeStatus(db, 0, 0, "16", metav1.Condition{Status: "False", Reason: "MajorUpgrade", Message: msg}, msg, db.Status.MajorUpgrade)
	st.Replication = db.Status.Replication
	st.Conditions = append(st.Conditions, metav1.Condition{Type: "Replicating", Status: "False", Reason: "MajorUpgrade",
		Message: "no server runs while the data of the primary, orders-0, is upgraded; it stays the primary", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(testNow)})
	f.expectStatusUpdate(db, st)
	f.events = []string{
		"Normal MajorUpgrade Stopped postgresql 16: Job orders-upgrade-17 upgrades the data of claim data-orders-0 to 17",
		"Normal Created Created Job orders-upgrade-17",
	}
	f.calls = nil // no server is asked anything
	f.run(ctx, ref(db), synced)
}
