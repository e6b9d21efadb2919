package metrics

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	listers "github.com/dbcontroller/database-controller/pkg/generated/listers/dbcontroller/v1alpha1"
)

// parseText reads text as Prometheus reads it; text it cannot read fails
// the test.
func parseText(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus' parser: %v", err)
	}
	return families
}

// lint returns what Prometheus' linter finds in families.
func lint(t testing.TB, families map[string]*dto.MetricFamily) []promlint.Problem {
	t.Helper()
	var all []*dto.MetricFamily
	for _, f := range families {
		all = append(all, f)
	}
	problems, err := promlint.NewWithMetricFamilies(all).Lint()
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

// writeState returns what s writes.
func writeState(t testing.TB, s *stateWriter) string {
	t.Helper()
	var b strings.Builder
	if err := s.writeTo(bufio.NewWriter(&b)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func at(s string) *metav1.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &metav1.Time{Time: t}
}

// A replicated PostgreSQL Database that archives (after a failure) and
// has TLS, a single MySQL Database that is not ready (crash looping), and
// backups: completed ones of each (the newest counts), a failed newer
// one, and one of a Database that is gone (no series): the text written,
// byte for byte, which Prometheus' parser reads and its linter passes.
func TestStateWriter(t *testing.T) {
	dbIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	backupIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ready := []metav1.Condition{{Type: dbv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "AllReplicasReady"}}
	for _, db := range []*dbv1alpha1.Database{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}, Status: dbv1alpha1.DatabaseStatus{
			Conditions: ready,
			Replication: &dbv1alpha1.ReplicationStatus{Primary: "orders-1", Instances: []dbv1alpha1.InstanceStatus{
				{Name: "orders-0", Role: dbv1alpha1.RoleReplica, Streaming: true, LagBytes: ptr.To[int64](4096)},
				{Name: "orders-1", Role: dbv1alpha1.RolePrimary},
				{Name: "orders-2", Role: dbv1alpha1.RoleReplica},
				{Name: "orders-3"}, // does not answer: no role
			}},
			Archive: &dbv1alpha1.ArchiveStatus{LastArchivedTime: at("2026-11-27T10:00:00Z"), LastFailedTime: at("2026-11-27T09:30:00Z")},
			TLS:     &dbv1alpha1.TLSStatus{NotAfter: at("2027-02-25T00:00:00Z"), AuthorityNotAfter: at("2036-11-25T00:00:00Z")},
		}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "carts"}, Status: dbv1alpha1.DatabaseStatus{
			Conditions: []metav1.Condition{{Type: dbv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "CrashLooping"}}}},
	} {
		if err := dbIndex.Add(db); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []*dbv1alpha1.DatabaseBackup{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders-a"}, Spec: dbv1alpha1.DatabaseBackupSpec{Database: "orders"},
			Status: dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupCompleted, CompletionTime: at("2026-11-26T03:00:00Z")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders-b"}, Spec: dbv1alpha1.DatabaseBackupSpec{Database: "orders"},
			Status: dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupCompleted, CompletionTime: at("2026-11-27T03:00:00Z")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders-c"}, Spec: dbv1alpha1.DatabaseBackupSpec{Database: "orders"},
			Status: dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupFailed, CompletionTime: at("2026-11-27T09:00:00Z")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "gone-a"}, Spec: dbv1alpha1.DatabaseBackupSpec{Database: "gone"},
			Status: dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupCompleted, CompletionTime: at("2026-11-27T04:00:00Z")}},
	} {
		if err := backupIndex.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	changes := &primaryChanges{}
	changes.add("shop", "orders", true)
	changes.add("shop", "orders", true)
	changes.add("shop", "orders", false)
	changes.add("shop", "gone", true) // deleted since: no series, forgotten
	s := &stateWriter{dbs: listers.NewDatabaseLister(dbIndex), backups: listers.NewDatabaseBackupLister(backupIndex), changes: changes}

	want := `# HELP database_controller_database_ready 1 when the Database's Ready condition is True (its servers serve), else 0.
# TYPE database_controller_database_ready gauge
database_controller_database_ready{database="carts",namespace="shop"} 0
database_controller_database_ready{database="orders",namespace="shop"} 1
# HELP database_controller_database_ready_reason 1 for each Database, labelled with the reason of its Ready condition: what it waits for or what went wrong (CrashLooping, ImagePullFailed, NoPrimary, ...), or why it is ready.
# TYPE database_controller_database_ready_reason gauge
database_controller_database_ready_reason{database="carts",namespace="shop",reason="CrashLooping"} 1
database_controller_database_ready_reason{database="orders",namespace="shop",reason="AllReplicasReady"} 1
# HELP database_controller_instance_role 1 for each server of a replicated Database, with its role (primary or replica) as the controller last saw it.
# TYPE database_controller_instance_role gauge
database_controller_instance_role{database="orders",instance="orders-0",namespace="shop",role="replica"} 1
database_controller_instance_role{database="orders",instance="orders-1",namespace="shop",role="primary"} 1
database_controller_instance_role{database="orders",instance="orders-2",namespace="shop",role="replica"} 1
# HELP database_controller_instance_streaming 1 when a replica of a replicated Database receives from the primary, else 0.
# TYPE database_controller_instance_streaming gauge
database_controller_instance_streaming{database="orders",instance="orders-0",namespace="shop"} 1
database_controller_instance_streaming{database="orders",instance="orders-2",namespace="shop"} 0
# HELP database_controller_last_archived_wal_timestamp_seconds When the Database's primary last archived a WAL file to the object store, in seconds since the epoch.
# TYPE database_controller_last_archived_wal_timestamp_seconds gauge
database_controller_last_archived_wal_timestamp_seconds{database="orders",namespace="shop"} 1795773600
# HELP database_controller_last_backup_timestamp_seconds When the Database's newest completed DatabaseBackup completed, in seconds since the epoch.
# TYPE database_controller_last_backup_timestamp_seconds gauge
database_controller_last_backup_timestamp_seconds{database="orders",namespace="shop"} 1795748400
# HELP database_controller_last_failed_archive_timestamp_seconds When the Database's primary last failed to archive a WAL file, in seconds since the epoch.
# TYPE database_controller_last_failed_archive_timestamp_seconds gauge
database_controller_last_failed_archive_timestamp_seconds{database="orders",namespace="shop"} 1795771800
# HELP database_controller_last_failed_backup_timestamp_seconds When the Database's newest failed DatabaseBackup failed, in seconds since the epoch.
# TYPE database_controller_last_failed_backup_timestamp_seconds gauge
database_controller_last_failed_backup_timestamp_seconds{database="orders",namespace="shop"} 1795770000
# HELP database_controller_primary_changes_total Changes of a replicated Database's primary since the controller started, by kind: failover (the primary was lost) or switchover.
# TYPE database_controller_primary_changes_total counter
database_controller_primary_changes_total{database="orders",kind="failover",namespace="shop"} 2
database_controller_primary_changes_total{database="orders",kind="switchover",namespace="shop"} 1
# HELP database_controller_replication_lag_bytes Bytes of WAL the primary wrote that a streaming PostgreSQL replica has not replayed yet, as the controller last measured (MySQL's replicas report none).
# TYPE database_controller_replication_lag_bytes gauge
database_controller_replication_lag_bytes{database="orders",instance="orders-0",namespace="shop"} 4096
# HELP database_controller_tls_not_after_timestamp_seconds When the Database's TLS certificate (certificate="server") or its authority (certificate="authority") expires, in seconds since the epoch.
# TYPE database_controller_tls_not_after_timestamp_seconds gauge
database_controller_tls_not_after_timestamp_seconds{certificate="server",database="orders",namespace="shop"} 1803513600
database_controller_tls_not_after_timestamp_seconds{certificate="authority",database="orders",namespace="shop"} 2111184000
`
	got := writeState(t, s)
	if got != want {
		t.Errorf("state written:\n%s\nwant:\n%s", got, want)
	}
	if problems := lint(t, parseText(t, got)); len(problems) > 0 {
		t.Errorf("lint: %+v", problems)
	}
	// A Database with no status yet: its one series, and no family
	// without series.
	newIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := newIndex.Add(&dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "new", Name: "db"}}); err != nil {
		t.Fatal(err)
	}
	fresh := &stateWriter{dbs: listers.NewDatabaseLister(newIndex), backups: listers.NewDatabaseBackupLister(backupIndex), changes: &primaryChanges{}}
	if got, want := writeState(t, fresh), `# HELP database_controller_database_ready 1 when the Database's Ready condition is True (its servers serve), else 0.
# TYPE database_controller_database_ready gauge
database_controller_database_ready{database="db",namespace="new"} 0
`; got != want {
		t.Errorf("state of a new Database:\n%s\nwant:\n%s", got, want)
	}
	if _, ok := changes.counts[changeKey{"shop", "gone", true}]; ok {
		t.Errorf("the count of a deleted Database's primary changes is kept")
	}
}

// A label's value and a help text are escaped as the text format wants:
// Prometheus' parser reads back what they were. Names of Kubernetes
// objects hold no such characters; a condition's reason could.
func TestStateTextIsEscaped(t *testing.T) {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	odd := "a\"b\\c\nd"
	txt := &text{w: w}
	txt.family("odd", "gauge", "help with \\ and\na line", "value")
	txt.series(1, odd)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f := parseText(t, b.String())["odd"]
	if f == nil || len(f.Metric) != 1 || f.Metric[0].Label[0].GetValue() != odd || f.GetHelp() != "help with \\ and\na line" {
		t.Errorf("read back %v from %q", f, b.String())
	}
}
