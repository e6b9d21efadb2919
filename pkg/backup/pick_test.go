package backup

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/wal"
)

// PickBase takes the archive of the newest base backup, and of it the
// newest base backup consistent before the target; what is not a
// Completed base backup with its WAL range is passed over.
func TestPickBase(t *testing.T) {
	at := func(h int) time.Time { return now.Add(time.Duration(h) * time.Hour) }
	base := func(name, archive string, completed time.Time, stop string) *dbv1alpha1.DatabaseBackup {
		b := onDemand(name, dbv1alpha1.BackupCompleted)
		b.Status.Method = dbv1alpha1.BackupMethodBaseBackup
		b.Status.CompletionTime = ptr.To(metav1.NewTime(completed))
		b.Status.BaseBackup = &dbv1alpha1.BaseBackupStatus{Archive: archive, Timeline: 1, StartLSN: "0/1000028", StopLSN: stop}
		return b
	}
	dump := onDemand("dump", dbv1alpha1.BackupCompleted)
	dump.Status.CompletionTime = ptr.To(metav1.NewTime(at(5)))
	running := base("running", "a/uid-2", at(6), "0/9000000")
	running.Status.Phase = dbv1alpha1.BackupRunning
	noRange := base("no-range", "a/uid-2", at(6), "")
	backups := []*dbv1alpha1.DatabaseBackup{
		base("first-life", "a/uid-1", at(-10), "0/5000000"),
		base("one", "a/uid-2", at(1), "0/3000100"),
		base("two", "a/uid-2", at(3), "0/7000100"),
		dump, running, noRange,
	}
	lsn := func(s string) *wal.LSN {
		l, err := wal.ParseLSN(s)
		if err != nil {
			t.Fatal(err)
		}
		return &l
	}
	for _, tc := range []struct {
		name   string
		target wal.Target
		want   string
		err    string
	}{
		{"the latest point: the newest", wal.Target{}, "two", ""},
		{"a time after both", wal.Target{Time: ptr.To(at(4))}, "two", ""},
		{"a time between", wal.Target{Time: ptr.To(at(2))}, "one", ""},
		{"a time before the archive's first, though an older life had one", wal.Target{Time: ptr.To(at(0))}, "",
			"none of the 2 base backups of the archive a/uid-2 was consistent before"},
		{"a position at a stop", wal.Target{LSN: lsn("0/7000100")}, "two", ""},
		{"a position between", wal.Target{LSN: lsn("0/5000000")}, "one", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PickBase(backups, tc.target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got.Name != tc.want {
				t.Fatalf("got %v, %v; want %s", got, err, tc.want)
			}
		})
	}
	if _, err := PickBase([]*dbv1alpha1.DatabaseBackup{dump, running, noRange}, wal.Target{}); !errors.Is(err, ErrNoBase) {
		t.Errorf("no base backup: %v, want ErrNoBase", err)
	}
}

