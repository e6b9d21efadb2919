//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// archivingYAML is a PostgreSQL Database of replicas that archives its WAL
// to the local object store under prefix, with the keys of the Secret store.
func archivingYAML(name string, replicas int, cfg objectstore.Config, prefix string) string {
	return dbYAML(name, "postgresql", "15", postgresImage, replicas) + fmt.Sprintf(`  backup:
    objectStore:
      endpoint: %s
      bucket: %s
      prefix: %s
      region: %s
      credentialsSecret: {name: store}
    continuous:
      archiveTimeoutSeconds: 10
`, cfg.Endpoint, cfg.Bucket, prefix, cfg.Region)
}

// waitArchiving waits until db's ContinuousArchiving condition has reason
// and, for Archiving, status.archive names a file archived after after.
func waitArchiving(t *testing.T, ns, name, reason string) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	e2eutil.Eventually(t, converge, "ContinuousArchiving "+reason, func() (bool, string) {
		db = e2eutil.GetDB(t, ns, name)
		c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving)
		if c == nil {
			return false, "no condition"
		}
		return c.Reason == reason, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	})
	return db
}

// A PostgreSQL Database archives each WAL file its primary completes to
// the object store, and status.archive and the ContinuousArchiving
// condition say so; a file written to and left partial is completed by
// archive_timeout, even just after the server started. With keys the store refuses, it serves on, and the
// condition says why in the store's words; with the keys mended and the
// server restarted, it archives what it kept, the file that failed first.
// With no Secret at all, the server starts and serves all the same, and the
// condition says what is missing. After a switchover, the new primary
// archives its timeline's history file and its files.
func TestContinuousArchiving(t *testing.T) {
	t.Parallel()
	cfg := e2eutil.LocalObjectStore(t, localDir)
	for _, name := range []string{"archives", "refused, then mended", "no Secret", "after a switchover"} {
		wrongKeys := name == "refused, then mended"
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := e2eutil.NewNamespace(t)
			secret := cfg.SecretAccessKey
			if wrongKeys {
				secret = "wrong"
			}
			if name != "no Secret" {
				e2eutil.Kubectl(t, "-n", ns, "create", "secret", "generic", "store",
					"--from-literal=accessKeyID="+cfg.AccessKeyID, "--from-literal=secretAccessKey="+secret)
			}
			prefix := "realnode/" + ns
			if name == "after a switchover" {
				e2eutil.KubectlIn(t, archivingYAML("ledger", 2, cfg, prefix), "-n", ns, "create", "-f", "-")
				db := waitReplicating(t, ns, "ledger", "two replicas, one primary and one streaming")
				runClient(t, ns, "ledger", postgresImage, psql+`-c "CREATE TABLE entries AS SELECT g AS n FROM generate_series(1, 1000) g"`)
				switchOver(t, ns, db)
				// The new primary's first file of its timeline, completed at once.
				runClient(t, ns, "ledger", postgresImage, psql+`-c "INSERT INTO entries SELECT generate_series(1001, 2000)" -c "SELECT pg_switch_wal()"`)
				store, err := objectstore.New(withPrefix(cfg, prefix))
				if err != nil {
					t.Fatal(err)
				}
				e2eutil.Eventually(t, converge, "the history file of timeline 2 in the store, and a file of timeline 2 archived", func() (bool, string) {
					objects, err := store.List(context.Background(), fmt.Sprintf("%s/ledger/%s/wal", ns, db.UID))
					if err != nil {
						return false, err.Error()
					}
					var names []string
					for _, o := range objects {
						names = append(names, o.Key[strings.LastIndex(o.Key, "/")+1:])
					}
					a := e2eutil.GetDB(t, ns, "ledger").Status.Archive
					return slices.Contains(names, "00000002.history") && a != nil && strings.HasPrefix(a.LastArchivedWAL, "00000002") &&
						!strings.HasSuffix(a.LastArchivedWAL, ".history"), fmt.Sprintf("status.archive %+v; the store holds %v", a, names)
				})
				return
			}
			e2eutil.KubectlIn(t, archivingYAML("ledger", 1, cfg, prefix), "-n", ns, "create", "-f", "-")
			db := e2eutil.WaitRunning(t, ns, "ledger", converge)
			if name == "archives" {
				archivesOnTimeout(t, ns, cfg, prefix, db)
				return
			}
			// Writes, then a file completed at once (as archive_timeout would).
			runClient(t, ns, "ledger", postgresImage, psql+`-c "CREATE TABLE entries AS SELECT g AS n FROM generate_series(1, 10000) g" -c "SELECT pg_switch_wal()"`)

			if name == "no Secret" {
				db = waitArchiving(t, ns, "ledger", "ArchivingFailed")
				c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving)
				if !strings.Contains(c.Message, "no access key id or secret access key") || db.Status.Phase != dbv1alpha1.PhaseRunning {
					t.Errorf("phase %s, condition %q: want Running, and the keys named as missing", db.Status.Phase, c.Message)
				}
				return
			}
			if wrongKeys {
				db = waitArchiving(t, ns, "ledger", "ArchivingFailed")
				c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving)
				t.Logf("refused: %s", c.Message)
				if !strings.Contains(c.Message, "Access Denied") || db.Status.Archive == nil || db.Status.Archive.LastFailedWAL == "" {
					t.Errorf("condition %q, archive %+v: want the store's refusal (Access Denied) and the file that failed", c.Message, db.Status.Archive)
				}
				if db.Status.Phase != dbv1alpha1.PhaseRunning {
					t.Errorf("phase %s while archiving fails, want Running: the server serves", db.Status.Phase)
				}
				failed := db.Status.Archive.LastFailedWAL
				e2eutil.KubectlIn(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"store"},"stringData":{"accessKeyID":%q,"secretAccessKey":%q}}`,
					cfg.AccessKeyID, cfg.SecretAccessKey), "-n", ns, "apply", "-f", "-")
				// The keys are the server's environment: it reads them at its start.
				e2eutil.Kubectl(t, "-n", ns, "delete", "pod", "ledger-0")
				db = waitArchiving(t, ns, "ledger", "Archiving")
				store, err := objectstore.New(withPrefix(cfg, prefix))
				if err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprintf("%s/ledger/%s/wal/%s", ns, db.UID, failed)
				if r, err := store.Get(context.Background(), key); err != nil {
					t.Errorf("the file that failed, %s, is not in the store once the keys are mended: %v", key, err)
				} else {
					r.Close()
				}
			}
		})
	}
}

// archiveBound is how long the test gives a written, partial WAL file to
// reach the store with no WAL switch asked for: archiveTimeoutSeconds (10)
// plus the controller's ArchivePoll (30 s), which wakes a freshly started
// server's checkpointer, with room for a busy machine. A server left to
// itself takes up to checkpoint_timeout (5 minutes) after its start.
const archiveBound = 2 * time.Minute

// archivesOnTimeout writes to a Database that started moments ago and asks
// for no WAL switch: archive_timeout completes the partial file, which
// reaches the store whole (16 MiB) within archiveBound, and status.archive
// names it.
func archivesOnTimeout(t *testing.T, ns string, cfg objectstore.Config, prefix string, db *dbv1alpha1.Database) {
	out := runClient(t, ns, "ledger", postgresImage, psql+`-c "CREATE TABLE entries AS SELECT g AS n FROM generate_series(1, 10000) g" -c "SELECT pg_walfile_name(pg_current_wal_lsn())"`)
	written := time.Now()
	lines := strings.Fields(out)
	if len(lines) == 0 {
		t.Fatalf("no WAL file name in %q", out)
	}
	file := lines[len(lines)-1]
	store, err := objectstore.New(withPrefix(cfg, prefix))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	e2eutil.Eventually(t, archiveBound, file+", written to and not switched, archived whole", func() (bool, string) {
		objects, err := store.List(context.Background(), fmt.Sprintf("%s/ledger/%s/wal", ns, db.UID))
		if err != nil {
			return false, err.Error()
		}
		listed = listed[:0]
		found := false
		for _, o := range objects {
			listed = append(listed, fmt.Sprintf("%s (%d)", o.Key[strings.LastIndex(o.Key, "/")+1:], o.Size))
			found = found || strings.HasSuffix(o.Key, "/wal/"+file) && o.Size == 16<<20
		}
		return found, "the store holds " + strings.Join(listed, ", ")
	})
	t.Logf("%s archived %.0f s after the write; the store holds %s", file, time.Since(written).Seconds(), strings.Join(listed, ", "))
	db = waitArchiving(t, ns, "ledger", "Archiving")
	if a := db.Status.Archive; a == nil || a.LastArchivedWAL < file || a.LastArchivedTime == nil {
		t.Errorf("status.archive %+v, want %s or later archived, with its time", a, file)
	}
}

func withPrefix(cfg objectstore.Config, prefix string) objectstore.Config {
	cfg.Prefix = prefix
	return cfg
}
