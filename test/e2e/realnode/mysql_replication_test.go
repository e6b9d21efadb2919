//go:build e2e

package realnode

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// mysqlWriterScript is writerScript for MySQL: it inserts 1, 2, 3, ...
// through the Secret's host, one connection per row, for seconds, at the
// same pace.
const mysqlWriterScript = `end=$(( $(date +%%s) + %d ))
i=0
while [ "$(date +%%s)" -lt "$end" ] && [ ! -e /tmp/stop ]; do
  i=$((i + 1))
  if err=$(MYSQL_PWD="$PASSWORD" mysql ${TLS:-} -h "$HOST" -P "$PORT" -u "$USERNAME" --connect-timeout=${CONNECT_TIMEOUT:-1} "$DATABASE" -e "INSERT INTO w VALUES ($i)" 2>&1 >/dev/null); then
    echo "ok $i $(date +%%s.%%N)"; sleep ` + writerPause + `
  else
    echo "fail $i $(date +%%s.%%N) $(printf '%%s' "$err" | tr '\n' ' ' | cut -c1-300)"; sleep 0.1
  fi
done`

// mysqlSQL runs SQL as the Secret's user on the server at the host the
// script puts in $H (the client Service's when unset).
const mysqlSQL = `MYSQL_PWD="$PASSWORD" mysql -h "${H:-$HOST}" -P "$PORT" -u "$USERNAME" --connect-timeout=3 -N -s "$DATABASE" -e `

