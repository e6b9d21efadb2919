package reconcile

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
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
		f.expectCreate(statefulSetsResource, createdStatefulSet(t, restoringStatefulSet(t, db).StatefulSet))
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

// baseBackupOf is a Completed base backup of the PostgreSQL 16 Database
// "source" (UID uid), on timeline 1, completed at completed, in the
// archive default/source/<uid>.
func baseBackupOf(name, uid string, completed time.Time, start, stop string) *dbv1alpha1.DatabaseBackup {
	b := sourceBackup("16")
	b.Name, b.UID = name, types.UID(name+"-uid")
	archive := "default/source/" + uid
	b.Status.Volume, b.Status.Path = "", archive+"/base/"+name+".tar"
	b.Status.ObjectStore = &dbv1alpha1.ObjectStore{Endpoint: "https://s3.example", Bucket: "backups",
		CredentialsSecret: dbv1alpha1.LocalSecretReference{Name: "store-keys"}}
	b.Status.Method = dbv1alpha1.BackupMethodBaseBackup
	b.Status.StartTime = ptr.To(metav1.NewTime(completed.Add(-time.Minute)))
	b.Status.CompletionTime = ptr.To(metav1.NewTime(completed))
	b.Status.BaseBackup = &dbv1alpha1.BaseBackupStatus{Archive: archive, Timeline: 1, StartLSN: start, StopLSN: stop}
	return b
}

