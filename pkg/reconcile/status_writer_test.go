package reconcile

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
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

// While a Database is Provisioning, its pod appearing changes only the
// number of pods in its status: no write for that alone. The write to
// Running, or of any other change, carries the count.
func TestProvisioningPodCountAloneIsNotWritten(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Status = actiontest.Provisioning(db)
	seed := func(f *fixture, db *dbv1alpha1.Database, sts *appsv1.StatefulSet) {
		f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), claim(db, 0, "1Gi"))
	}

	t.Run("only the count changed", func(t *testing.T) {
		f := newFixture(t)
		seed(f, db.DeepCopy(), notReadyStatefulSet(t, db)) // status.replicas 1, ready 0
		f.run(ctx, ref(db), synced)
	})
	t.Run("the pod became ready", func(t *testing.T) {
		f := newFixture(t)
		seed(f, db.DeepCopy(), rolledOut(expectedStatefulSet(t, db), 1))
		f.expectStatusUpdate(db, wantStatus(db, "Running", 1, 1, "16", "True", "AllReplicasReady", "1/1 replicas are ready",
			"False", "Converged", "the Database matches its spec"))
		f.events = []string{"Normal Running postgresql 16 is running: 1/1 replicas are ready"}
		f.run(ctx, ref(db), synced)
	})
}

// A schedule the cron parser refuses is named in the Backup condition and
// one Warning event; the Database runs on.
func TestInvalidScheduleIsReported(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Spec.Backup = &dbv1alpha1.BackupSpec{Schedule: "61 * * * *"}
	f.converged(db)
	f.seed(backupClaimOf(t, db))
	st := db.Status.DeepCopy()
	msg := `spec.backup.schedule "61 * * * *" is not a valid cron expression: end of range (61) above maximum (59): 61; no backup is scheduled until it is fixed`
	st.Conditions = append(st.Conditions, metav1.Condition{Type: "Backup", Status: "False", Reason: "ScheduleInvalid", Message: msg,
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)})
	f.expectStatusUpdate(db, *st)
	f.events = []string{"Warning ScheduleInvalid " + msg}
	f.run(ctx, ref(db), synced)
}

func backupClaimOf(t *testing.T, db *dbv1alpha1.Database) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{}
	if err := builder.Convert(builder.NewBackupClaim(db, db.Spec.Storage.Size), c); err != nil {
		t.Fatal(err)
	}
	return c
}
