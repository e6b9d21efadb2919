package reconcile

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/plan"
)

// sourceBackup is a Completed backup of a PostgreSQL Database "source".
func sourceBackup(version string) *dbv1alpha1.DatabaseBackup {
	return &dbv1alpha1.DatabaseBackup{
		TypeMeta:   metav1.TypeMeta{APIVersion: "dbcontroller.io/v1alpha1", Kind: "DatabaseBackup"},
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default", UID: "nightly-uid"},
		Spec:       dbv1alpha1.DatabaseBackupSpec{Database: "source"},
		Status: dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupCompleted, Engine: "postgresql", Version: version,
			Image: "postgres:" + version, Volume: "source-backups", Path: "nightly.pgdump"},
	}
}

func restoring(db *dbv1alpha1.Database) *dbv1alpha1.Database {
	db.Spec.Restore = &dbv1alpha1.RestoreSpec{Backup: "nightly"}
	return db
}

// restoringStatefulSet is the StatefulSet whose pods restore nightly.
func restoringStatefulSet(t *testing.T, db *dbv1alpha1.Database) *plan.Plan {
	t.Helper()
	p := plan.Compute(db, plan.Observed{Restore: &builder.RestoreSource{Backup: "nightly", Claim: "source-backups",
		Path: "nightly.pgdump", SourceDatabase: "source"}})
	if p.Problem != nil {
		t.Fatal(p.Problem)
	}
	return p
}

// A new Database restores a backup before it serves: its pods restore,
// it is not Running until every replica served the restored data and the
// pods restarted without the backup's volume.
func TestRestore(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	t.Run("created restoring", func(t *testing.T) {
		f := newFixture(t)
		db := restoring(newDatabase("copy", "postgresql", "16", 1))
		f.seed(db, sourceBackup("15"))
		f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
		f.expectCreate(servicesResource, expectedHeadless(t, db))
		f.expectCreate(servicesResource, expectedService(t, db))
		sts := &appsv1.StatefulSet{}
		if err := builder.Convert(restoringStatefulSet(t, db).StatefulSet, sts); err != nil {
			t.Fatal(err)
		}
		f.expectCreate(statefulSetsResource, sts)
		msg := "restoring backup nightly: 0/1 replicas ready"
		st := wantStatus(db, "Provisioning", 0, 0, "", "False", "Restoring", msg, "True", "Restoring", msg)
		st.Restore = &dbv1alpha1.RestoreStatus{Backup: "nightly"}
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Created Created Secret copy-credentials, Service copy-headless, Service copy, StatefulSet copy"}
		f.run(ctx, ref(db), synced)
	})
	t.Run("every replica serves: completed", func(t *testing.T) {
		f := newFixture(t)
		db := restoring(newDatabase("copy", "postgresql", "16", 1))
		p := restoringStatefulSet(t, db)
		sts := &appsv1.StatefulSet{}
		_ = builder.Convert(p.StatefulSet, sts)
		f.seed(db, sourceBackup("15"), rolledOut(sts, 1), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
		msg := "restored backup nightly; restarting without its volume"
		st := wantStatus(db, "Provisioning", 1, 1, "", "False", "Restoring", msg, "True", "Restoring", msg)
		st.Restore = &dbv1alpha1.RestoreStatus{Backup: "nightly", CompletionTime: ptr.To(metav1.NewTime(testNow))}
		f.expectStatusUpdate(db, st)
		f.run(ctx, ref(db), synced)
	})
	t.Run("completed: the pods no longer mount the backup", func(t *testing.T) {
		f := newFixture(t)
		db := restoring(newDatabase("copy", "postgresql", "16", 1))
		db.Status.Restore = &dbv1alpha1.RestoreStatus{Backup: "nightly", CompletionTime: ptr.To(metav1.NewTime(testNow))}
		sts := &appsv1.StatefulSet{}
		_ = builder.Convert(restoringStatefulSet(t, db).StatefulSet, sts)
		f.seed(db, rolledOut(sts, 1), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
		f.expectApply(statefulSetsResource, "default", "copy", desiredStatefulSet(t, db))
		// Not Running until the StatefulSet read back has no restore in it.
		// (The fake API server merges an apply instead of removing the
		// fields no longer applied, so the one it returns still restores.)
		msg := "restored backup nightly; restarting without its volume"
		st := wantStatus(db, "Provisioning", 1, 1, "", "False", "Restoring", msg, "True", "Restoring", msg)
		st.Restore = db.Status.Restore
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Updated Updated StatefulSet copy to match the Database spec"}
		f.run(ctx, ref(db), synced)
	})
	for _, tc := range []struct {
		name, reason, msg string
		backup            *dbv1alpha1.DatabaseBackup
		event             bool
		want              outcome
	}{
		{"no such backup: waits", "RestoreBackupNotReady",
			"DatabaseBackup default/nightly does not exist; the Database waits for it before it creates anything (spec.restore cannot change: to restore another backup, delete this Database and create it again)",
			nil, true, needsPersonRecheck},
		{"a newer series: refused", "RestoreRefused",
			"DatabaseBackup nightly cannot be restored into version 16: RestoreRefused: the backup was taken from PostgreSQL 17, and 16 is older: restore it into version 17 or later",
			sourceBackup("17"), true, needsPerson},
		{"another engine: refused", "RestoreRefused", "DatabaseBackup nightly is a backup of mysql, and this Database runs postgresql",
			func() *dbv1alpha1.DatabaseBackup { b := sourceBackup("16"); b.Status.Engine = "mysql"; return b }(), true, needsPerson},
		{"in an object store, without --tools-image: refused", "RestoreRefused",
			"DatabaseBackup nightly is in an object store, and this controller runs without --tools-image, whose binary fetches it: start the controller with --tools-image=<its image>",
			func() *dbv1alpha1.DatabaseBackup {
				b := sourceBackup("16")
				b.Status.Volume, b.Status.Path = "", "default/source/source-uid/dumps/nightly.pgdump"
				b.Status.ObjectStore = &dbv1alpha1.ObjectStore{Endpoint: "https://s3.example", Bucket: "backups",
					CredentialsSecret: dbv1alpha1.LocalSecretReference{Name: "store-keys"}}
				return b
			}(), true, needsPerson},
		{"still running: waits", "RestoreBackupNotReady", "DatabaseBackup nightly is Running; the restore waits until it has Completed",
			func() *dbv1alpha1.DatabaseBackup {
				b := sourceBackup("16")
				b.Status.Phase = dbv1alpha1.BackupRunning
				return b
			}(), true, needsPersonRecheck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.noToolsImage = tc.backup != nil && tc.backup.Status.ObjectStore != nil
			db := restoring(newDatabase("copy", "postgresql", "16", 1))
			f.seed(db)
			if tc.backup != nil {
				f.seed(tc.backup)
			}
			st := wantStatus(db, "Failed", 0, 0, "", "False", tc.reason, tc.msg, "False", tc.reason, tc.msg)
			st.Restore = &dbv1alpha1.RestoreStatus{Backup: "nightly"}
			f.expectStatusUpdate(db, st)
			f.events = []string{"Warning " + tc.reason + " " + tc.msg}
			f.run(ctx, ref(db), tc.want)
		})
	}
}
