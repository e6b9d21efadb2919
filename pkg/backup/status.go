package backup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// This file is what the Database's status and deletion need of its
// backups, as pure functions: the reconciler calls them with what it read,
// and writes what they say.

// FinalWanted reports whether db takes a backup before it is deleted.
func FinalWanted(db *dbv1alpha1.Database) bool {
	return db.Spec.Backup != nil && db.Spec.Backup.FinalBackupWanted()
}

// Report is what the Database's status says of its backups.
type Report struct {
	// Condition is the Backup condition: nil without spec.backup; False
	// when the schedule does not parse or the newest scheduled backup
	// failed; True otherwise.
	Condition *metav1.Condition
	// LastScheduleTime is the newest tick a scheduled backup was made for.
	LastScheduleTime *metav1.Time
}

// Status is the Report of db, whose DatabaseBackups are backups (any
// order; those not made by its schedule are passed over). The Runner takes
// the backups; this only reports them.
func Status(db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) Report {
	if db.Spec.Backup == nil {
		return Report{}
	}
	report := scheduleStatus(db, backups)
	// A base backup that could not be restored says more than a schedule
	// that runs: the newest base backup with a verification decides.
	if db.Spec.Backup.VerifyRestore && report.Condition.Status == metav1.ConditionTrue {
		if b := newestVerified(db, backups); b != nil && b.Status.Verification.Phase == dbv1alpha1.VerificationNotRestorable {
			report.Condition.Status, report.Condition.Reason = metav1.ConditionFalse, status.ReasonBaseBackupNotRestorable
			report.Condition.Message = fmt.Sprintf("base backup %s could not be restored into a throw-away server: %s; take another (a DatabaseBackup), and see its Job %s's log",
				b.Name, b.Status.Verification.Message, names.BackupVerifyJobName(b.Name))
		}
	}
	return report
}

// newestVerified is the newest of db's Completed base backups in its
// archive whose verification ended; nil when there is none.
func newestVerified(db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) *dbv1alpha1.DatabaseBackup {
	var ended []*dbv1alpha1.DatabaseBackup
	for _, b := range backups {
		if v := b.Status.Verification; v != nil && v.Phase != dbv1alpha1.VerificationRunning {
			ended = append(ended, b)
		}
	}
	return newestBase(db, ended)
}

// scheduleStatus is the Report of db's schedule.
func scheduleStatus(db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) Report {
	cond := &metav1.Condition{Type: dbv1alpha1.ConditionBackup, Status: metav1.ConditionTrue, Reason: status.ReasonBackupsReady}
	final := "a final backup is taken before the Database is deleted"
	if !FinalWanted(db) {
		final = "no final backup is taken (spec.backup.finalBackup is false)"
	}
	if db.Spec.Backup.Schedule == "" {
		cond.Message = "no schedule: backups are taken on demand (create a DatabaseBackup); " + final
		return Report{Condition: cond}
	}
	if _, err := ScheduleOf(db); err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, status.ReasonScheduleInvalid
		cond.Message = fmt.Sprintf("spec.backup.%s; no backup is scheduled until it is fixed", err)
		return Report{Condition: cond}
	}
	var newest *dbv1alpha1.DatabaseBackup
	var newestTick metav1.Time
	for _, b := range backups {
		if b.Labels[names.LabelInstance] != db.Name || b.Labels[dbv1alpha1.LabelBackupTrigger] != dbv1alpha1.BackupTriggerSchedule {
			continue
		}
		if t, ok := ScheduledTime(b); ok && (newest == nil || t.After(newestTick.Time)) {
			newest, newestTick = b, metav1.NewTime(t)
		}
	}
	keeping := fmt.Sprintf("the newest %d", Retention(db))
	if d := db.Spec.Backup.RecoveryWindowDays; d != nil {
		keeping += fmt.Sprintf(" and those a recovery window of %d days needs", *d)
	}
	cond.Message = fmt.Sprintf("scheduled %q (UTC), keeping %s; %s", db.Spec.Backup.Schedule, keeping, final)
	if newest == nil {
		return Report{Condition: cond}
	}
	if newest.Status.Phase == dbv1alpha1.BackupFailed {
		cond.Status, cond.Reason = metav1.ConditionFalse, status.ReasonScheduledBackupFailed
		cond.Message = fmt.Sprintf("the newest scheduled backup %s failed: %s", newest.Name, newest.Status.Message)
	}
	return Report{Condition: cond, LastScheduleTime: &newestTick}
}

// FinalStep is what the deletion of a Database does next about its final
// backup.
type FinalStep int

const (
	// FinalDone: the final backup completed, or none is needed; the
	// deletion goes on.
	FinalDone FinalStep = iota
	// FinalSkipped: the Database never served, so it holds no data and
	// gets no final backup; the deletion goes on, and an event says so.
	FinalSkipped
	// FinalCreate: create NewFinalBackup, then wait for it.
	FinalCreate
	// FinalWait: the final backup runs or waits to run; the Database
	// serves for it.
	FinalWait
	// FinalFailed: it failed; the Database is kept until a person acts.
	FinalFailed
)

