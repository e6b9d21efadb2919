package names

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

func TestBackupNames(t *testing.T) {
	db := &dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders", UID: "3f2a9c1e-0000-4000-8000-000000000000"}}
	for _, tc := range []struct{ got, want string }{
		{BackupClaimName(db), "orders-backups"},
		{FinalBackupName(db), "orders-final-3f2a9c1e"},
		{ScheduledBackupName("orders", time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)), "orders-202611220300"},
		{ScheduledBackupName("orders", time.Date(2026, 11, 22, 4, 5, 0, 0, time.FixedZone("CET", 3600))), "orders-202611220305"},
		{BackupFilePath("orders-202611220300", "pgdump"), "orders-202611220300.pgdump"},
		{BackupDeleteJobName("nightly"), "nightly-delete"},
		{BackupJobName("nightly"), "nightly"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if _, ok := BackupLabels("orders")[LabelName]; ok {
		t.Error("backup labels carry the selector's name label: the Services would select backup pods")
	}
}

func TestBackupDeleteJobNameFitsALabel(t *testing.T) {
	long := strings.Repeat("a", 253)
	other := strings.Repeat("a", 252) + "b"
	a, b := BackupDeleteJobName(long), BackupDeleteJobName(other)
	if len(a) > 63 || len(b) > 63 || a == b || !strings.HasSuffix(a, "-delete") {
		t.Errorf("%q (%d) and %q (%d): want distinct names of at most 63 characters ending in -delete", a, len(a), b, len(b))
	}
	if a, b := BackupJobName(long), BackupJobName(other); len(a) > 63 || len(b) > 63 || a == b {
		t.Errorf("%q and %q: want distinct names of at most 63 characters", a, b)
	}
	if n := BackupDeleteJobName(strings.Repeat("x", 56)); n != strings.Repeat("x", 56)+"-delete" {
		t.Errorf("a name that fits was changed: %q", n)
	}
}
