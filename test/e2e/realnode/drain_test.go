//go:build e2e

package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// pgbenchScript runs pgbench with 4 clients through the Secret's URI in
// slots of one second for seconds, and prints each slot's start and the
// transactions it committed ("slot T N"): pgbench's clients give up on a
// lost connection, so one long run would say nothing after the first
// failure, where a user's pool reconnects.
const pgbenchScript = `end=$(( $(date +%%s) + %d ))
while [ "$(date +%%s)" -lt "$end" ]; do
  t=$(date +%%s.%%N)
  n=$(PGCONNECT_TIMEOUT=1 pgbench -n -c 4 -T 1 "$URI" 2>/dev/null | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
  echo "slot $t ${n:-0}"
done`

// idleSeconds is how long, of the slots pgbench printed, none committed a
// transaction, and the slots in all.
func idleSeconds(t testing.TB, out string) (idle float64, slots int) {
	t.Helper()
	var starts []float64
	var counts []int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "slot" {
			continue
		}
		at, err1 := strconv.ParseFloat(f[1], 64)
		n, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("pgbench line %q", line)
		}
		starts, counts = append(starts, at), append(counts, n)
	}
	for k := range starts {
		if counts[k] == 0 && k+1 < len(starts) {
			idle += starts[k+1] - starts[k]
		}
	}
	return idle, len(starts)
}

// evict asks the Eviction API to evict pod, as kubectl drain does, and
// returns the API server's refusal, if any.
func evict(t testing.TB, ns, pod string) error {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, pod, ns)
	out, err := e2eutil.KubectlRun(body, "create", "--raw", "/api/v1/namespaces/"+ns+"/pods/"+pod+"/eviction", "-f", "-")
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// A 3-replica PostgreSQL Database with the default failover delay (30 s),
// under pgbench (4 clients) and a writer that counts acknowledged rows:
//  1. kubectl delete pod of the primary hands over at once to a streaming
//     replica; the seconds with no primary and with no transaction are
//     reported, and no acknowledged write is lost;
//  2. the Eviction API refuses to evict the primary (its disruption
//     budget), and evicts a replica (one server at a time);
//
// The node cordoned, with no other node to switch over to, the primary's
// budget lets it go, and its eviction hands over: the node-loss tests
// evict through it (loseThePrimaryAndTheController), as they run alone.
// This machine has one real node: the switchover to a replica on another
// node before the primary is evicted is proven by the fixture tests
// (TestReplicationCordonedNodes), not here.
func TestPrimaryHandoverAndDrain(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("drained", "postgresql", "15", postgresImage, 3), "-n", ns, "create", "-f", "-")
	waitReplicating(t, ns, "drained", "three replicas, one primary and two streaming")
	runClient(t, ns, "drained", postgresImage, psql+`-c "CREATE TABLE w (n int PRIMARY KEY)" && pgbench -q -i -s 2 "$URI"`)
	roles := watchRoles(t, ns, "drained")
	defer roles.finish(t)

	// 1. A plain delete of the primary's pod.
	writer := startWriter(t, ns, "drained", writerBound)
	bench := startClient(t, ns, "drained", "pgbench", fmt.Sprintf(pgbenchScript, 60))
	time.Sleep(10 * time.Second)
	old := primaryOf(t, ns, "drained")
	deleted := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", old, "--wait=false")
	e2eutil.Eventually(t, converge, "another primary", func() (bool, string) {
		p := primaryOf(t, ns, "drained")
		return p != "" && p != old, "primary " + p
	})
	t.Logf("deleted the pod of the primary %s: %s is the primary %s later", old, primaryOf(t, ns, "drained"), time.Since(deleted).Round(100*time.Millisecond))
	if n := eventsStarting(t, ns, "drained", "SwitchingOver", "the pod of the primary "+old+" is being deleted"); n != 1 {
		t.Errorf("%d SwitchingOver events for the deleted pod of %s, want 1", n, old)
	}
	if n := eventsStarting(t, ns, "drained", "FailingOver", ""); n != 0 {
		t.Errorf("%d FailingOver events: a deleted pod is a handover, not a failover", n)
	}
	idle, slots := idleSeconds(t, bench.wait(t))
	noPrimary := roles.longestWithoutPrimary()
	t.Logf("delete pod of the primary, failover delay 30 s: %.1f s of %d one-second pgbench slots (4 clients) committed nothing; no pod labelled primary for %s",
		idle, slots, noPrimary.Round(100*time.Millisecond))
	waitReplicating(t, ns, "drained", "the old primary to stream again")

	// 2. The budgets: the primary stays, a replica goes.
	primary := primaryOf(t, ns, "drained")
	if err := evict(t, ns, primary); err == nil || !strings.Contains(err.Error(), "disruption budget") {
		t.Errorf("eviction of the primary %s: %v; want refused for its disruption budget", primary, err)
	}
	replica := "drained-0"
	if primary == replica {
		replica = "drained-1"
	}
	if err := evict(t, ns, replica); err != nil {
		t.Errorf("eviction of the replica %s: %v; want allowed", replica, err)
	}
	waitReplicating(t, ns, "drained", "the evicted replica to stream again")

	parseWrites(t, writer.finish(t, 20)).across(t, ns, "drained", "delete pod of the primary, then evictions", deleted)
}

