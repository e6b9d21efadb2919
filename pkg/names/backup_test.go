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

func TestBackupSourcePod(t *testing.T) {
	replica := func(name string, streaming bool) dbv1alpha1.InstanceStatus {
		return dbv1alpha1.InstanceStatus{Name: name, Role: dbv1alpha1.RoleReplica, Streaming: streaming}
	}
	for _, tc := range []struct {
		name string
		rs   *dbv1alpha1.ReplicationStatus
		want string
	}{
		{"not replicated: pod 0", nil, "orders-0"},
		{"no primary yet: pod 0", &dbv1alpha1.ReplicationStatus{}, "orders-0"},
		{"the first streaming replica", &dbv1alpha1.ReplicationStatus{Primary: "orders-1", Instances: []dbv1alpha1.InstanceStatus{
			replica("orders-0", false), {Name: "orders-1", Role: dbv1alpha1.RolePrimary}, replica("orders-2", true)}}, "orders-2"},
		{"no replica streams: the primary", &dbv1alpha1.ReplicationStatus{Primary: "orders-1", Instances: []dbv1alpha1.InstanceStatus{
			replica("orders-0", false), {Name: "orders-1", Role: dbv1alpha1.RolePrimary}}}, "orders-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := &dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders"}, Status: dbv1alpha1.DatabaseStatus{Replication: tc.rs}}
			if got := BackupSourcePod(db); got != tc.want {
				t.Errorf("BackupSourcePod = %q, want %q", got, tc.want)
			}
		})
	}
}