// The oldest kept base backup of the Database's own archive bounds both
// what WAL is kept and the first point a restore reaches; base backups
// of an earlier Database of the name, being deleted, or not completed
// count for neither.
func TestWALKeptFromAndRecoverableFrom(t *testing.T) {
	db := archiving()
	base := func(name, archive, start string, completed time.Time) *dbv1alpha1.DatabaseBackup {
		b := onDemand(name, dbv1alpha1.BackupCompleted)
		b.Status.Method = dbv1alpha1.BackupMethodBaseBackup
		b.Status.CompletionTime = ptr.To(metav1.NewTime(completed))
		b.Status.BaseBackup = &dbv1alpha1.BaseBackupStatus{Archive: archive, Timeline: 2, StartLSN: start, StopLSN: "0/F000100"}
		return b
	}
	own := "team-a/default/orders/orders-uid"
	deleting := base("deleting", own, "0/1000028", now.Add(-3*time.Hour))
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	running := base("running", own, "0/2000028", now.Add(-3*time.Hour))
	running.Status.Phase = dbv1alpha1.BackupRunning
	older := base("older", own, "0/5000028", now.Add(-2*time.Hour))
	for _, tc := range []struct {
		name    string
		backups []*dbv1alpha1.DatabaseBackup
		kept    string
		from    *time.Time
	}{
		{"none", nil, "", nil},
		{"only what counts for neither", []*dbv1alpha1.DatabaseBackup{
			deleting, running, base("earlier-life", "team-a/default/orders/uid-1", "0/1000028", now.Add(-5*time.Hour))}, "", nil},
		{"the oldest of two, whatever the order", []*dbv1alpha1.DatabaseBackup{
			base("newer", own, "0/9000028", now.Add(-time.Hour)), older, deleting, running},
			"000000020000000000000005", ptr.To(now.Add(-2 * time.Hour))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WALKeptFrom(db, tc.backups); got != tc.kept {
				t.Errorf("WALKeptFrom = %q, want %q", got, tc.kept)
			}
			got := RecoverableFrom(db, tc.backups)
			if (got == nil) != (tc.from == nil) || got != nil && !got.Time.Equal(*tc.from) {
				t.Errorf("RecoverableFrom = %v, want %v", got, tc.from)
			}
		})
	}
}

// A backup is taken and recorded with the version the servers run, and
// its image: the old one while a major upgrade holds the data at it.
func TestServed(t *testing.T) {
	pg, err := registry.Lookup("postgresql")
	if err != nil {
		t.Fatal(err)
	}
	database := func(current, spec, image string, u *dbv1alpha1.MajorUpgradeStatus) *dbv1alpha1.Database {
		return &dbv1alpha1.Database{Spec: dbv1alpha1.DatabaseSpec{Engine: "postgresql", Version: spec, Image: image},
			Status: dbv1alpha1.DatabaseStatus{CurrentVersion: current, MajorUpgrade: u}}
	}
	for _, tt := range []struct {
		name                      string
		db                        *dbv1alpha1.Database
		version, image, whyPrefix string
	}{
		{"no change", database("16", "16", "", nil), "16", "postgres:16", ""},
		{"a minor version rolls out", database("16", "16.4", "mirror/pg:16.4", nil), "16.4", "mirror/pg:16.4", ""},
		{"an upgrade not begun: the catalog's image of the data's version", database("15", "17", "", nil), "15", "postgres:15", ""},
		{"an upgrade not begun, with spec.image: waits", database("15", "17", "mirror/pg:17", nil), "", "", "the data is 15's, and spec.image names the image of 17"},
		{"an upgrade backing up: its old image", database("15", "17", "mirror/pg:17",
			&dbv1alpha1.MajorUpgradeStatus{From: "15", To: "17", FromImage: "mirror/pg:15", Phase: dbv1alpha1.MajorUpgradeBackingUp}), "15", "mirror/pg:15", ""},
		{"an upgrade that failed: its old image", database("15", "17", "mirror/pg:17",
			&dbv1alpha1.MajorUpgradeStatus{From: "15", To: "17", FromImage: "mirror/pg:15", Phase: dbv1alpha1.MajorUpgradeFailed}), "15", "mirror/pg:15", ""},
		{"the data upgraded: the new image", database("17", "17", "mirror/pg:17",
			&dbv1alpha1.MajorUpgradeStatus{From: "15", To: "17", FromImage: "mirror/pg:15", Phase: dbv1alpha1.MajorUpgradeAnalyzing}), "17", "mirror/pg:17", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			version, image, why, err := Served(tt.db, pg)
			if err != nil || version != tt.version || image != tt.image || !strings.HasPrefix(why, tt.whyPrefix) || (tt.whyPrefix == "") != (why == "") {
				t.Errorf("Served = %q, %q, %q, %v; want %q, %q, why %q...", version, image, why, err, tt.version, tt.image, tt.whyPrefix)
			}
		})
	}
}
