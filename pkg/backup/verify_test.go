package backup

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// verifying is an archiving Database whose base backups are proven
// restorable.
func verifying() *dbv1alpha1.Database {
	db := archiving()
	db.Spec.Backup.VerifyRestore = true
	return db
}

// verifyJob is the Job that proves b, a Completed base backup of db,
// restorable.
func verifyJob(t *testing.T, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database) *batchv1.Job {
	e, err := registry.Lookup("postgresql")
	if err != nil {
		t.Fatal(err)
	}
	j := &batchv1.Job{}
	if err := builder.Convert(builder.NewVerifyJob(b, db, e, b.Status.Image, toolsImage, "base/"+b.Name+".tar", "00000001000000000000001A"), j); err != nil {
		t.Fatal(err)
	}
	return j
}

// withVerification is b with its verification at phase, begun a minute
// ago, ended now unless it runs.
func withVerification(b *dbv1alpha1.DatabaseBackup, phase dbv1alpha1.VerificationPhase, message string) *dbv1alpha1.DatabaseBackup {
	v := b.DeepCopy()
	v.Status.Verification = &dbv1alpha1.VerificationStatus{Phase: phase, StartTime: ptr.To(metav1.NewTime(now.Add(-time.Minute))), Message: message}
	if phase != dbv1alpha1.VerificationRunning {
		v.Status.Verification.CompletionTime = ptr.To(metav1.NewTime(now))
	}
	return v
}

// The newest Completed base backup of a Database that asks for it is
// restored by a Job into a throw-away server, one at a time and not while
// a backup runs; its end is recorded with the time it took, and one that
// cannot be restored is a Warning on the backup and the Database.
func TestVerifyRestore(t *testing.T) {
	db := verifying()
	older, newer := completedBase("older", "0/D000028"), completedBase("newer", "0/1A000028")
	newer.Status.Image = "postgres:16"
	// The WAL prune's Job of the oldest base backup is there: it is not
	// this test's.
	prune := finished(walPruneJob(t, db, "00000001000000000000000D"), true)
	t.Run("the newest base backup: its Job, and Running", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(older, newer, prune)
		f.kubeactions = append(f.kubeactions, core.NewCreateAction(jobsResource, "default", verifyJob(t, newer, db)))
		running := newer.DeepCopy()
		running.Status.Verification = &dbv1alpha1.VerificationStatus{Phase: dbv1alpha1.VerificationRunning, StartTime: ptr.To(metav1.NewTime(now))}
		f.expectUpdateStatus(running)
		f.events = []string{"Normal Verifying Restoring base backup newer into a throw-away server with Job newer-verify, to prove it restorable"}
		f.run(db)
	})
	t.Run("not asked: nothing", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(older, newer, prune)
		f.run(archiving())
	})
	t.Run("a backup runs: it waits", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		running := startedBase(baseBackup("running"))
		f.seed(older, newer, prune, running, baseJob(t, running, db))
		f.run(db)
	})
	t.Run("verified already: nothing", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(older, withVerification(newer, dbv1alpha1.VerificationRestorable, "restorable"), prune)
		f.run(db)
	})
	t.Run("its Job runs: nothing", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(older, withVerification(newer, dbv1alpha1.VerificationRunning, ""), prune, verifyJob(t, newer, db))
		f.run(db)
	})
	t.Run("its Job succeeded: Restorable, with what it reached", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		job := finished(verifyJob(t, newer, db), true)
		said := "restorable: recovered to its consistent point and served (1 databases) in 9 s"
		f.seed(older, withVerification(newer, dbv1alpha1.VerificationRunning, ""), prune, job, jobPod(job, corev1.PodSucceeded, said))
		f.expectUpdateStatus(withVerification(newer, dbv1alpha1.VerificationRestorable, said))
		f.events = []string{"Normal Restorable Base backup newer restored into a throw-away server: " + said}
		f.run(db)
	})
	t.Run("its Job failed: NotRestorable, with why, told on the backup and the Database", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		job := finished(verifyJob(t, newer, db), false)
		said := "refused: the archive cannot restore base backup newer: the WAL archive lacks segment 00000001000000000000001B"
		f.seed(older, withVerification(newer, dbv1alpha1.VerificationRunning, ""), prune, job, jobPod(job, corev1.PodFailed, said))
		f.expectUpdateStatus(withVerification(newer, dbv1alpha1.VerificationNotRestorable, said))
		f.events = []string{"Warning NotRestorable Base backup newer could not be restored: " + said,
			"Warning NotRestorable Base backup newer could not be restored: " + said}
		f.run(db)
	})
	t.Run("its Job was deleted before it ended: it is made again", func(t *testing.T) {
		f := &fixture{t: t, toolsImage: toolsImage}
		f.seed(older, withVerification(newer, dbv1alpha1.VerificationRunning, ""), prune)
		f.expectUpdateStatus(newer)
		f.run(db)
	})
}

// The Backup condition is False while the newest base backup whose
// verification ended could not be restored, naming it; a newer one that
// could ends that.
func TestVerifyRestoreStatus(t *testing.T) {
	db := verifying()
	older, newer := completedBase("older", "0/D000028"), completedBase("newer", "0/1A000028")
	bad := withVerification(older, dbv1alpha1.VerificationNotRestorable, "the WAL archive lacks segment 00000001000000000000000E")
	c := Status(db, []*dbv1alpha1.DatabaseBackup{bad, newer}).Condition
	if c.Status != metav1.ConditionFalse || c.Reason != status.ReasonBaseBackupNotRestorable ||
		c.Message != "base backup older could not be restored into a throw-away server: the WAL archive lacks segment 00000001000000000000000E; take another (a DatabaseBackup), and see its Job older-verify's log" {
		t.Errorf("condition %+v, want False BaseBackupNotRestorable naming older", c)
	}
	good := withVerification(newer, dbv1alpha1.VerificationRestorable, "restorable")
	if c := Status(db, []*dbv1alpha1.DatabaseBackup{bad, good}).Condition; c.Status != metav1.ConditionTrue {
		t.Errorf("condition %+v once a newer base backup is restorable, want True", c)
	}
	if c := Status(archiving(), []*dbv1alpha1.DatabaseBackup{bad}).Condition; c.Status != metav1.ConditionTrue {
		t.Errorf("condition %+v without verifyRestore, want True", c)
	}
}