// A 3-replica MySQL 9.7 Database on real servers: the replicas are cloned
// from the primary and replicate its transactions by GTID; rows written
// through the client Service are read through the read-only Service, from
// a server that refuses writes, and every pod has every row. The
// primary's pod is deleted while a client writes: a replica is promoted,
// the client Service follows it, writes go on, and the old primary comes
// back as a replica. A switchover to a named replica while the client
// writes loses no acknowledged write. The primary's server is killed with
// SIGKILL: a replica is promoted, and the old primary, restarted by the
// kubelet as the primary it was, is fenced and rejoins. No two pods are
// ever labelled primary at once, and at the end every pod has every row.
func TestMySQLReplication(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	yaml := mysqlYAML("shelf", "9.7", mysqlImage, 3) +
		"  replication:\n    failoverDelaySeconds: 0\n"
	e2eutil.KubectlIn(t, yaml, "-n", ns, "create", "-f", "-")
	start := time.Now()
	db := waitReplicating(t, ns, "shelf", "three MySQL replicas, one primary and two replicating")
	t.Logf("3 replicas Running and replicating after %s; primary %s", time.Since(start).Round(time.Second), db.Status.Replication.Primary)
	if got := db.Status.Replication.Primary; got != "shelf-0" {
		t.Errorf("first primary = %q, want shelf-0 (it initialises the data)", got)
	}
	roles := watchRoles(t, ns, "shelf")
	defer roles.finish(t)

	// 1. Written through the client Service, read through the read-only one.
	runClient(t, ns, "shelf", mysqlImage, waitMySQL+mysqlSQL+`"CREATE TABLE w (n INT PRIMARY KEY); CREATE TABLE seeded (n INT); SET SESSION cte_max_recursion_depth = 10000; INSERT INTO seeded WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000) SELECT n FROM s"`)
	written := time.Now()
	out := runClient(t, ns, "shelf", mysqlImage, `H="$RO_HOST"
for i in $(seq 100); do
  got=$(`+mysqlSQL+`"SELECT COUNT(*) FROM seeded" 2>/dev/null); [ "$got" = 1000 ] && break
  sleep 0.1
done
[ "$got" = 1000 ] || { echo "replicas never showed the rows: $got"; exit 1; }
echo "read $got from $(`+mysqlSQL+`"SELECT CONCAT(@@hostname, ' super_read_only=', @@super_read_only)")"
`+mysqlSQL+`"INSERT INTO seeded VALUES (0)" 2>&1 || true`, "ro-host")
	t.Logf("rows written through the client Service read through the read-only Service %s later: %s", time.Since(written).Round(100*time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(out, "super_read_only=1") || !strings.Contains(out, "ERROR 1290") {
		t.Errorf("the read-only Service reached a server that does not refuse writes:\n%s", out)
	}
	checkEveryPodHas(t, ns, "shelf", "SELECT CONCAT(COUNT(*), ':', SUM(n)) FROM seeded", "1000:500500")

	// 2.–4. A failover, a switchover and a SIGKILL while a client writes.
	checkFailovers(t, ns, "shelf")

	total := strings.TrimSpace(runClient(t, ns, "shelf", mysqlImage, waitMySQL+mysqlSQL+`"SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(n), 0)) FROM w"`))
	checkEveryPodHas(t, ns, "shelf", "SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(n), 0)) FROM w", total)
	checkEveryPodHas(t, ns, "shelf", "SELECT CONCAT(COUNT(*), ':', SUM(n)) FROM seeded", "1000:500500")

	// 5. A backup dumps a replica, not the primary, and restores every row.
	checkBackupOfAReplica(t, ns, "shelf", func(name string) string { return mysqlYAML(name, "9.7", mysqlImage, 1) }, mysqlImage,
		waitMySQL+mysqlSQL+`"SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(n), 0)) FROM w"`, total)
}

// checkFailovers runs, on the replicated mysql Database name, while a
// client writes: a failover after the primary's pod is deleted, a
// switchover to a named replica (which loses no acknowledged write), then,
// unpinned, a SIGKILL of the primary's server, and reports what each lost.
func checkFailovers(t *testing.T, ns, name string) {
	t.Helper()
	// Failover: the primary's pod is deleted.
	w := startMySQLFailover(t, ns, name)
	lost := w.lostMySQL(t, ns, name)
	w.report(t, "failover (asynchronous replication)", lost, 50)

	// Switchover to a named replica while the client writes: the old
	// primary is fenced, the target receives all it wrote, then is
	// promoted.
	writer := startMySQLWriter(t, ns, name, writerBound)
	writer.waitAcknowledged(t, 3)
	db := waitReplicating(t, ns, name, "every replica replicating before the switchover")
	asked := switchOver(t, ns, db)
	w = parseWrites(t, writer.finish(t, 20))
	from, until := w.outage(float64(asked.UnixNano()) / 1e9)
	t.Logf("switchover: writes failed for %.1f s", until-from)
	lost = w.lostMySQL(t, ns, name)
	w.report(t, "switchover", lost, 20)
	if len(lost) > 0 {
		t.Errorf("acknowledged writes lost across a switchover: %v", lost)
	}
	// Unpinned, so that a failover may choose any replica.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+name, "--type=json", "-p", `[{"op":"remove","path":"/spec/replication/primary"}]`)

	// The primary's server is killed with SIGKILL while the client
	// writes: what asynchronous replication loses is counted (and set
	// aside in the old primary's volume, if it held any).
	w = killPrimaryWhileWriting(t, ns, name)
	lost = w.lostMySQL(t, ns, name)
	w.report(t, "SIGKILL (asynchronous replication)", lost, 20)
}

// checkBackupOfAReplica takes a backup of the replicated Database name
// (its spec gets a backup volume), checks that its Job dumped a pod that
// was a replica, and restores it into a Database <name>-copy, which
// single(<name>-copy) describes, where count, run by a client of image,
// must print want.
func checkBackupOfAReplica(t *testing.T, ns, name string, single func(string) string, image, count, want string) {
	t.Helper()
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+name, "--type=merge", "-p", `{"spec":{"backup":{}}}`)
	db := waitReplicating(t, ns, name, "every replica replicating before the backup")
	replicas := map[string]bool{}
	for _, i := range db.Status.Replication.Instances {
		if i.Role == dbv1alpha1.RoleReplica && i.Streaming {
			replicas[i.Name] = true
		}
	}
	backup := name + "-from-a-replica"
	e2eutil.KubectlIn(t, "apiVersion: dbcontroller.io/v1alpha1\nkind: DatabaseBackup\nmetadata:\n  name: "+backup+"\nspec:\n  database: "+name+"\n", "-n", ns, "create", "-f", "-")
	b := waitBackupCompleted(t, ns, backup)
	host := e2eutil.Kubectl(t, "-n", ns, "get", "job", backup, "-o", `jsonpath={.spec.template.spec.containers[0].env[?(@.name=="HOST")].value}`)
	pod, _, _ := strings.Cut(host, ".")
	t.Logf("backup %s: %d bytes, dumped from %s (primary %s)", backup, *b.Status.SizeBytes, pod, db.Status.Replication.Primary)
	if !replicas[pod] {
		t.Errorf("the backup dumped %s, which was no streaming replica (replicas: %v, primary %s)", host, replicas, db.Status.Replication.Primary)
	}
	copyName := name + "-copy"
	e2eutil.KubectlIn(t, single(copyName)+"  restore:\n    backup: "+backup+"\n", "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, copyName, converge)
	if got := strings.TrimSpace(runClient(t, ns, copyName, image, count)); got != want {
		t.Errorf("rows restored from the backup of a replica: %q, want %q", got, want)
	}
}

// startMySQLFailover deletes the pod of the Database's primary while a
// client writes, waits until another pod is the primary and the old one
// replicates from it, and returns what the client saw.
func startMySQLFailover(t *testing.T, ns, name string) writeLog {
	t.Helper()
	writer := startMySQLWriter(t, ns, name, writerBound)
	writer.waitAcknowledged(t, 3)
	old := primaryOf(t, ns, name)
	killed := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", old, "--wait=false")
	e2eutil.Eventually(t, converge, "a new primary", func() (bool, string) {
		p := primaryOf(t, ns, name)
		return p != old && p != "", "primary " + p
	})
	t.Logf("deleted primary %s; %s is the primary %s later", old, primaryOf(t, ns, name), time.Since(killed).Round(100*time.Millisecond))
	db := waitReplicating(t, ns, name, "the old primary to come back as a replica")
	for _, i := range db.Status.Replication.Instances {
		if i.Name == old && (i.Role != dbv1alpha1.RoleReplica || !i.Streaming) {
			t.Errorf("the old primary %s: %+v, want a replica that replicates", old, i)
		}
	}
	t.Logf("%s replicates from %s %s after the delete", old, db.Status.Replication.Primary, time.Since(killed).Round(100*time.Millisecond))
	w := parseWrites(t, writer.finish(t, 50))
	from, until := w.outage(float64(killed.UnixNano()) / 1e9)
	t.Logf("failover: writes failed for %.1f s (from %.1f s to %.1f s after the delete)", until-from,
		from-float64(killed.UnixNano())/1e9, until-float64(killed.UnixNano())/1e9)
	return w
}

func startMySQLWriter(t testing.TB, ns, db string, seconds int) *writer {
	t.Helper()
	// Each writer numbers its rows from 1: the table starts empty.
	image := imageOf(t, ns, db)
	runClient(t, ns, db, image, waitMySQL+mysqlSQL+`"CREATE TABLE IF NOT EXISTS w (n INT PRIMARY KEY); DELETE FROM w"`)
	name := "writer-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	e2eutil.KubectlIn(t, clientPod(name, db, image, fmt.Sprintf(mysqlWriterScript, seconds), "host", "port", "username", "password", "database"),
		"-n", ns, "create", "-f", "-")
	e2eutil.Eventually(t, converge, "writer pod "+name+" to run", func() (bool, string) {
		phase := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}"))
		return phase == "Running" || phase == "Succeeded", "phase " + phase
	})
	return &writer{ns: ns, pod: name}
}