// A new Database restores a base backup: to the point its copy became
// consistent when spec.restore names it; when spec.restore names the
// Database, from the newest base backup consistent before the target, of
// the newest Database of the name, to the target. Its StatefulSet's first
// pod recovers the copy with the archive before its server starts, and
// the status names the backup picked.
func TestBaseRestore(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	morning := testNow.Add(-6 * time.Hour)
	older := baseBackupOf("old-incarnation", "uid-0", testNow.Add(-24*time.Hour), "0/2000028", "0/2000100")
	early := baseBackupOf("early", "uid-1", morning, "0/D000028", "0/D000100")
	late := baseBackupOf("late", "uid-1", morning.Add(2*time.Hour), "0/1A000028", "0/1A000138")
	source := func(b *dbv1alpha1.DatabaseBackup, target, text string) *builder.RestoreSource {
		return &builder.RestoreSource{Backup: b.Name, Path: b.Status.Path, SourceDatabase: "source", ObjectStore: b.Status.ObjectStore,
			ToolsImage: actiontest.ToolsImage, Base: &builder.BaseRestore{Archive: b.Status.BaseBackup.Archive, Key: "base/" + b.Name + ".tar",
				From:   map[string]string{"early": "00000001000000000000000D", "late": "00000001000000000000001A"}[b.Name],
				Target: target, TargetText: text}}
	}
	at := metav1.NewTime(morning.Add(time.Hour))
	for _, tc := range []struct {
		name    string
		restore dbv1alpha1.RestoreSpec
		want    *builder.RestoreSource
	}{
		{"a base backup, to where its copy is consistent", dbv1alpha1.RestoreSpec{Backup: "early"},
			source(early, "-c recovery_target=immediate", "the point its copy became consistent")},
		{"a base backup, to a time", dbv1alpha1.RestoreSpec{Backup: "early", TargetTime: &at},
			source(early, "-c recovery_target_time='"+at.UTC().Format("2006-01-02 15:04:05")+"+00'", at.UTC().Format(time.RFC3339Nano))},
		{"the Database, to the latest point: its newest base backup", dbv1alpha1.RestoreSpec{Database: "source"},
			source(late, "", "the latest point")},
		{"the Database, to a time: the newest base backup before it", dbv1alpha1.RestoreSpec{Database: "source", TargetTime: &at},
			source(early, "-c recovery_target_time='"+at.UTC().Format("2006-01-02 15:04:05")+"+00'", at.UTC().Format(time.RFC3339Nano))},
		{"the Database, to a position", dbv1alpha1.RestoreSpec{Database: "source", TargetLSN: "0/1A000200"},
			source(late, "-c recovery_target_lsn='0/1A000200'", "0/1A000200")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			db := newDatabase("copy", "postgresql", "16", 1)
			db.Spec.Restore = tc.restore.DeepCopy()
			f.seed(db, older, early, late)
			f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
			f.expectCreate(servicesResource, expectedHeadless(t, db))
			f.expectCreate(servicesResource, expectedService(t, db))
			p := plan.Compute(db, plan.Observed{Restore: tc.want})
			if p.Problem != nil {
				t.Fatal(p.Problem)
			}
			sts := &appsv1.StatefulSet{}
			if err := builder.Convert(p.StatefulSet, sts); err != nil {
				t.Fatal(err)
			}
			if got := builder.BaseRestoring(sts); got != tc.want.Backup {
				t.Fatalf("the StatefulSet restores %q, want %q", got, tc.want.Backup)
			}
			f.expectCreate(statefulSetsResource, createdStatefulSet(t, p.StatefulSet))
			msg := "restoring backup " + tc.want.Backup + ": 0/1 replicas ready"
			st := wantStatus(db, "Provisioning", 0, 0, "", "False", "Restoring", msg, "True", "Restoring", msg)
			st.Restore = &dbv1alpha1.RestoreStatus{Backup: tc.want.Backup}
			f.expectStatusUpdate(db, st)
			f.events = []string{"Normal Created Created Secret copy-credentials, Service copy-headless, Service copy, StatefulSet copy"}
			f.run(ctx, ref(db), synced)
		})
	}
	t.Run("picked once: a newer base backup does not change the restore", func(t *testing.T) {
		f := newFixture(t)
		db := newDatabase("copy", "postgresql", "16", 1)
		db.Spec.Restore = &dbv1alpha1.RestoreSpec{Database: "source"}
		// The StatefulSet restores early, picked before late completed.
		p := plan.Compute(db, plan.Observed{Restore: source(early, "", "the latest point")})
		sts := &appsv1.StatefulSet{}
		if err := builder.Convert(p.StatefulSet, sts); err != nil {
			t.Fatal(err)
		}
		f.seed(db, older, early, late, rolledOut(sts, 1), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
		msg := "restored backup early; restarting without its volume"
		st := wantStatus(db, "Provisioning", 1, 1, "", "False", "Restoring", msg, "True", "Restoring", msg)
		st.Restore = &dbv1alpha1.RestoreStatus{Backup: "early", CompletionTime: ptr.To(metav1.NewTime(testNow))}
		f.expectStatusUpdate(db, st)
		f.run(ctx, ref(db), synced)
	})
	before := metav1.NewTime(morning.Add(-time.Hour))
	for _, tc := range []struct {
		name, reason, msg string
		restore           dbv1alpha1.RestoreSpec
		backups           []*dbv1alpha1.DatabaseBackup
		status            string
		want              outcome
	}{
		{"no base backup yet: waits", "RestoreBackupNotReady",
			"Database source has no Completed base backup in namespace default to restore from; the Database waits for one before it creates anything (a Database that archives its WAL takes one with a DatabaseBackup of method BaseBackup)",
			dbv1alpha1.RestoreSpec{Database: "source"}, []*dbv1alpha1.DatabaseBackup{sourceBackup("16")}, "", needsPersonRecheck},
		{"a time before every base backup: refused", "RestoreRefused",
			"cannot restore Database source to " + before.UTC().Format(time.RFC3339Nano) + ": none of the 2 base backups of the archive default/source/uid-1 was consistent before " +
				before.UTC().Format(time.RFC3339Nano) + ": the archive cannot restore to a point before its oldest base backup",
			dbv1alpha1.RestoreSpec{Database: "source", TargetTime: &before}, []*dbv1alpha1.DatabaseBackup{older, early, late}, "", needsPerson},
		{"a base backup, to a time before it: refused", "RestoreRefused",
			"spec.restore.targetTime " + before.UTC().Format(time.RFC3339Nano) + " is before base backup early started (" +
				early.Status.StartTime.UTC().Format(time.RFC3339) + "): restore from spec.restore.database, which picks an older base backup",
			dbv1alpha1.RestoreSpec{Backup: "early", TargetTime: &before}, []*dbv1alpha1.DatabaseBackup{early}, "early", needsPerson},
		{"a base backup, to a position before it is consistent: refused", "RestoreRefused",
			"spec.restore.targetLSN 0/D000050 is before base backup early became consistent (0/D000100): restore from spec.restore.database, which picks an older base backup",
			dbv1alpha1.RestoreSpec{Backup: "early", TargetLSN: "0/D000050"}, []*dbv1alpha1.DatabaseBackup{early}, "early", needsPerson},
		{"a base backup of another major version: refused", "RestoreRefused",
			"DatabaseBackup early is a copy of the data directory of PostgreSQL 15, which only PostgreSQL 15 reads: restore it into version 15, or restore a dump (method Dump)",
			dbv1alpha1.RestoreSpec{Backup: "early"},
			[]*dbv1alpha1.DatabaseBackup{func() *dbv1alpha1.DatabaseBackup { b := early.DeepCopy(); b.Status.Version = "15"; return b }()}, "early", needsPerson},
		{"a dump, to a time: refused", "RestoreRefused",
			"spec.restore.targetTime and targetLSN restore a base backup to a point in time, and DatabaseBackup nightly is a dump, which restores as it was taken: delete this Database and create it again without them, or from a base backup",
			dbv1alpha1.RestoreSpec{Backup: "nightly", TargetTime: &at}, []*dbv1alpha1.DatabaseBackup{sourceBackup("16")}, "nightly", needsPerson},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			db := newDatabase("copy", "postgresql", "16", 1)
			db.Spec.Restore = tc.restore.DeepCopy()
			f.seed(db)
			for _, b := range tc.backups {
				f.seed(b)
			}
			st := wantStatus(db, "Failed", 0, 0, "", "False", tc.reason, tc.msg, "False", tc.reason, tc.msg)
			st.Restore = &dbv1alpha1.RestoreStatus{Backup: tc.status}
			f.expectStatusUpdate(db, st)
			f.events = []string{"Warning " + tc.reason + " " + tc.msg}
			f.run(ctx, ref(db), tc.want)
		})
	}
}
