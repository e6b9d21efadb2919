//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
	"github.com/dbcontroller/database-controller/pkg/wal"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// A PostgreSQL Database that archives its WAL takes a base backup into
// the store while it serves, and the status says where the backup's WAL
// begins and where its copy is consistent, and what a restore can reach.
// The controller proves the base backup restorable in a throw-away
// server. Batches of random rows are written with a pause between them. New
// Databases restore from its archive, each with its own credentials and
// database name: to the point the copy is consistent, to two times in the
// pauses, and to the latest point the archive holds; each holds exactly
// the rows committed by its target (count and checksum). With a segment
// deleted from the archive, a restore is refused, naming it, and no
// server starts. With a second base backup taken and the first deleted,
// the WAL only the first needed is pruned.
func TestPointInTimeRestore(t *testing.T) {
	parallel(t)
	cfg := e2eutil.LocalObjectStore(t, localDir)
	ns := e2eutil.NewNamespace(t)
	e2eutil.Kubectl(t, "-n", ns, "create", "secret", "generic", "store",
		"--from-literal=accessKeyID="+cfg.AccessKeyID, "--from-literal=secretAccessKey="+cfg.SecretAccessKey)
	prefix := "realnode/" + ns
	// Its base backups proven restorable, each in a throw-away server.
	e2eutil.KubectlIn(t, archivingYAML("ledger", 1, cfg, prefix)+"    verifyRestore: true\n", "-n", ns, "create", "-f", "-")
	db := e2eutil.WaitRunning(t, ns, "ledger", converge)
	runClient(t, ns, "ledger", postgresImage, psql+`-c "CREATE TABLE entries AS SELECT g AS n, md5(random()::text) AS v FROM generate_series(1, 1000) g"`)
	consistent := entriesSum(t, ns, "ledger")

	// A backup of a Database that archives: a base backup, unless it asks
	// for a dump.
	e2eutil.KubectlIn(t, "apiVersion: dbcontroller.io/v1alpha1\nkind: DatabaseBackup\nmetadata:\n  name: base-1\nspec:\n  database: ledger\n",
		"-n", ns, "create", "-f", "-")
	b := waitBackupCompleted(t, ns, "base-1")
	archive := fmt.Sprintf("%s/%s/ledger/%s", prefix, ns, db.UID)
	bb := b.Status.BaseBackup
	if b.Status.Method != dbv1alpha1.BackupMethodBaseBackup || bb == nil || bb.Archive != archive || bb.Timeline != 1 ||
		bb.StartLSN == "" || bb.StopLSN == "" || b.Status.Path != archive+"/base/base-1.tar" || b.Status.SizeBytes == nil {
		t.Fatalf("status of the base backup: %+v, base backup %+v; want method BaseBackup, its WAL range on timeline 1 in archive %s, and its file's size",
			b.Status, bb, archive)
	}
	start, err := wal.ParseLSN(bb.StartLSN)
	if err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.New(withPrefix(cfg, archive))
	if err != nil {
		t.Fatal(err)
	}
	objects, err := store.List(context.Background(), "base")
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) != 1 || objects[0].Key != "base/base-1.tar" || objects[0].Size != *b.Status.SizeBytes {
		t.Errorf("the store holds %+v under base/; want base-1.tar alone, of %d bytes", objects, *b.Status.SizeBytes)
	}
	t.Logf("base backup: %d bytes, WAL %s to %s", *b.Status.SizeBytes, bb.StartLSN, bb.StopLSN)

	// After the backup, rows 1001 to 2000; the first target time; rows
	// 2001 to 3000; the second; rows 3001 to 4000, and their file
	// completed at once (as archive_timeout would). Each batch of random
	// values, summed after it.
	batch := func(from int) string {
		runClient(t, ns, "ledger", postgresImage, psql+fmt.Sprintf(`-c "INSERT INTO entries SELECT g, md5(random()::text) FROM generate_series(%d, %d) g"`, from, from+999))
		return entriesSum(t, ns, "ledger")
	}
	pause := func() time.Time {
		at := time.Now().UTC().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(at.Add(1500 * time.Millisecond)))
		return at
	}
	atFirst := batch(1001)
	first := pause()
	atSecond := batch(2001)
	second := pause()
	latest := batch(3001)
	out := runClient(t, ns, "ledger", postgresImage, psql+`-c "SELECT pg_walfile_name(pg_current_wal_lsn())" -c "SELECT pg_switch_wal()"`)
	// psql prints the file's name, then the switch's LSN.
	last := walFileIn(t, out)
	var names []string
	e2eutil.Eventually(t, converge, "the last rows' file "+last+" archived", func() (bool, string) {
		objects, err := store.List(context.Background(), "wal")
		if err != nil {
			return false, err.Error()
		}
		names = names[:0]
		for _, o := range objects {
			names = append(names, path.Base(o.Key))
		}
		return slices.Contains(names, last), "the archive holds " + strings.Join(names, ", ")
	})
	// What a restore can reach: from base-1's consistent point to the
	// last archived file, which holds the last rows.
	e2eutil.Eventually(t, converge, "status.archive's recoverable window from base-1's completion to after the second target", func() (bool, string) {
		a := e2eutil.GetDB(t, ns, "ledger").Status.Archive
		return a != nil && a.FirstRecoverableTime != nil && a.FirstRecoverableTime.Equal(b.Status.CompletionTime) &&
			a.LastRecoverableTime != nil && a.LastRecoverableTime.After(second), fmt.Sprintf("status.archive %+v", a)
	})

	// base-1, restored into a throw-away server by the controller.
	var verified *dbv1alpha1.VerificationStatus
	e2eutil.Eventually(t, converge, "base-1 proven restorable", func() (bool, string) {
		verified = waitBackupCompleted(t, ns, "base-1").Status.Verification
		return verified != nil && verified.Phase == dbv1alpha1.VerificationRestorable, fmt.Sprintf("status.verification %+v", verified)
	})
	t.Logf("base-1 verified in %s: %s", verified.CompletionTime.Sub(verified.StartTime.Time), verified.Message)

	// The four restores are made at once and checked one after the other,
	// in this test: parallel subtests would each wait for a free slot of
	// the suite's -parallel, behind every other test (CI's run waited 12
	// minutes for them).
	// Each read with its own Secret's credentials and database name.
	restoreAtOnce(t, ns, "base-1", true, entriesSum, []restoreCase{
		{"consistent", "    backup: base-1\n", consistent},
		{"at-a-time", fmt.Sprintf("    database: ledger\n    targetTime: %s\n", first.Format(time.RFC3339)), atFirst},
		{"at-another", fmt.Sprintf("    database: ledger\n    targetTime: %s\n", second.Format(time.RFC3339)), atSecond},
		{"latest", "    database: ledger\n", latest},
	})

	// The segment after the base backup's first, deleted: refused, naming it.
	missing := wal.Segment{Timeline: 1, No: wal.SegmentOf(1, start, wal.DefaultSegmentSize).No + 1}.Name(wal.DefaultSegmentSize)
	if !slices.Contains(names, missing) {
		t.Fatalf("the archive holds %v, not %s", names, missing)
	}
	if err := store.Delete(context.Background(), "wal/"+missing); err != nil {
		t.Fatal(err)
	}
	e2eutil.KubectlIn(t, dbYAML("gap", "postgresql", "15", postgresImage, 1)+"  restore:\n    database: ledger\n", "-n", ns, "create", "-f", "-")
	e2eutil.Eventually(t, converge, "the restore across the gap refused", func() (bool, string) {
		d := e2eutil.GetDB(t, ns, "gap")
		c := meta.FindStatusCondition(d.Status.Conditions, dbv1alpha1.ConditionReady)
		if c == nil {
			return false, "no Ready condition"
		}
		return strings.Contains(c.Message, "refused") && strings.Contains(c.Message, missing), c.Reason + ": " + c.Message
	})
	var pod corev1.Pod
	e2eutil.GetJSON(t, &pod, "-n", ns, "get", "pod", "gap-0")
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.RestartCount > 0 {
			t.Errorf("container %s of gap-0 started: %+v", cs.Name, cs.State)
		}
	}

	// A second base backup, and the first deleted: the WAL before the
	// second's first segment is pruned; from that segment on it stays.
	e2eutil.KubectlIn(t, "apiVersion: dbcontroller.io/v1alpha1\nkind: DatabaseBackup\nmetadata:\n  name: base-2\nspec:\n  database: ledger\n",
		"-n", ns, "create", "-f", "-")
	base2 := waitBackupCompleted(t, ns, "base-2").Status.BaseBackup
	start2, err := wal.ParseLSN(base2.StartLSN)
	if err != nil {
		t.Fatal(err)
	}
	kept := wal.SegmentOf(uint32(base2.Timeline), start2, wal.DefaultSegmentSize)
	e2eutil.Kubectl(t, "-n", ns, "delete", "databasebackup", "base-1", "--timeout=2m")
	e2eutil.Eventually(t, converge, "the WAL before "+kept.Name(wal.DefaultSegmentSize)+" pruned", func() (bool, string) {
		objects, err := store.List(context.Background(), "wal")
		if err != nil {
			return false, err.Error()
		}
		names = names[:0]
		before := false
		for _, o := range objects {
			n := path.Base(o.Key)
			names = append(names, n)
			if seg, ok := wal.ParseSegment(n[:min(len(n), 24)], wal.DefaultSegmentSize); ok && seg.No < kept.No {
				before = true
			}
		}
		return !before, "the archive holds " + strings.Join(names, ", ")
	})
	if !slices.Contains(names, kept.Name(wal.DefaultSegmentSize)) {
		t.Errorf("after the pruning the archive holds %v, without %s, which base-2 needs", names, kept.Name(wal.DefaultSegmentSize))
	}
	t.Logf("pruned: the archive holds %s", strings.Join(names, ", "))
}