// lostMySQL are the rows the writer saw acknowledged that table w of the
// MySQL Database does not hold, read through the client Service.
func (w writeLog) lostMySQL(t testing.TB, ns, db string) []int {
	t.Helper()
	rows := runClient(t, ns, db, imageOf(t, ns, db), waitMySQL+mysqlSQL+`"SELECT n FROM w ORDER BY n"`)
	have := map[int]bool{}
	for _, f := range strings.Fields(rows) {
		n, _ := strconv.Atoi(f)
		have[n] = true
	}
	var lost []int
	for _, n := range w.acked {
		if !have[n] {
			lost = append(lost, n)
		}
	}
	return lost
}

// imageOf is the image of the mysql Database db, MySQL's or MariaDB's:
// the clients a test runs against it run in it (a MySQL 9 client cannot
// log in to MariaDB, whose accounts use mysql_native_password).
func imageOf(t testing.TB, ns, db string) string {
	t.Helper()
	return e2eutil.GetDB(t, ns, db).Spec.Image
}

// serverProgram is the server's program in image.
func serverProgram(image string) string {
	if image == mariadbImage {
		return "mariadbd"
	}
	return "mysqld"
}

// checkEveryPodHas runs query on each pod of the Database through the
// headless Service, and checks that each answers want.
func checkEveryPodHas(t testing.TB, ns, name, query, want string) {
	t.Helper()
	db := e2eutil.GetDB(t, ns, name)
	var script strings.Builder
	for k := range *db.Spec.Replicas {
		pod := fmt.Sprintf("%s-%d", name, k)
		fmt.Fprintf(&script, `H=%s
for i in $(seq 50); do got=$(%s%q 2>/dev/null); [ "$got" = %q ] && break; sleep 0.2; done
echo "%s $got"
`, podHost(ns, name, pod), mysqlSQL, query, want, pod)
	}
	out := runClient(t, ns, name, db.Spec.Image, script.String())
	for k := range *db.Spec.Replicas {
		pod := fmt.Sprintf("%s-%d", name, k)
		if !strings.Contains(out, pod+" "+want+"\n") {
			t.Errorf("pod %s does not have every row (%s = %s):\n%s", pod, query, want, out)
		}
	}
}

