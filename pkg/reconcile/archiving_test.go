package reconcile

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// archivingDatabase is a Running single-server PostgreSQL Database that
// archives its WAL to an object store, with its ready pod, as a pass
// before this one left it.
func archivingDatabase(t *testing.T, f *fixture) (*dbv1alpha1.Database, *corev1.Pod) {
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Spec.Backup = &dbv1alpha1.BackupSpec{
		ObjectStore: &dbv1alpha1.ObjectStore{Endpoint: "https://s3.example", Bucket: "backups", CredentialsSecret: dbv1alpha1.LocalSecretReference{Name: "keys"}},
		Continuous:  &dbv1alpha1.ContinuousArchiving{ArchiveTimeoutSeconds: ptr.To[int32](300)},
	}
	f.converged(db)
	if c := backup.Status(db, nil).Condition; c != nil {
		c.LastTransitionTime = metav1.NewTime(testNow.Add(-time.Hour))
		c.ObservedGeneration = db.Generation
		meta.SetStatusCondition(&db.Status.Conditions, *c)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: names.PodName(db, 0), Namespace: db.Namespace, Labels: names.SelectorLabels(db)},
		Status: corev1.PodStatus{PodIP: "192.0.2.10", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	f.seed(pod)
	return db, pod
}

// The primary says how its archiving goes: status.archive and the
// ContinuousArchiving condition, and the pass comes back in ArchivePoll;
// the same answer again costs no write. A failure turns it False with the
// store's words and one Warning event; the Database stays Running.
func TestArchivingStatus(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	archivedAt := metav1.NewTime(testNow.Add(-2 * time.Minute))
	archived := &dbv1alpha1.ArchiveStatus{LastArchivedWAL: "000000010000000000000003", LastArchivedTime: &archivedAt}
	failedAt := metav1.NewTime(testNow.Add(-time.Minute))
	failing := archived.DeepCopy()
	failing.LastFailedWAL, failing.LastFailedTime = "000000010000000000000004", &failedAt
	failing.LastFailure = "writing wal/000000010000000000000004 to bucket backups: Access Denied."

	for _, tc := range []struct {
		name      string
		said      *dbv1alpha1.ArchiveStatus
		condition metav1.Condition
		event     string
	}{
		{"archiving", archived, metav1.Condition{Status: metav1.ConditionTrue, Reason: "Archiving",
			Message: "WAL archived up to 000000010000000000000003 at " + archivedAt.UTC().Format(time.RFC3339)}, ""},
		{"no file archived yet", &dbv1alpha1.ArchiveStatus{}, metav1.Condition{Status: metav1.ConditionUnknown, Reason: "ArchivingPending",
			Message: "no WAL file archived yet: the first is once written, within spec.backup.continuous.archiveTimeoutSeconds of a write"}, ""},
		{"failing", failing, metav1.Condition{Status: metav1.ConditionFalse, Reason: "ArchivingFailed",
			Message: "the primary could not archive WAL file 000000010000000000000004 (last tried " + failedAt.UTC().Format(time.RFC3339) +
				"): writing wal/000000010000000000000004 to bucket backups: Access Denied.; it keeps the file and tries again, and the Database serves on"},
			"Warning ArchivingFailed "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			db, _ := archivingDatabase(t, f)
			f.archive = tc.said
			f.expectGet(secretsResource, "default", "orders-credentials")
			st := *db.Status.DeepCopy()
			if *tc.said != (dbv1alpha1.ArchiveStatus{}) {
				// An empty answer writes no status.archive.
				st.Archive = tc.said
			}
			c := tc.condition
			c.Type, c.ObservedGeneration, c.LastTransitionTime = dbv1alpha1.ConditionContinuousArchiving, db.Generation, metav1.NewTime(testNow)
			st.Conditions = append(st.Conditions, c)
			f.expectStatusUpdate(db, st)
			if tc.event != "" {
				f.events = []string{tc.event + c.Message}
			}
			f.run(ctx, ref(db), pollServers)
			if !slices.Equal(f.archived, []string{"192.0.2.10"}) {
				t.Errorf("asked %v, want the primary 192.0.2.10", f.archived)
			}

			// Said already: no write, no event, and the pass comes back.
			f = newFixture(t)
			db, _ = archivingDatabase(t, f)
			db.Status = st
			f.archive = tc.said
			f.expectGet(secretsResource, "default", "orders-credentials")
			f.run(ctx, ref(db), pollServers)
		})
	}

	t.Run("a new primary has archived nothing yet: the status keeps the last file", func(t *testing.T) {
		f := newFixture(t)
		db, _ := archivingDatabase(t, f)
		db.Status.Archive = archived
		c := metav1.Condition{Type: dbv1alpha1.ConditionContinuousArchiving, Status: metav1.ConditionTrue, Reason: "Archiving",
			Message: "WAL archived up to 000000010000000000000003 at " + archivedAt.UTC().Format(time.RFC3339), ObservedGeneration: db.Generation,
			LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour))}
		meta.SetStatusCondition(&db.Status.Conditions, c)
		f.archive = &dbv1alpha1.ArchiveStatus{}
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.run(ctx, ref(db), pollServers)
	})
	t.Run("the primary does not answer: the status keeps what it said", func(t *testing.T) {
		f := newFixture(t)
		db, _ := archivingDatabase(t, f)
		db.Status.Archive = archived
		f.archiveErr = errors.New("connection refused")
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.run(ctx, ref(db), pollServers)
	})
}