// entriesSum is the count of the Database's table entries and a checksum
// of its rows, read through its Secret's URI.
// restoreCase is a PostgreSQL 15 Database name made with spec.restore
// restore (its YAML), which must hold rows.
type restoreCase struct{ name, restore, rows string }

// restoreAtOnce makes the restores at once, then checks each, in the
// test: once it runs, its status.restore names backup (with the time it
// completed, when completed says so), and rows(its name) is its rows.
// (Not parallel subtests: each would wait for a free slot of the suite's
// -parallel, behind every other test.)
func restoreAtOnce(t *testing.T, ns, backup string, completed bool, rows func(t *testing.T, ns, db string) string, restores []restoreCase) {
	t.Helper()
	for _, tc := range restores {
		e2eutil.KubectlIn(t, dbYAML(tc.name, "postgresql", "15", postgresImage, 1)+"  restore:\n"+tc.restore, "-n", ns, "create", "-f", "-")
	}
	for _, tc := range restores {
		restored := e2eutil.WaitRunning(t, ns, tc.name, converge)
		if r := restored.Status.Restore; r == nil || r.Backup != backup || (completed && r.CompletionTime == nil) {
			t.Errorf("%s: status.restore %+v, want %s restored", tc.name, r, backup)
		}
		if got := rows(t, ns, tc.name); got != tc.rows {
			t.Errorf("%s holds rows (count and checksum) %s, want %s", tc.name, got, tc.rows)
		}
	}
}

func entriesSum(t *testing.T, ns, db string) string {
	t.Helper()
	return strings.TrimSpace(runClient(t, ns, db, postgresImage, psql+
		`-c "SELECT count(*) || ' ' || coalesce(md5(string_agg(n || ':' || v, ',' ORDER BY n)), '-') FROM entries"`))
}