// A 3-replica MariaDB 10.11 Database on real servers: the replicas are
// seeded from a dump of the primary and replicate its transactions by
// GTID; rows written through the client Service are read through the
// read-only Service, from a read-only server, and every pod has every row.
// The primary's pod is deleted while a client writes: a replica is
// promoted, the client Service follows, and the old primary rejoins. A
// switchover to a named replica loses no acknowledged write: MariaDB's
// fence does not stop root, so the old primary stops before the target is
// promoted. The primary's server is killed with SIGKILL: a replica is
// promoted, and the old primary, restarted by the kubelet, is fenced and
// rejoins. Semi-synchronous replication waits for one replica: asked for
// two, the Database says why not, with one Warning; asked for one, the
// primary waits for it. No two pods are ever labelled primary at once.
func TestMariaDBReplication(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("tally", "mysql", "10.11", mariadbImage, 3)+"  replication:\n    failoverDelaySeconds: 0\n",
		"-n", ns, "create", "-f", "-")
	start := time.Now()
	db := waitReplicating(t, ns, "tally", "three MariaDB replicas, one primary and two replicating")
	t.Logf("3 replicas Running and replicating after %s; primary %s", time.Since(start).Round(time.Second), db.Status.Replication.Primary)
	if got := db.Status.Replication.Primary; got != "tally-0" {
		t.Errorf("first primary = %q, want tally-0 (it initialises the data)", got)
	}
	roles := watchRoles(t, ns, "tally")
	defer roles.finish(t)

	// 1. Written through the client Service, read through the read-only one.
	runClient(t, ns, "tally", mariadbImage, waitMySQL+mysqlSQL+`"CREATE TABLE w (n INT PRIMARY KEY); CREATE TABLE d (n INT); INSERT INTO d VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9); CREATE TABLE seeded (n INT); INSERT INTO seeded SELECT a.n * 100 + b.n * 10 + c.n + 1 FROM d a, d b, d c"`)
	written := time.Now()
	out := runClient(t, ns, "tally", mariadbImage, `H="$RO_HOST"
for i in $(seq 100); do
  got=$(`+mysqlSQL+`"SELECT COUNT(*) FROM seeded" 2>/dev/null); [ "$got" = 1000 ] && break
  sleep 0.1
done
[ "$got" = 1000 ] || { echo "replicas never showed the rows: $got"; exit 1; }
echo "read $got from $(`+mysqlSQL+`"SELECT CONCAT(@@hostname, ' read_only=', @@read_only)")"`, "ro-host")
	t.Logf("rows written through the client Service read through the read-only Service %s later: %s", time.Since(written).Round(100*time.Millisecond), strings.TrimSpace(out))
	// (MariaDB's CONCAT says a boolean variable's value in words.)
	if !strings.Contains(out, "read_only=ON") || strings.Contains(out, "tally-0 ") {
		t.Errorf("the read-only Service reached a server that is not a read-only replica:\n%s", out)
	}
	checkEveryPodHas(t, ns, "tally", "SELECT CONCAT(COUNT(*), ':', SUM(n)) FROM seeded", "1000:500500")

	// 2.–4. A failover, a switchover and a SIGKILL while a client writes.
	checkFailovers(t, ns, "tally")

	// 5. Semi-synchronous replication: two replicas refused, one applied.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tally", "--type=merge", "-p", `{"spec":{"replication":{"synchronous":{"number":2}}}}`)
	e2eutil.Eventually(t, converge, "the refusal of two synchronous replicas", func() (bool, string) {
		_, reason, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, "tally"), "Replicating")
		return reason == "SynchronousUnsupported" && strings.Contains(msg, "waits for one replica at most"), reason + ": " + msg
	})
	time.Sleep(5 * time.Second)
	if objects, recorded := warnings(t, ns, "tally", "SynchronousUnsupported"); objects != 1 || recorded != 1 {
		t.Errorf("SynchronousUnsupported Warnings: %d events recorded %d times, want one, once", objects, recorded)
	}
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tally", "--type=merge", "-p", `{"spec":{"replication":{"synchronous":{"number":1}}}}`)
	waitReplicating(t, ns, "tally", "replicating again, with one synchronous replica")
	e2eutil.Eventually(t, converge, "the primary to wait for one replica", func() (bool, string) {
		got := strings.Join(strings.Fields(runClient(t, ns, "tally", mariadbImage, waitMySQL+mysqlSQL+`"SELECT @@rpl_semi_sync_master_enabled, @@rpl_semi_sync_master_wait_point"`)), " ")
		return got == "1 AFTER_SYNC", got
	})

	total := strings.TrimSpace(runClient(t, ns, "tally", mariadbImage, waitMySQL+mysqlSQL+`"SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(n), 0)) FROM w"`))
	checkEveryPodHas(t, ns, "tally", "SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(n), 0)) FROM w", total)
	checkEveryPodHas(t, ns, "tally", "SELECT CONCAT(COUNT(*), ':', SUM(n)) FROM seeded", "1000:500500")
}

// A MySQL 9.7 Database that served alone, with no GTIDs, is scaled to three:
// the new pods switch GTIDs on at its server, clone it and replicate, and
// it stays the primary. A rolling change restarts the primary last, once.
// Then 3 → 1 keeps the primary (moved to the first pod by a switchover),
// and 1 → 0 → 3 keeps the rows and the primary.
func TestMySQLReplicationScaling(t *testing.T) {
	parallel(t)
	checkScaling(t, mysqlYAML("crate", "9.7", mysqlImage, 1), "9.7")
}

// The same on MariaDB 10.11: the new pods are seeded from dumps of the
// server that served alone (its binary log starts with the scale-up).
func TestMariaDBReplicationScaling(t *testing.T) {
	parallel(t)
	checkScaling(t, dbYAML("crate", "mysql", "10.11", mariadbImage, 1), "10.11")
}