// A replica whose data cannot start (its pg_control removed on the host,
// then its server killed) crash-loops; the controller seeds it again from
// the primary, with a Warning that names the claim and volume discarded
// and the server's words, and it streams again with the primary's rows.
// The discarded volume is kept (the local volumes' reclaim policy is
// Retain).
func TestReplicaWhoseDataCannotStartIsSeededAgain(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("mended", "postgresql", "15", postgresImage, 3), "-n", ns, "create", "-f", "-")
	db := waitReplicating(t, ns, "mended", "three replicas, one primary and two streaming")
	const sum = `SELECT count(*) || ':' || md5(string_agg(n::text || v, ',' ORDER BY n)) FROM kept`
	runClient(t, ns, "mended", postgresImage, psql+`-c "CREATE TABLE kept AS SELECT g AS n, md5(g::text) AS v FROM generate_series(1, 10000) g"`)
	want := strings.TrimSpace(runClient(t, ns, "mended", postgresImage, psql+`-c "`+sum+`"`))
	broken := "mended-2"
	if db.Status.Replication.Primary == broken {
		broken = "mended-1"
	}
	var pvc corev1.PersistentVolumeClaim
	e2eutil.GetJSON(t, &pvc, "-n", ns, "get", "pvc", "data-"+broken)
	var pv corev1.PersistentVolume
	e2eutil.GetJSON(t, &pv, "get", "pv", pvc.Spec.VolumeName)
	control := filepath.Join(pv.Spec.Local.Path, "pgdata", "global", "pg_control")
	if err := os.Remove(control); err != nil {
		t.Fatalf("removing the replica's pg_control: %v", err)
	}
	broke := time.Now()
	killServer(t, ns, broken, "postgres")

	e2eutil.Eventually(t, 6*time.Minute, broken+" to be seeded again", func() (bool, string) {
		n := eventsStarting(t, ns, "mended", "Reseeding", "Seeding "+broken+" again from ")
		return n == 1, fmt.Sprintf("%d Reseeding events; Ready: %s", n, readyMessage(t, ns, "mended"))
	})
	t.Logf("%s seeded again %s after its data was broken", broken, time.Since(broke).Round(time.Second))
	for _, e := range databaseEvents(t, ns, "mended", ",reason=Reseeding") {
		if !strings.Contains(e.Message, "data-"+broken+" (volume "+pv.Name+")") || !strings.Contains(e.Message, "could not find the database system") {
			t.Errorf("the Reseeding event does not name the claim, its volume and the server's words: %q", e.Message)
		}
		t.Logf("event: %s", e.Message)
	}
	waitReplicating(t, ns, "mended", broken+" to stream again")
	ip := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pod", broken, "-o", "jsonpath={.status.podIP}"))
	got := strings.TrimSpace(runClient(t, ns, "mended", postgresImage, `psql -X -v ON_ERROR_STOP=1 -tA "postgresql://$USERNAME:$PASSWORD@`+ip+`:5432/$DATABASE" -c "SELECT pg_is_in_recovery()" -c "`+sum+`"`))
	if got != "t\n"+want {
		t.Errorf("the seeded replica %s answers %q, want in recovery and the primary's %q", broken, got, want)
	}
	var kept corev1.PersistentVolume
	e2eutil.GetJSON(t, &kept, "get", "pv", pv.Name)
	if kept.Status.Phase != corev1.VolumeReleased {
		t.Errorf("the discarded volume %s is %s, want Released (kept, reclaim policy Retain)", pv.Name, kept.Status.Phase)
	}
}

// readyMessage is the Database's Ready condition, for the logs of a wait.
func readyMessage(t testing.TB, ns, name string) string {
	st, reason, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, name), "Ready")
	return st + "/" + reason + " " + msg
}
