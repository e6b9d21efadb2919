package backup

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		ok       bool
	}{
		{"0 3 * * *", true},
		{"*/15 * * * *", true},
		{"0 0 1 1 *", true},
		{"30 2 * * mon-fri", true},
		{"@daily", true},
		{"@hourly", true},
		{"0 3 * *", false},     // four fields
		{"0 3 * * * *", false}, // six: seconds are not standard
		{"61 3 * * *", false},  // minute out of range
		{"0 25 * * *", false},  // hour out of range
		{"0 3 32 * *", false},  // day out of range
		{"@every 5m", true},    // the parser's own descriptor
		{"TZ=UTC 0 3 * * *", true},
		{"banana", false},
	} {
		_, err := ParseSchedule(tc.schedule)
		if (err == nil) != tc.ok {
			t.Errorf("ParseSchedule(%q) = %v, want ok=%v", tc.schedule, err, tc.ok)
		}
	}
}

func TestDue(t *testing.T) {
	daily, _ := ParseSchedule("0 3 * * *")
	for _, tc := range []struct {
		name       string
		after, now string
		wantDue    bool
		wantTick   string
		wantNext   string
	}{
		{"before the first tick", "2026-11-22T01:00:00Z", "2026-11-22T02:59:59Z", false, "", "2026-11-22T03:00:00Z"},
		{"at the tick", "2026-11-22T01:00:00Z", "2026-11-22T03:00:00Z", true, "2026-11-22T03:00:00Z", "2026-11-23T03:00:00Z"},
		{"tick already taken", "2026-11-22T03:00:00Z", "2026-11-22T10:00:00Z", false, "", "2026-11-23T03:00:00Z"},
		{"three missed: the newest only", "2026-11-19T03:00:00Z", "2026-11-22T12:00:00Z", true, "2026-11-22T03:00:00Z", "2026-11-23T03:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tick, due, next := Due(daily, mustTime(tc.after), mustTime(tc.now))
			if due != tc.wantDue || (due && !tick.Equal(mustTime(tc.wantTick))) || !next.Equal(mustTime(tc.wantNext)) {
				t.Errorf("Due = %s %v %s, want %s %v %s", tick, due, next, tc.wantTick, tc.wantDue, tc.wantNext)
			}
		})
	}
}

func scheduled(name, tick string, phase dbv1alpha1.BackupPhase) *dbv1alpha1.DatabaseBackup {
	return &dbv1alpha1.DatabaseBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{dbv1alpha1.LabelBackupTrigger: dbv1alpha1.BackupTriggerSchedule},
			Annotations: map[string]string{AnnotationScheduledTime: tick}},
		Status: dbv1alpha1.DatabaseBackupStatus{Phase: phase},
	}
}

func TestLastTick(t *testing.T) {
	since := mustTime("2026-11-01T00:00:00Z")
	if got := LastTick(nil, since); !got.Equal(since) {
		t.Errorf("no backups: %s, want the creation %s", got, since)
	}
	backups := []*dbv1alpha1.DatabaseBackup{
		scheduled("a", "2026-11-20T03:00:00Z", dbv1alpha1.BackupCompleted),
		scheduled("b", "2026-11-21T03:00:00Z", dbv1alpha1.BackupFailed),
		{ObjectMeta: metav1.ObjectMeta{Name: "on-demand"}},
	}
	if got, want := LastTick(backups, since), mustTime("2026-11-21T03:00:00Z"); !got.Equal(want) {
		t.Errorf("LastTick = %s, want %s", got, want)
	}
}

func TestToPrune(t *testing.T) {
	var backups []*dbv1alpha1.DatabaseBackup
	for d := 10; d <= 20; d++ {
		backups = append(backups, scheduled(fmt.Sprintf("s%d", d), fmt.Sprintf("2026-11-%dT03:00:00Z", d), dbv1alpha1.BackupCompleted))
	}
	backups[10].Status.Phase = dbv1alpha1.BackupRunning // the newest is still running
	backups[3].Status.Phase = dbv1alpha1.BackupFailed   // failed ones are kept, to be read
	final := scheduled("final", "", dbv1alpha1.BackupCompleted)
	final.Labels[dbv1alpha1.LabelBackupTrigger] = dbv1alpha1.BackupTriggerFinal
	onDemand := &dbv1alpha1.DatabaseBackup{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Status: dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupCompleted}}
	backups = append(backups, final, onDemand)
	// Reverse, so that the order given does not decide.
	for i, j := 0, len(backups)-1; i < j; i, j = i+1, j-1 {
		backups[i], backups[j] = backups[j], backups[i]
	}

	var got []string
	for _, b := range ToPrune(backups, 3, 0, time.Time{}) {
		got = append(got, b.Name)
	}
	// Completed scheduled: s10-s12, s14-s19 (9); keep the newest 3 (s17-s19).
	want := []string{"s10", "s11", "s12", "s14", "s15", "s16"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ToPrune = %v, want %v", got, want)
	}
	if got := ToPrune(backups, 9, 0, time.Time{}); len(got) != 0 {
		t.Errorf("within the retention, pruned %d", len(got))
	}
	// A recovery window of 3 days on 2026-11-20 02:00 (the newest, s20,
	// still runs): s17 to s19 within it, and s16, the newest before it;
	// with a retention of 1, the window keeps more.
	got = nil
	for _, b := range ToPrune(backups, 1, 3*24*time.Hour, mustTime("2026-11-20T02:00:00Z")) {
		got = append(got, b.Name)
	}
	if want := []string{"s10", "s11", "s12", "s14", "s15"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ToPrune with a recovery window = %v, want %v", got, want)
	}
}
