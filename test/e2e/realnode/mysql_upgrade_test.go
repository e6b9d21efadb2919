//go:build e2e

package realnode

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// mariadb118Image is MariaDB 11.8 from Debian trixie (hack/images/names.sh).
const mariadb118Image = "localhost/dbc/mariadb:11.8"

// mariadbFingerprint reads what must be the same after a series upgrade,
// on every server: the rows' checksum and a JSON path through them. (Not
// the table's next AUTO_INCREMENT value: the primary reserves more for a
// bulk insert than the replicas, which apply its rows, so it differs
// between servers before any upgrade.)
const mariadbFingerprint = `SELECT CONCAT(COUNT(*), ' ', SUM(CRC32(CONCAT_WS(',', id, v, j))), ' ', SUM(JSON_VALUE(j, '$.n'))) FROM items`

// A replicated MariaDB 10.11 Database, three servers with 100,000 rows,
// moves to 11.8 in place when spec.version says so, while a client writes.
// MariaDB reads the data of any earlier series, and a replica may be of a
// newer series than its primary: the replicas restart on 11.8 first, one
// at a time, each upgrading its system tables at its first start
// (mariadb-upgrade, MARIADB_AUTO_UPGRADE); then a switchover moves the
// primary to an upgraded replica, and the old primary restarts last. Every
// server has the same rows after, reports 11.8 and has its system tables
// upgraded; no acknowledged write is lost and no two pods are ever labelled
// primary. The seconds writes failed are reported against a dump and
// restore of the same data.
func TestMariaDBSeriesUpgradeInPlace(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("shift", "mysql", "10.11", mariadbImage, 3), "-n", ns, "create", "-f", "-")
	waitReplicating(t, ns, "shift", "three MariaDB 10.11 servers, one primary and two replicating")
	runClient(t, ns, "shift", mariadbImage, waitMySQL+mysqlSQL+
		`"CREATE TABLE items (id INT PRIMARY KEY AUTO_INCREMENT, v CHAR(32), j JSON); INSERT INTO items (v, j) SELECT MD5(seq), JSON_OBJECT('n', seq) FROM seq_1_to_100000"`)
	before := strings.TrimSpace(runClient(t, ns, "shift", mariadbImage, waitMySQL+mysqlSQL+fmt.Sprintf("%q", mariadbFingerprint)))
	if !strings.HasPrefix(before, "100000 ") {
		t.Fatalf("the seeded rows: %q", before)
	}
	checkEveryPodHas(t, ns, "shift", mariadbFingerprint, before)
	roles := watchRoles(t, ns, "shift")
	defer roles.finish(t)

	writer := startMySQLWriter(t, ns, "shift", writerBound)
	writer.waitAcknowledged(t, 20)
	asked := time.Now()
	setVersion(t, ns, "shift", "11.8", mariadb118Image)
	e2eutil.Eventually(t, 3*converge, "MariaDB 11.8 on three servers, replicating", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "shift")
		running, why := e2eutil.IsRunning(db)
		st, reason, msg := e2eutil.Condition(db, "Replicating")
		return running && st == "True" && db.Status.CurrentVersion == "11.8",
			fmt.Sprintf("%s; Replicating=%s/%s (%s); currentVersion %s", why, st, reason, msg, db.Status.CurrentVersion)
	})
	took := time.Since(asked)
	t.Logf("in-place upgrade 10.11 → 11.8 of three servers, 100,000 rows: %s from the change of spec.version to Running on 11.8", took.Round(time.Second))

	// The order: the replicas' pods first, the old primary's last, after a
	// switchover moved the primary away from it.
	created := map[string]time.Time{}
	for _, pod := range []string{"shift-0", "shift-1", "shift-2"} {
		var p corev1.Pod
		e2eutil.GetJSON(t, &p, "-n", ns, "get", "pod", pod)
		at := p.CreationTimestamp.Time
		created[pod] = at
		if at.Before(asked.Truncate(time.Second)) {
			t.Errorf("pod %s was not restarted by the upgrade (created %s)", pod, at)
		}
	}
	if !created["shift-0"].After(created["shift-1"]) || !created["shift-0"].After(created["shift-2"]) {
		t.Errorf("the old primary's pod was not restarted last: %v", created)
	}
	events := dbEvents(t, ns, "shift")
	if !strings.Contains(strings.Join(events, "\n"), "in place of shift-0") {
		t.Errorf("no switchover away from shift-0 among the events:\n%s", strings.Join(events, "\n"))
	}
	for _, e := range events {
		if strings.Contains(e, "Restarting") || strings.Contains(e, "primary") {
			t.Logf("event: %s", e)
		}
	}

	// Every server reports 11.8, has the rows, and had its system tables
	// upgraded by mariadb-upgrade at its first start on 11.8.
	checkEveryPodHas(t, ns, "shift", "SELECT LEFT(VERSION(), 5)", "11.8.")
	checkEveryPodHas(t, ns, "shift", mariadbFingerprint, before)
	for _, pod := range []string{"shift-0", "shift-1", "shift-2"} {
		info, err := e2eutil.KubectlRun("", "-n", ns, "exec", pod, "-c", "mysql", "--", "cat", "/var/lib/mysql/mariadb_upgrade_info")
		if err != nil || !strings.HasPrefix(string(info), "11.8.") {
			t.Errorf("%s: mariadb_upgrade_info says %q (%v), want 11.8.*: mariadb-upgrade did not run", pod, info, err)
		}
		logs := e2eutil.Kubectl(t, "-n", ns, "logs", pod, "-c", "mysql")
		if line := lineWith(logs, "upgraded the system tables"); line == "" {
			t.Errorf("%s: the entrypoint did not upgrade the system tables:\n%s", pod, logs)
		} else {
			t.Logf("%s: %s", pod, line)
		}
	}

	w := parseWrites(t, writer.finish(t, 20))
	from, until := w.outage(float64(asked.UnixNano()) / 1e9)
	t.Logf("the in-place series upgrade: writes failed for %.1f s (%.1f s to %.1f s after the change)", until-from,
		from-float64(asked.UnixNano())/1e9, until-float64(asked.UnixNano())/1e9)
	lost := w.lostMySQL(t, ns, "shift")
	w.report(t, "the in-place series upgrade", lost, 20)
	if len(lost) > 0 {
		t.Errorf("acknowledged writes lost across the series upgrade: %v", lost)
	}

	// What the other way costs: a dump of the same data and its load into
	// a new database on the same server.
	out := runClient(t, ns, "shift", mariadb118Image, `set -e
export MYSQL_PWD="$PASSWORD"
start=$(date +%s.%N)
mariadb-dump -h "$HOST" -P "$PORT" -u "$USERNAME" --single-transaction "$DATABASE" items > dump.sql
dumped=$(date +%s.%N)
mariadb -h "$HOST" -P "$PORT" -u "$USERNAME" -e "CREATE DATABASE restored"
mariadb -h "$HOST" -P "$PORT" -u "$USERNAME" restored < dump.sql
restored=$(date +%s.%N)
awk -v a="$start" -v b="$dumped" -v c="$restored" 'BEGIN { printf "dump %.1f s, restore %.1f s\n", b - a, c - b }'`)
	// (The 11.8 client warns that it cannot verify the server's
	// certificate with a password from the environment: only the figures.)
	t.Logf("a dump and restore of the same rows: %s", lineWith(out, "dump "))
}
