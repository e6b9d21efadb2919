//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

func waitBackupCompleted(t testing.TB, ns, name string) *dbv1alpha1.DatabaseBackup {
	t.Helper()
	var b *dbv1alpha1.DatabaseBackup
	e2eutil.Eventually(t, converge, "DatabaseBackup "+name+" to complete", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "get", "databasebackup", name, "-o", "jsonpath={.status.phase}")
		if err != nil {
			return false, "not there yet"
		}
		if strings.TrimSpace(string(out)) == string(dbv1alpha1.BackupFailed) {
			t.Fatalf("DatabaseBackup %s failed: %+v", name, e2eutil.GetBackup(t, ns, name).Status)
		}
		b = e2eutil.GetBackup(t, ns, name)
		return b.Status.Phase == dbv1alpha1.BackupCompleted, "phase " + string(b.Status.Phase) + ": " + b.Status.Message
	})
	return b
}

// engineCase is how one engine's client writes and reads rows.
type engineCase struct {
	engine, version, image string
	// write adds rows numbered from, to; count prints "count:sum".
	write func(from, to int) string
	count string
	// objectStore sends the backups to the local object store instead of
	// the backup volume.
	objectStore bool
}

var backupCases = []engineCase{
	{engine: "postgresql", version: "15", image: postgresImage,
		write: func(from, to int) string {
			return psql + fmt.Sprintf(`-c "CREATE TABLE IF NOT EXISTS rows (n int, label text)" -c "INSERT INTO rows SELECT g, 'row ' || g FROM generate_series(%d, %d) g"`, from, to)
		},
		count: psql + `-c "SELECT count(*) || ':' || sum(n) || ':' || md5(string_agg(label, ',' ORDER BY n)) FROM rows"`},
	{engine: "mysql", version: "8.4", image: mariadbImage,
		write: func(from, to int) string {
			return waitMariaDB + fmt.Sprintf(`mariadb -h "$HOST" -P "$PORT" -u "$USERNAME" -p"$PASSWORD" "$DATABASE" -N -e "CREATE TABLE IF NOT EXISTS rows_ (n INT, label VARCHAR(20)); INSERT INTO rows_ SELECT seq, CONCAT('row ', seq) FROM seq_%d_to_%d"`, from, to)
		},
		count:       waitMariaDB + `mariadb -h "$HOST" -P "$PORT" -u "$USERNAME" -p"$PASSWORD" "$DATABASE" -N -e "SELECT CONCAT(COUNT(*), ':', SUM(n), ':', MD5(GROUP_CONCAT(label ORDER BY n))) FROM rows_"`,
		objectStore: true},
}

