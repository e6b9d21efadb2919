package backup

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/robfig/cron/v3"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// AnnotationScheduledTime records, on a scheduled DatabaseBackup, the tick
// of the schedule it was made for (RFC 3339, UTC). The next tick is counted
// from the newest one, so a pruned or deleted backup is never made again.
const AnnotationScheduledTime = "dbcontroller.io/scheduled-time"

// maxMissedTicks bounds the walk over ticks missed while the controller was
// away: only the newest one is taken, as CronJob does.
const maxMissedTicks = 100000

// ParseSchedule parses a standard 5-field cron expression or a descriptor
// such as @daily, as CronJob does (the same parser).
func ParseSchedule(schedule string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(schedule)
	if err != nil {
		return nil, fmt.Errorf("schedule %q is not a valid cron expression: %w", schedule, err)
	}
	return s, nil
}

// ScheduleOf is db's spec.backup.schedule, parsed: nil when it has none.
// The Runner schedules with it, and Status reports its error, if any.
func ScheduleOf(db *dbv1alpha1.Database) (cron.Schedule, error) {
	if db.Spec.Backup == nil || db.Spec.Backup.Schedule == "" {
		return nil, nil
	}
	return ParseSchedule(db.Spec.Backup.Schedule)
}

// Due returns the newest tick of s in (after, now], and whether there is
// one; and the first tick after now, when to look again.
func Due(s cron.Schedule, after, now time.Time) (tick time.Time, due bool, next time.Time) {
	t := s.Next(after)
	for i := 0; !t.IsZero() && !t.After(now) && i < maxMissedTicks; i++ {
		tick, due = t, true
		t = s.Next(t)
	}
	if due && !t.IsZero() && !t.After(now) {
		// Too many missed ticks to walk: start again from now.
		return tick, due, s.Next(now)
	}
	return tick, due, t
}

// ScheduledTime is the tick a scheduled backup was made for, and whether it
// has one.
func ScheduledTime(b *dbv1alpha1.DatabaseBackup) (time.Time, bool) {
	v, ok := b.Annotations[AnnotationScheduledTime]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// LastTick is the newest tick any of backups was made for, or since when
// the schedule runs (the Database's creation) when there is none.
func LastTick(backups []*dbv1alpha1.DatabaseBackup, since time.Time) time.Time {
	last := since
	for _, b := range backups {
		if t, ok := ScheduledTime(b); ok && t.After(last) {
			last = t
		}
	}
	return last
}

// Retention is how many Completed scheduled backups of db are kept.
func Retention(db *dbv1alpha1.Database) int {
	if db.Spec.Backup == nil {
		return int(dbv1alpha1.DefaultRetention)
	}
	return int(db.Spec.Backup.RetentionCount())
}

// ToPrune returns the Completed scheduled backups that retention no
// longer keeps, oldest first: it keeps the newest retention ones, and,
// with a recovery window (window > 0), every one that completed within
// window before now and the newest that completed before that, so that
// every point of the window can be restored. Others (on-demand, final,
// failed, running) are never pruned.
func ToPrune(backups []*dbv1alpha1.DatabaseBackup, retention int, window time.Duration, now time.Time) []*dbv1alpha1.DatabaseBackup {
	var completed []*dbv1alpha1.DatabaseBackup
	for _, b := range backups {
		if b.Labels[dbv1alpha1.LabelBackupTrigger] != dbv1alpha1.BackupTriggerSchedule ||
			b.Status.Phase != dbv1alpha1.BackupCompleted || b.DeletionTimestamp != nil {
			continue
		}
		completed = append(completed, b)
	}
	if len(completed) <= retention {
		return nil
	}
	// Newest first.
	sort.SliceStable(completed, func(i, j int) bool { return olderThan(completed[j], completed[i]) })
	var prune []*dbv1alpha1.DatabaseBackup
	beforeKept := false
	for i, b := range completed {
		inWindow := window > 0 && !completedAt(b).Before(now.Add(-window))
		keep := i < retention || inWindow || window > 0 && !beforeKept
		if keep && !inWindow {
			beforeKept = true
		}
		if !keep {
			prune = append(prune, b)
		}
	}
	slices.Reverse(prune)
	return prune
}

// completedAt is when b completed, or the tick it was made for.
func completedAt(b *dbv1alpha1.DatabaseBackup) time.Time {
	if b.Status.CompletionTime != nil {
		return b.Status.CompletionTime.Time
	}
	t, _ := ScheduledTime(b)
	return t
}

// olderThan orders backups by the tick they were made for, then by
// creation, then by name.
func olderThan(a, b *dbv1alpha1.DatabaseBackup) bool {
	ta, _ := ScheduledTime(a)
	tb, _ := ScheduledTime(b)
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