// checkScaling runs the scaling checks on the 1-replica Database "crate"
// that yaml describes, of version, MySQL's or MariaDB's.
func checkScaling(t *testing.T, yaml, version string) {
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, yaml, "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "crate", converge)
	image := imageOf(t, ns, "crate")
	runClient(t, ns, "crate", image, waitMySQL+mysqlSQL+`"CREATE TABLE kept (n INT); INSERT INTO kept VALUES (1), (2), (3), (4), (5)"`)
	const count, want = "SELECT CONCAT(COUNT(*), ':', SUM(n)) FROM kept", "5:15"

	start := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "scale", "db/crate", "--replicas=3")
	db := waitReplicating(t, ns, "crate", "a single server scaled up to three, replicating")
	t.Logf("1 → 3 replicas, replicating, in %s; primary %s", time.Since(start).Round(time.Second), db.Status.Replication.Primary)
	if db.Status.Replication.Primary != "crate-0" {
		t.Errorf("primary after the scale-up = %s, want crate-0, the server that had the data", db.Status.Replication.Primary)
	}
	runClient(t, ns, "crate", image, waitMySQL+mysqlSQL+`"INSERT INTO kept VALUES (6)"`)
	const wantAfter = "6:21"
	checkEveryPodHas(t, ns, "crate", count, wantAfter)

	// A rolling change of the pods: the replicas restart first, then a
	// switchover, and the primary restarts last, once.
	rollOutPrimaryLast(t, ns, "crate", `{"spec":{"resources":{"requests":{"cpu":"60m"}}}}`, version)
	checkEveryPodHas(t, ns, "crate", count, wantAfter)

	scaleDownFromTheLastPod(t, ns, "crate")
	checkEveryPodHas(t, ns, "crate", count, wantAfter)
	stopAndStartThree(t, ns, "crate")
	checkEveryPodHas(t, ns, "crate", count, wantAfter)
}

// A divergence provoked on purpose: the replica stops receiving, the
// primary acknowledges rows the replica never gets, and the primary's
// server is killed. The replica is promoted without them; the old primary,
// restarted by the kubelet, is fenced, and at its next start its init
// container finds the transactions the new primary does not have, sets its
// binary logs aside in its volume (mysqlbinlog reads the lost rows back
// from them), clones the new primary again and replicates. The controller
// reports it once, in the status and in a Warning. Then the same replica
// falls behind what the primary still has in its binary logs (it stops
// receiving, and the primary purges them): at its next start it is cloned
// again, as nothing it holds is lost, and what was set aside stays.
func TestMySQLDivergenceIsSetAsideAndReported(t *testing.T) {
	parallel(t)
	checkDivergence(t, mysqlYAML("split", "9.7", mysqlImage, 2))
}

// The same on MariaDB 10.11, which has no GTID set arithmetic: the old
// primary's position is not in the new primary's binary log (error 1236
// in gtid_strict_mode), and the purge is the primary's word for it.
func TestMariaDBDivergenceIsSetAsideAndReported(t *testing.T) {
	parallel(t)
	checkDivergence(t, dbYAML("split", "mysql", "10.11", mariadbImage, 2))
}