// Final is the next step of the final backup of db, which is being
// deleted and wants one (FinalWanted), given its final DatabaseBackup (nil
// when there is none), and the Ready condition's words for it (none for
// FinalDone and FinalSkipped).
func Final(db *dbv1alpha1.Database, b *dbv1alpha1.DatabaseBackup) (FinalStep, *status.Termination) {
	name := names.FinalBackupName(db)
	taking := func(why string) *status.Termination {
		return &status.Termination{Reason: status.ReasonFinalBackup, Message: fmt.Sprintf(
			"taking the final backup %s before the Database goes%s; to delete without it, set spec.backup.finalBackup to false", name, why)}
	}
	switch {
	case b == nil && db.Status.CurrentVersion == "":
		return FinalSkipped, nil
	case b == nil:
		return FinalCreate, taking("")
	case b.Status.Phase == dbv1alpha1.BackupCompleted:
		return FinalDone, nil
	case b.Status.Phase == dbv1alpha1.BackupFailed:
		return FinalFailed, &status.Termination{Reason: status.ReasonFinalBackupFailed, Warning: true, Message: fmt.Sprintf(
			"the final backup %s failed (%s); the Database is kept until one succeeds: delete it to try again (kubectl delete dbbackup -n %s %s), or set spec.backup.finalBackup to false to delete without it",
			name, b.Status.Message, db.Namespace, name)}
	case b.Status.Message != "":
		return FinalWait, taking(" (" + b.Status.Message + ")")
	default:
		return FinalWait, taking("")
	}
}

// MethodFor is how b, of db, is taken: its spec.method; unset, a base
// backup when db archives its WAL (what a point-in-time restore starts
// from: the scheduled and final backups too), and otherwise a dump.
func MethodFor(b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database) dbv1alpha1.BackupMethod {
	switch {
	case b.Spec.Method != "":
		return b.Spec.Method
	case db.Spec.Backup != nil && db.Spec.Backup.Continuous != nil && db.Spec.Backup.ObjectStore != nil:
		return dbv1alpha1.BackupMethodBaseBackup
	default:
		return dbv1alpha1.BackupMethodDump
	}
}

// archiveFails says why db, whose primary's archiving fails, cannot take
// a base backup now, or "": pg_basebackup would wait, for ever, for the
// WAL that makes its copy consistent to be archived.
func archiveFails(db *dbv1alpha1.Database) string {
	c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving)
	if c == nil || c.Status != metav1.ConditionFalse {
		return ""
	}
	return fmt.Sprintf("waiting for Database %s to archive its WAL, which a base backup needs to complete: %s", db.Name, c.Message)
}

// baseBackupRefused says why b, taken by method, cannot be taken of db
// with engine e, or "": a base backup needs an engine that takes one, and
// a Database that archives its WAL, without which it would not restore.
func baseBackupRefused(method dbv1alpha1.BackupMethod, b *dbv1alpha1.DatabaseBackup, db *dbv1alpha1.Database, e engine.Engine) string {
	if method != dbv1alpha1.BackupMethodBaseBackup {
		return ""
	}
	if a := e.Runtime().Archiving; a == nil || a.BaseBackup == "" {
		return fmt.Sprintf("DatabaseBackup %s asks for a base backup (spec.method), which only PostgreSQL takes, and Database %s runs %s: back it up with method Dump",
			b.Name, db.Name, db.Spec.Engine)
	}
	if db.Spec.Backup == nil || db.Spec.Backup.Continuous == nil || db.Spec.Backup.ObjectStore == nil {
		return fmt.Sprintf("DatabaseBackup %s asks for a base backup (spec.method), which restores only with the WAL archived after it, and Database %s does not archive its WAL: set spec.backup.objectStore and spec.backup.continuous, or back it up with method Dump",
			b.Name, db.Name)
	}
	return ""
}

// Served is the version db's servers run and its image, which back it up
// and record it: spec.version's, or while a major upgrade holds the data
// at the version it was written by, that one's. Before such an upgrade
// has begun, the image of the version that runs is known only from the
// catalog: with spec.image set, why says the backup waits for it.
func Served(db *dbv1alpha1.Database, e engine.Engine) (version, image, why string, err error) {
	if u := db.Status.MajorUpgrade; u != nil && u.Phase != dbv1alpha1.MajorUpgradeAnalyzing {
		return u.From, u.FromImage, "", nil
	}
	current := db.Status.CurrentVersion
	if mu := e.Runtime().MajorUpgrade; mu != nil && mu.Needed(current, db.Spec.Version) {
		if db.Spec.Image != "" {
			return "", "", fmt.Sprintf("the data is %s's, and spec.image names the image of %s: waiting for the upgrade to %s to begin, or for spec.version to be %s again",
				current, db.Spec.Version, db.Spec.Version, current), nil
		}
		image, err := e.Image(current, "")
		return current, image, "", err
	}
	image, err = e.Image(db.Spec.Version, db.Spec.Image)
	return db.Spec.Version, image, "", err
}
