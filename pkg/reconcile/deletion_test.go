package reconcile

import (
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/fake"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// A Database under Retain needs the controller at its deletion, to keep
// its Secret: the finalizer is its first write, before any child.
func TestNewDatabaseGetsItsFinalizerFirst(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Finalizers = nil
	f.seed(db)
	f.expectFinalizers(db, []string{dbv1alpha1.FinalizerDatabase})
	f.expectNewDatabase(db)
	f.run(ctx, ref(db), synced)
}

// Under Delete with no final backup, nothing waits at deletion: no
// finalizer, and one left from an earlier Retain is removed.
func TestDeletePolicyNeedsNoFinalizer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
	f.converged(db)
	f.expectFinalizers(db, []string{})
	f.run(ctx, ref(db), synced)

	t.Run("steady", func(t *testing.T) {
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
		db.Finalizers = nil
		f.converged(db)
		f.run(ctx, ref(db), synced)
	})
}

// Deleting a Database under Retain keeps its credentials Secret with the
// volumes: the owner reference goes, the labels stay, then the finalizer.
func TestDeleteUnderRetainKeepsTheSecret(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	f.converged(db)
	f.expectSecretReleased(db)
	f.expectFinalizers(db, []string{})
	f.events = []string{"Normal CredentialsRetained Kept Secret orders-credentials with the volumes (deletionPolicy Retain)"}
	f.run(ctx, ref(db), synced)
}

func withBackup(db *dbv1alpha1.Database) *dbv1alpha1.Database {
	db.Spec.Backup = &dbv1alpha1.BackupSpec{Retention: ptr.To[int32](7), FinalBackup: ptr.To(true)}
	return db
}

func finalBackup(db *dbv1alpha1.Database, phase dbv1alpha1.BackupPhase, message string) *dbv1alpha1.DatabaseBackup {
	b := backup.NewFinalBackup(db)
	b.TypeMeta = metav1.TypeMeta{APIVersion: "dbcontroller.io/v1alpha1", Kind: "DatabaseBackup"}
	b.Status.Phase, b.Status.Message = phase, message
	return b
}

// terminatingStatus is the status of a Database held for its final backup.
func terminatingStatus(db *dbv1alpha1.Database, reason, msg string) dbv1alpha1.DatabaseStatus {
	st := wantStatus(db, "Terminating", 1, 1, "16", "False", reason, msg, "True", reason, msg)
	st.Conditions = append(st.Conditions, metav1.Condition{Type: "Backup", Status: "True", Reason: "BackupsReady",
		Message:            "no schedule: backups are taken on demand (create a DatabaseBackup); a final backup is taken before the Database is deleted",
		ObservedGeneration: db.Generation, LastTransitionTime: metav1.NewTime(testNow)})
	return st
}

// The final backup: taken when the Database is deleted; the Database is
// kept, Terminating, until it has Completed; a failure says how to go on.
func TestFinalBackup(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	deleting := func() *dbv1alpha1.Database {
		db := withBackup(newDatabase("orders", "postgresql", "16", 1))
		db.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
		return db
	}
	name := names.FinalBackupName(deleting())
	taking := fmt.Sprintf("taking the final backup %s before the Database goes; to delete without it, set spec.backup.finalBackup to false", name)

	t.Run("taken", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		f.converged(db)
		want := backup.NewFinalBackup(db)
		f.actions = append(f.actions, core.NewCreateAction(backupsResource, "default", want))
		f.expectStatusUpdate(db, terminatingStatus(db, "TakingFinalBackup", taking))
		f.events = []string{"Normal Created Created DatabaseBackup " + name}
		f.run(ctx, ref(db), synced)
	})
	t.Run("running: nothing new to write", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		f.converged(db)
		db.Status = terminatingStatus(db, "TakingFinalBackup", taking)
		b := finalBackup(db, dbv1alpha1.BackupRunning, "")
		job := &batchv1.Job{}
		if err := builder.Convert(builder.NewBackupJob(b, db, profile(t, db), "postgres:16"), job); err != nil {
			t.Fatal(err)
		}
		f.seed(b, job)
		f.run(ctx, ref(db), synced)
	})
	t.Run("failed: kept, with how to go on", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		f.converged(db)
		f.seed(finalBackup(db, dbv1alpha1.BackupFailed, "pg_dump: error: connection refused"))
		msg := fmt.Sprintf("the final backup %s failed (pg_dump: error: connection refused); the Database is kept until one succeeds: delete it to try again (kubectl delete dbbackup -n default %s), or set spec.backup.finalBackup to false to delete without it", name, name)
		f.expectStatusUpdate(db, terminatingStatus(db, "FinalBackupFailed", msg))
		f.events = []string{"Warning FinalBackupFailed " + msg}
		f.run(ctx, ref(db), synced)
	})
	t.Run("completed: the Secret is kept and the Database goes", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		f.converged(db)
		f.seed(finalBackup(db, dbv1alpha1.BackupCompleted, ""))
		f.expectSecretReleased(db)
		f.expectFinalizers(db, []string{})
		f.events = []string{"Normal CredentialsRetained Kept Secret orders-credentials"}
		f.run(ctx, ref(db), synced)
	})
	t.Run("never served: no data, no final backup", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
		f.seed(db)
		f.expectFinalizers(db, []string{})
		f.events = []string{"Normal FinalBackupSkipped No final backup: the Database never served, so it holds no data"}
		f.run(ctx, ref(db), synced)
	})
	t.Run("namespace being deleted: skipped, and the Database goes", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
		f.converged(db)
		f.reactors = append(f.reactors, func(c *fake.Clientset) {
			c.PrependReactor("create", "databasebackups", func(core.Action) (bool, runtime.Object, error) {
				return true, nil, actiontest.NamespaceTerminating(schema.GroupResource{Group: "dbcontroller.io", Resource: "databasebackups"}, name)
			})
		})
		f.actions = append(f.actions, core.NewCreateAction(backupsResource, "default", backup.NewFinalBackup(db)))
		f.expectFinalizers(db, []string{})
		f.events = []string{"Normal FinalBackupSkipped No final backup: namespace default is being deleted"}
		f.run(ctx, ref(db), synced)
	})
	t.Run("stopped: started at one replica for it", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		db.Spec.Replicas = ptr.To[int32](0)
		f.converged(db)
		db.Status.CurrentVersion = "16"
		waiting := "waiting for Database orders to serve: its pod orders-0 does not exist"
		f.seed(finalBackup(db, dbv1alpha1.BackupPending, waiting))
		one := db.DeepCopy()
		one.Spec.Replicas = ptr.To[int32](1)
		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, one))
		msg := fmt.Sprintf("taking the final backup %s before the Database goes (%s); to delete without it, set spec.backup.finalBackup to false", name, waiting)
		st := wantStatus(db, "Terminating", 0, 0, "16", "False", "TakingFinalBackup", msg, "True", "TakingFinalBackup", msg)
		keepTransitionTime(&st, "Ready") // False before (Stopped), False now
		st.Conditions = append(st.Conditions, terminatingStatus(db, "", "").Conditions[2])
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.run(ctx, ref(db), synced)
	})
}