// checkDivergence runs the divergence checks on the 2-replica Database
// "split" that yaml describes, MySQL's or MariaDB's.
func checkDivergence(t *testing.T, yaml string) {
	ns := e2eutil.NewNamespace(t)
	yaml += "  replication:\n    failoverDelaySeconds: 0\n"
	e2eutil.KubectlIn(t, yaml, "-n", ns, "create", "-f", "-")
	image := imageOf(t, ns, "split")
	mariadb := image == mariadbImage
	waitReplicating(t, ns, "split", "a primary and a replica")
	old := primaryOf(t, ns, "split")
	replica := "split-1"
	if old == replica {
		replica = "split-0"
	}
	runClient(t, ns, "split", image, waitMySQL+mysqlSQL+`"CREATE TABLE kept (n INT PRIMARY KEY); INSERT INTO kept VALUES (1), (2)"`)
	checkEveryPodHas(t, ns, "split", "SELECT COUNT(*) FROM kept", "2")
	runClient(t, ns, "split", image, `H=`+podHost(ns, "split", replica)+`
`+mysqlSQL+`"STOP REPLICA IO_THREAD"
H=`+podHost(ns, "split", old)+`
`+mysqlSQL+`"INSERT INTO kept VALUES (3); INSERT INTO kept VALUES (4); INSERT INTO kept VALUES (5)"`)

	killServer(t, ns, old, serverProgram(image))
	e2eutil.Eventually(t, converge, "the replica promoted", func() (bool, string) {
		p := primaryOf(t, ns, "split")
		return p == replica, "primary " + p
	})
	var db *dbv1alpha1.Database
	e2eutil.Eventually(t, 2*converge, "the divergence of "+old+" reported", func() (bool, string) {
		db = e2eutil.GetDB(t, ns, "split")
		rs := db.Status.Replication
		return rs != nil && len(rs.Divergences) > 0, fmt.Sprintf("%+v", rs)
	})
	d := db.Status.Replication.Divergences[0]
	t.Logf("reported: %s: %s", d.Instance, d.Message)
	if d.Instance != old || !strings.Contains(d.Message, "held transactions "+replica+" does not") ||
		mariadb && !strings.Contains(d.Message, "is not in the primary's binary log") {
		t.Errorf("divergence = %+v, want %s's, against %s", d, old, replica)
	}
	db = waitReplicating(t, ns, "split", old+" cloned again, replicating")
	checkEveryPodHas(t, ns, "split", "SELECT CONCAT(COUNT(*), ':', SUM(n)) FROM kept", "2:3")
	if objects, recorded := warnings(t, ns, "split", "Diverged"); objects != 1 || recorded != 1 {
		t.Errorf("Diverged Warnings: %d events recorded %d times, want one, once", objects, recorded)
	}
	// The lost rows are in the binary logs set aside: MySQL's read back
	// by their GTIDs; MariaDB's with the two rows both servers have.
	read, want := "mariadb-binlog -v", "5"
	if !mariadb {
		read, want = `mysqlbinlog -v --include-gtids='`+d.Message[strings.Index(d.Message, "(")+1:strings.Index(d.Message, ")")]+`'`, "3"
	}
	out := e2eutil.Kubectl(t, "-n", ns, "exec", old, "-c", "mysql", "--", "sh", "-c",
		`ls /var/lib/mysql | grep -c '^dbc-diverged-'; `+read+` /var/lib/mysql/dbc-diverged-*-binlog.0* | grep -c '^### INSERT INTO .*kept'`)
	t.Logf("set aside in %s's volume: %s files; rows read back: %s", old,
		strings.Fields(out)[0], strings.Fields(out)[len(strings.Fields(out))-1])
	if f := strings.Fields(out); len(f) != 2 || f[1] != want {
		t.Errorf("the 3 lost rows are not in the binary logs set aside (want %s rows):\n%s", want, out)
	}
	setAside := strings.Fields(out)[0]

	// Behind the binary logs the primary kept, while it runs: its
	// receiver, started again, is refused for good. The controller says
	// so, and restarts its pod once the pod is brokenRestartAge (2 min)
	// old; its init container clones it again.
	pod := func() (uid string, created time.Time, err error) {
		var p corev1.Pod
		err = e2eutil.TryGetJSON(&p, "-n", ns, "get", "pod", old)
		return string(p.UID), p.CreationTimestamp.Time, err
	}
	uid, created, err := pod()
	if err != nil {
		t.Fatal(err)
	}
	runClient(t, ns, "split", image, `H=`+podHost(ns, "split", old)+`
`+mysqlSQL+`"STOP REPLICA IO_THREAD"
H=`+podHost(ns, "split", replica)+`
`+mysqlSQL+`"INSERT INTO kept VALUES (6); FLUSH BINARY LOGS; INSERT INTO kept VALUES (7); FLUSH BINARY LOGS"
`+mysqlSQL+`"PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 SECOND"
H=`+podHost(ns, "split", old)+`
`+mysqlSQL+`"START REPLICA IO_THREAD"`)
	purged := time.Now()
	said := ""
	e2eutil.Eventually(t, 3*converge, "the controller to restart "+old+", which cannot replicate", func() (bool, string) {
		if _, _, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, "split"), dbv1alpha1.ConditionReplicating); strings.Contains(msg, "cannot replicate") {
			said = msg
		}
		// Between the old pod's deletion and its replacement's creation
		// there is no pod: not yet.
		now, _, err := pod()
		if err != nil {
			return false, err.Error()
		}
		return now != uid, "pod " + now
	})
	t.Logf("while %s could not replicate, Replicating said: %s", old, said)
	if said == "" && purged.Sub(created) < 100*time.Second {
		t.Errorf("the Replicating condition never said that %s cannot replicate (its pod was %s old)", old, purged.Sub(created).Round(time.Second))
	}
	if objects, recorded := warnings(t, ns, "split", "ReplicaBroken"); objects != 1 || recorded != 1 {
		t.Errorf("ReplicaBroken Warnings: %d events recorded %d times, want one, once", objects, recorded)
	}
	t.Logf("%s restarted by the controller %s after its receiver was refused: %s", old, time.Since(purged).Round(time.Second),
		lineWith(e2eutil.Kubectl(t, "-n", ns, "get", "events", "--field-selector", "reason=ReplicaBroken", "-o", "jsonpath={.items[*].message}"), "Restarting"))
	waitReplicating(t, ns, "split", old+" cloned again after the primary purged what it lacked")
	checkEveryPodHas(t, ns, "split", "SELECT CONCAT(COUNT(*), ':', SUM(n)) FROM kept", "4:16")
	init := e2eutil.Kubectl(t, "-n", ns, "logs", old, "-c", "replication")
	if !strings.Contains(init, "purged from its binary logs transactions "+old+" lacks") {
		t.Errorf("%s's init container did not clone it again for the purged binary logs:\n%s", old, init)
	}
	t.Logf("%s: %s", old, lineWith(init, "purged from its binary logs"))
	if got := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "exec", old, "-c", "mysql", "--", "sh", "-c", `ls /var/lib/mysql | grep -c '^dbc-diverged-'`)); got != setAside {
		t.Errorf("files set aside after the second clone: %s, want the %s of the divergence", got, setAside)
	}
	if objects, recorded := warnings(t, ns, "split", "Diverged"); objects != 1 || recorded != 1 {
		t.Errorf("Diverged Warnings after the second clone: %d events recorded %d times, want the one, once", objects, recorded)
	}
}