// Without --tools-image the servers cannot archive: the condition says
// so, with one Warning event, and nobody is asked. A controller started
// again without it goes on with the tools image the servers run, rather
// than restart them without archiving.
func TestArchivingWithoutToolsImage(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	t.Run("the servers run a tools image: kept", func(t *testing.T) {
		f := newFixture(t)
		f.noToolsImage = true
		db, _ := archivingDatabase(t, f)
		f.archive = &dbv1alpha1.ArchiveStatus{}
		db.Status.Archive = f.archive
		meta.SetStatusCondition(&db.Status.Conditions, metav1.Condition{Type: dbv1alpha1.ConditionContinuousArchiving, Status: metav1.ConditionUnknown,
			Reason: "ArchivingPending", ObservedGeneration: db.Generation, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour)),
			Message: "no WAL file archived yet: the first is once written, within spec.backup.continuous.archiveTimeoutSeconds of a write"})
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.run(ctx, ref(db), pollServers)
	})

	f := newFixture(t)
	f.noToolsImage = true
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Spec.Backup = &dbv1alpha1.BackupSpec{
		ObjectStore: &dbv1alpha1.ObjectStore{Endpoint: "https://s3.example", Bucket: "backups", CredentialsSecret: dbv1alpha1.LocalSecretReference{Name: "keys"}}}
	f.converged(db) // its servers never archived
	db.Spec.Backup.Continuous = &dbv1alpha1.ContinuousArchiving{}
	if c := backup.Status(db, nil).Condition; c != nil {
		c.LastTransitionTime = metav1.NewTime(testNow.Add(-time.Hour))
		c.ObservedGeneration = db.Generation
		meta.SetStatusCondition(&db.Status.Conditions, *c)
	}
	st := *db.Status.DeepCopy()
	msg := "the servers archive through the controller's own image, and this controller runs without --tools-image: start it with --tools-image=<its image>"
	st.Conditions = append(st.Conditions, metav1.Condition{Type: dbv1alpha1.ConditionContinuousArchiving, Status: metav1.ConditionFalse,
		Reason: "ArchivingUnavailable", Message: msg, ObservedGeneration: db.Generation, LastTransitionTime: metav1.NewTime(testNow)})
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning ArchivingUnavailable " + msg}
	f.run(ctx, ref(db), synced)
	if len(f.archived) != 0 {
		t.Errorf("asked %v", f.archived)
	}
}

// The recoverable window: from the oldest completed base backup of the
// Database's own archive to the last archived file, in status.archive
// once a base backup completes; the same window again costs no write.
func TestRecoverableWindow(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	archivedAt := metav1.NewTime(testNow.Add(-2 * time.Minute))
	archived := &dbv1alpha1.ArchiveStatus{LastArchivedWAL: "000000010000000000000009", LastArchivedTime: &archivedAt}
	consistent := testNow.Add(-time.Hour)

	f := newFixture(t)
	db, _ := archivingDatabase(t, f)
	db.Status.Archive = archived.DeepCopy()
	meta.SetStatusCondition(&db.Status.Conditions, metav1.Condition{Type: dbv1alpha1.ConditionContinuousArchiving, Status: metav1.ConditionTrue,
		Reason: "Archiving", Message: "WAL archived up to 000000010000000000000009 at " + archivedAt.UTC().Format(time.RFC3339),
		ObservedGeneration: db.Generation, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour))})
	f.archive = archived.DeepCopy()
	ofOrders := func(name, uid string, completed time.Time, start string) *dbv1alpha1.DatabaseBackup {
		b := baseBackupOf(name, uid, completed, start, start)
		b.Spec.Database = db.Name
		b.Status.BaseBackup.Archive = "default/orders/" + uid
		return b
	}
	own := ofOrders("orders-base", string(db.UID), consistent, "0/3000028")
	newer := ofOrders("orders-newer", string(db.UID), testNow.Add(-30*time.Minute), "0/5000028")
	earlierLife := ofOrders("orders-earlier", "uid-of-another", testNow.Add(-48*time.Hour), "0/1000028")
	f.seed(newer, own, earlierLife)
	f.expectGet(secretsResource, "default", "orders-credentials")
	st := *db.Status.DeepCopy()
	st.Archive.FirstRecoverableTime = ptr.To(metav1.NewTime(consistent))
	st.Archive.LastRecoverableTime = &archivedAt
	f.expectStatusUpdate(db, st)
	f.run(ctx, ref(db), pollServers)

	// Told already: no write.
	f = newFixture(t)
	db, _ = archivingDatabase(t, f)
	db.Status = st
	f.archive = archived.DeepCopy()
	f.seed(newer, own, earlierLife)
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.run(ctx, ref(db), pollServers)
}
