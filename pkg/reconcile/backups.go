package reconcile

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// backupCondition is the Backup condition and the last schedule time: nil
// without spec.backup; False when the schedule does not parse or the
// newest scheduled backup failed; True otherwise. The runner (package
// backup) takes the backups; this only reports them.
func (p *pass) backupCondition() (*metav1.Condition, *metav1.Time, error) {
	db := p.db
	if db.Spec.Backup == nil {
		return nil, nil, nil
	}
	cond := &metav1.Condition{Type: dbv1alpha1.ConditionBackup, Status: metav1.ConditionTrue, Reason: status.ReasonBackupsReady}
	final := "a final backup is taken before the Database is deleted"
	if !FinalBackupWanted(db) {
		final = "no final backup is taken (spec.backup.finalBackup is false)"
	}
	if db.Spec.Backup.Schedule == "" {
		cond.Message = "no schedule: backups are taken on demand (create a DatabaseBackup); " + final
		return cond, nil, nil
	}
	if _, err := backup.ParseSchedule(db.Spec.Backup.Schedule); err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, status.ReasonScheduleInvalid
		cond.Message = fmt.Sprintf("spec.backup.%s; no backup is scheduled until it is fixed", err)
		return cond, nil, nil
	}
	sel := labels.SelectorFromSet(labels.Set{names.LabelInstance: db.Name, dbv1alpha1.LabelBackupTrigger: dbv1alpha1.BackupTriggerSchedule})
	scheduled, err := p.r.index.backupsOf(db, sel)
	if err != nil {
		return nil, nil, err
	}
	var newest *dbv1alpha1.DatabaseBackup
	var newestTick metav1.Time
	for _, b := range scheduled {
		if t, ok := backup.ScheduledTime(b); ok && (newest == nil || t.After(newestTick.Time)) {
			newest, newestTick = b, metav1.NewTime(t)
		}
	}
	cond.Message = fmt.Sprintf("scheduled %q (UTC), keeping the newest %d; %s", db.Spec.Backup.Schedule, backup.Retention(db), final)
	if newest != nil && newest.Status.Phase == dbv1alpha1.BackupFailed {
		cond.Status, cond.Reason = metav1.ConditionFalse, status.ReasonScheduledBackupFailed
		cond.Message = fmt.Sprintf("the newest scheduled backup %s failed: %s", newest.Name, newest.Status.Message)
	}
	if newest == nil {
		return cond, nil, nil
	}
	return cond, &newestTick, nil
}