// lineWith is the first line of out that contains s.
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// killPrimaryWhileWriting kills the server of the Database's primary with
// SIGKILL while a client writes, waits for another primary and for the
// old one to replicate again, and returns what the client saw.
func killPrimaryWhileWriting(t *testing.T, ns, name string) writeLog {
	t.Helper()
	// It writes until it wrote past the old primary's return (finish):
	// on a loaded machine, with semi-synchronous replication, the
	// commits wait for it more than a minute.
	writer := startMySQLWriter(t, ns, name, writerBound)
	writer.waitAcknowledged(t, 3)
	crashed := primaryOf(t, ns, name)
	at := time.Now()
	killServer(t, ns, crashed, serverProgram(imageOf(t, ns, name)))
	e2eutil.Eventually(t, converge, "a new primary after the crash", func() (bool, string) {
		p := primaryOf(t, ns, name)
		return p != "" && p != crashed, "primary " + p
	})
	t.Logf("SIGKILL: %s is the primary %s after the server of %s was killed", primaryOf(t, ns, name), time.Since(at).Round(100*time.Millisecond), crashed)
	// The old primary may come back with a transaction it never
	// acknowledged (a divergence, set aside): it is cloned, and under
	// dataDurability Required a clone waits for the commits that wait for
	// it (README, "Known limit").
	if _, released := waitReplicatingOrRelease(t, ns, name, "the crashed primary to come back as a replica"); released {
		t.Logf("SIGKILL: %s was cloned while commits waited for it: set dataDurability Preferred, as the condition says", crashed)
	}
	t.Logf("SIGKILL: %s replicates again %s after the kill", crashed, time.Since(at).Round(100*time.Millisecond))
	w := parseWrites(t, writer.finish(t, 20))
	since := float64(at.UnixNano()) / 1e9
	from, until := w.outage(since)
	t.Logf("SIGKILL: writes failed for %.1f s", until-from)
	if before, after := w.around(since); before == 0 || after == 0 {
		t.Errorf("%d writes acknowledged before the kill and %d after its outage: the writer did not span it", before, after)
	}
	if rs := e2eutil.GetDB(t, ns, name).Status.Replication; len(rs.Divergences) > 0 {
		t.Logf("SIGKILL: set aside: %s", rs.Divergences[len(rs.Divergences)-1].Message)
	}
	return w
}

// Semi-synchronous replication (spec.replication.synchronous, a quorum of
// one): the primary's server is killed with SIGKILL while a client writes,
// and no acknowledged write is lost.
func TestMySQLSemiSynchronousLosesNoAcknowledgedWrite(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, mysqlYAML("sure", "9.7", mysqlImage, 2)+"  replication:\n    failoverDelaySeconds: 0\n    synchronous: {number: 1}\n",
		"-n", ns, "create", "-f", "-")
	waitReplicating(t, ns, "sure", "a primary and a replica, semi-synchronous")
	out := runClient(t, ns, "sure", mysqlImage, waitMySQL+mysqlSQL+`"SELECT CONCAT(@@rpl_semi_sync_source_enabled, ' ', @@rpl_semi_sync_source_wait_for_replica_count)"`)
	if strings.TrimSpace(out) != "1 1" {
		t.Errorf("the primary's semi-synchronous replication (enabled, replicas waited for) = %q, want \"1 1\"", strings.TrimSpace(out))
	}
	w := killPrimaryWhileWriting(t, ns, "sure")
	lost := w.lostMySQL(t, ns, "sure")
	w.report(t, "semi-synchronous, SIGKILL", lost, 20)
	if len(lost) > 0 {
		t.Errorf("acknowledged writes lost with semi-synchronous replication: %v", lost)
	}
}

// stalledClone is what the Replicating condition says of a MySQL primary
// whose commits wait for an acknowledgement that no replica streams to
// give, while a replica must be cloned from it (package mysqlsql's
// Stalled).
const stalledClone = "commits have waited 5 s or more for replicas to acknowledge them, and a clone from it waits for them to end"