// Rows written, an on-demand backup, more rows, a delete that takes the
// final backup, a restore of it into a new Database: the rows are equal,
// all of them. Then the on-demand backup restores the rows it held.
// PostgreSQL's backups go to the backup volume; MariaDB's to the local
// object store (no backup volume is made; the files are under the
// Database's UID; the restores read them with no Database to ask; deleting
// a DatabaseBackup deletes its file from the store).
func TestBackupDeleteAndRestore(t *testing.T) {
	t.Parallel()
	for _, tc := range backupCases {
		name := tc.engine
		if tc.objectStore {
			name += " to an object store"
		}
		t.Run(name, func(t *testing.T) {
			parallel(t)
			ns := e2eutil.NewNamespace(t)
			backup := "  backup: {}\n"
			var store *objectstore.Store
			if tc.objectStore {
				cfg := e2eutil.LocalObjectStore(t, localDir)
				e2eutil.Kubectl(t, "-n", ns, "create", "secret", "generic", "store",
					"--from-literal=accessKeyID="+cfg.AccessKeyID, "--from-literal=secretAccessKey="+cfg.SecretAccessKey)
				backup = fmt.Sprintf("  backup:\n    objectStore:\n      endpoint: %s\n      bucket: %s\n      prefix: realnode/%s\n      region: %s\n      credentialsSecret: {name: store}\n",
					cfg.Endpoint, cfg.Bucket, ns, cfg.Region)
				cfg.Prefix = "realnode/" + ns
				var err error
				if store, err = objectstore.New(cfg); err != nil {
					t.Fatal(err)
				}
			}
			e2eutil.KubectlIn(t, dbYAML("shop", tc.engine, tc.version, tc.image, 1)+backup, "-n", ns, "create", "-f", "-")
			db := e2eutil.WaitRunning(t, ns, "shop", converge)
			runClient(t, ns, "shop", tc.image, tc.write(1, 500))
			early := strings.TrimSpace(runClient(t, ns, "shop", tc.image, tc.count))

			e2eutil.KubectlIn(t, "apiVersion: dbcontroller.io/v1alpha1\nkind: DatabaseBackup\nmetadata:\n  name: shop-now\nspec:\n  database: shop\n", "-n", ns, "create", "-f", "-")
			now := waitBackupCompleted(t, ns, "shop-now")
			if now.Status.SizeBytes == nil || *now.Status.SizeBytes <= 0 {
				t.Errorf("on-demand backup size %v", now.Status.SizeBytes)
			}
			if store != nil {
				// The file is where the status says, of the size it says,
				// under the Database's UID; and no backup volume was made.
				want := fmt.Sprintf("realnode/%s/%s/shop/%s/dumps/shop-now.sql", ns, ns, db.UID)
				if now.Status.Path != want || now.Status.Volume != "" || now.Status.ObjectStore == nil {
					t.Errorf("status: path %q, volume %q, objectStore %+v; want path %q in the store", now.Status.Path, now.Status.Volume, now.Status.ObjectStore, want)
				}
				objects, err := store.List(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				if len(objects) != 1 || "realnode/"+ns+"/"+objects[0].Key != want || now.Status.SizeBytes == nil || objects[0].Size != *now.Status.SizeBytes {
					t.Errorf("the store holds %+v; want %s alone, of %v bytes", objects, want, now.Status.SizeBytes)
				}
				if out, err := e2eutil.KubectlRun("", "-n", ns, "get", "pvc", "shop-backups"); err == nil {
					t.Errorf("a backup volume was made for a Database with an object store: %s", out)
				}
			}
			runClient(t, ns, "shop", tc.image, tc.write(501, 1200))
			full := strings.TrimSpace(runClient(t, ns, "shop", tc.image, tc.count))
			if !strings.HasPrefix(full, "1200:") {
				t.Fatalf("rows before the delete: %q", full)
			}

			start := time.Now()
			e2eutil.Kubectl(t, "-n", ns, "delete", "db", "shop", "--wait=false")
			e2eutil.Eventually(t, converge, "the Database to go after its final backup", func() (bool, string) {
				_, err := e2eutil.KubectlRun("", "-n", ns, "get", "db", "shop")
				return err != nil, "still there"
			})
			final := "shop-final-" + string(db.UID)[:8]
			b := waitBackupCompleted(t, ns, final)
			t.Logf("delete with its final backup took %s; the final backup is %d bytes", time.Since(start).Round(time.Second), *b.Status.SizeBytes)

			e2eutil.KubectlIn(t, dbYAML("restored", tc.engine, tc.version, tc.image, 1)+"  restore:\n    backup: "+final+"\n", "-n", ns, "create", "-f", "-")
			restored := e2eutil.WaitRunning(t, ns, "restored", converge)
			if restored.Status.Restore == nil || restored.Status.Restore.CompletionTime == nil {
				t.Errorf("status.restore %+v", restored.Status.Restore)
			}
			if got := strings.TrimSpace(runClient(t, ns, "restored", tc.image, tc.count)); got != full {
				t.Errorf("rows restored from the final backup %q, want %q", got, full)
			}
			// The restored Database no longer mounts the backup's volume.
			out := e2eutil.Kubectl(t, "-n", ns, "get", "statefulset", "restored", "-o", "jsonpath={.spec.template.spec.volumes[*].name}")
			if strings.Contains(out, "restore") {
				t.Errorf("the restored StatefulSet still has volumes %q", out)
			}

			e2eutil.KubectlIn(t, dbYAML("early", tc.engine, tc.version, tc.image, 1)+"  restore:\n    backup: shop-now\n", "-n", ns, "create", "-f", "-")
			e2eutil.WaitRunning(t, ns, "early", converge)
			if got := strings.TrimSpace(runClient(t, ns, "early", tc.image, tc.count)); got != early {
				t.Errorf("rows restored from the on-demand backup %q, want %q", got, early)
			}
			if store != nil {
				// Deleting a DatabaseBackup deletes its file from the store,
				// and the other backup's stays.
				e2eutil.Kubectl(t, "-n", ns, "delete", "databasebackup", "shop-now", "--timeout=2m")
				objects, err := store.List(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				if len(objects) != 1 || !strings.HasSuffix(objects[0].Key, "/dumps/"+final+".sql") {
					t.Errorf("after deleting shop-now, the store holds %+v; want %s.sql alone", objects, final)
				}
			}
		})
	}
}

// A Database deleted under Retain and made again with the same name serves
// its old data with its old credentials: the Secret stayed with the volume.
func TestRetainDeleteAndRecreateKeepsCredentials(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("again", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "again", converge)
	runClient(t, ns, "again", postgresImage, psql+`-c "CREATE TABLE kept (v text)" -c "INSERT INTO kept VALUES ('before')"`)
	password := secretValue(t, ns, "again", "password")

	e2eutil.Kubectl(t, "-n", ns, "delete", "db", "again")
	e2eutil.Eventually(t, converge, "the pod to go", func() (bool, string) {
		return podUID(t, ns, "again") == "", "pod still there"
	})
	if got := secretValue(t, ns, "again", "password"); got != password {
		t.Fatal("the kept Secret's password changed")
	}
	e2eutil.KubectlIn(t, dbYAML("again", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "again", converge)
	if got := secretValue(t, ns, "again", "password"); got != password {
		t.Error("the Database made again minted a new password")
	}
	if got := strings.TrimSpace(runClient(t, ns, "again", postgresImage, psql+`-c "SELECT string_agg(v, ',') FROM kept"`)); got != "before" {
		t.Errorf("rows through the kept credentials: %q", got)
	}
}