// waitReplicatingOrRelease is waitReplicating, with what the README tells a
// user to do when the Replicating condition says that the primary's commits
// and a clone from it wait for each other (dataDurability Required, too
// few replicas streaming: MySQL's clone waits for the prepared commits to
// end): set dataDurability Preferred, which lets them commit without a
// replica. It reports whether it had to. The condition must name what
// holds the commits and what lets them go on.
func waitReplicatingOrRelease(t testing.TB, ns, name, why string) (*dbv1alpha1.Database, bool) {
	t.Helper()
	released := false
	db := waitReplicatingWatching(t, ns, name, why, func(db *dbv1alpha1.Database, replicating string) {
		if released || !strings.Contains(replicating, stalledClone) {
			return
		}
		t.Logf("Replicating said: %s", replicating)
		if !strings.Contains(replicating, "dataDurability Required holds each commit until enough replicas have it; Preferred lets commits go on") {
			t.Errorf("the Replicating condition does not say what holds the commits and what lets them go on: %s", replicating)
		}
		if r := db.Spec.Replication; r == nil || r.Synchronous == nil {
			t.Fatalf("commits wait for replicas of a Database without spec.replication.synchronous: %s", replicating)
		}
		e2eutil.Kubectl(t, "-n", ns, "patch", "db", name, "--type=merge", "-p",
			fmt.Sprintf(`{"spec":{"replication":{"synchronous":{"number":%d,"dataDurability":"Preferred"}}}}`, db.Spec.Replication.Synchronous.Number))
		released = true
	})
	return db, released
}

// Semi-synchronous replication with dataDurability Required and one
// replica: the replica loses its volume while a client writes, so that
// its next start clones the primary, whose commits meanwhile wait for an
// acknowledgement only that replica could give, and MySQL's clone waits
// for those commits: neither can go on. The Replicating condition says so
// and what lets them go on; dataDurability Preferred does: the clone ends,
// the replica streams, the primary waits for it again, and no
// acknowledged write is lost.
func TestMySQLRequiredCommitsAndACloneWaitingForEachOtherAreReported(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, mysqlYAML("held", "9.7", mysqlImage, 2)+"  replication:\n    synchronous: {number: 1}\n",
		"-n", ns, "create", "-f", "-")
	waitReplicating(t, ns, "held", "a primary and a semi-synchronous replica")
	replica := "held-1"
	if primaryOf(t, ns, "held") == replica {
		replica = "held-0"
	}
	writer := startMySQLWriter(t, ns, "held", writerBound)
	writer.waitAcknowledged(t, 3)
	// As the controller reseeds a replica: the claim, then the pod. The
	// StatefulSet makes both again, and the new pod's init container
	// clones the primary.
	e2eutil.Kubectl(t, "-n", ns, "delete", "pvc", "data-"+replica, "--wait=false")
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", replica, "--wait=false")
	deleted := time.Now()
	e2eutil.Eventually(t, converge, "the controller to see "+replica+" gone", func() (bool, string) {
		st, _, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, "held"), dbv1alpha1.ConditionReplicating)
		return st != "True", "Replicating: " + msg
	})
	db, released := waitReplicatingOrRelease(t, ns, "held", replica+" cloned again, replicating")
	if !released {
		t.Errorf("%s was cloned while a client wrote, and the Replicating condition never said that the clone waits for the primary's commits", replica)
	}
	t.Logf("%s cloned and streaming %s after its volume was deleted", replica, time.Since(deleted).Round(time.Second))
	// The Ready condition named them too, with one Warning: they would
	// not have ended by themselves.
	if objects, recorded := warnings(t, ns, "held", "CommitsStalled"); objects != 1 || recorded != 1 {
		t.Errorf("CommitsStalled Warnings: %d events recorded %d times, want one, once", objects, recorded)
	}
	if got := *db.Spec.Replication.Synchronous; got.DataDurability != dbv1alpha1.DataDurabilityPreferred {
		t.Errorf("synchronous replication = %+v, want Preferred", got)
	}
	// Preferred: asynchronous while no replica streamed, and waiting for
	// the one that streams again.
	e2eutil.Eventually(t, converge, "the primary to wait for its replica again", func() (bool, string) {
		out := strings.TrimSpace(runClient(t, ns, "held", mysqlImage, waitMySQL+mysqlSQL+`"SELECT CONCAT(@@rpl_semi_sync_source_enabled, ' ', @@rpl_semi_sync_source_wait_for_replica_count)"`))
		return out == "1 1", "semi-synchronous replication (enabled, replicas waited for): " + out
	})
	writer.stop(t)
	w := parseWrites(t, writer.wait(t))
	if lost := w.lostMySQL(t, ns, "held"); len(lost) > 0 {
		t.Errorf("acknowledged writes lost: %v", lost)
	}
	if _, after := w.around(float64(deleted.UnixNano()) / 1e9); after == 0 {
		t.Errorf("no write acknowledged after the replica's volume was deleted: the commits never went on")
	}
	rows := strings.TrimSpace(runClient(t, ns, "held", mysqlImage, waitMySQL+mysqlSQL+`"SELECT COUNT(*) FROM w"`))
	t.Logf("%d writes acknowledged, %s rows on the primary", len(w.acked), rows)
	checkEveryPodHas(t, ns, "held", "SELECT COUNT(*) FROM w", rows)
}
