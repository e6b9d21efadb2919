//go:build e2e

package realnode

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// writerScript inserts 1, 2, 3, ... through the Secret's URI, one
// connection per row, for seconds, and prints each row's outcome with the
// time: "ok N T" once the server acknowledged the commit, "fail N T E"
// otherwise, E the client's error on one line. It is what a client that
// retries sees during a failover: it gives up connecting after a second
// ($CONNECT_TIMEOUT when set). It ends early once /tmp/stop exists
// (writer.stop).
//
// It rests writerPause after each acknowledged write: unpaced, one writer
// took 1.2 of this machine's 2 cores (855 writes in 60 s on an idle node,
// about 85 CPU-ms each: psql, the login, the backend, the commit), which
// starved the servers whose failover it timed and the tests beside it.
// Paced, an outage is still timed to about a third of a second.
const writerScript = `end=$(( $(date +%%s) + %d ))
i=0
while [ "$(date +%%s)" -lt "$end" ] && [ ! -e /tmp/stop ]; do
  i=$((i + 1))
  if err=$(PGCONNECT_TIMEOUT=${CONNECT_TIMEOUT:-1} psql "$URI" -v ON_ERROR_STOP=1 -qtAc "INSERT INTO w VALUES ($i)" 2>&1 >/dev/null); then
    echo "ok $i $(date +%%s.%%N)"; sleep ` + writerPause + `
  else
    echo "fail $i $(date +%%s.%%N) $(printf '%%s' "$err" | tr '\n' ' ' | cut -c1-300)"; sleep 0.1
  fi
done`

// writerPause is how long, in seconds, a writer rests after each
// acknowledged write (writerScript).
const writerPause = "0.2"

// writeLog is what a writer printed.
type writeLog struct {
	acked []int
	// at is when each row's attempt ended, ok its outcome, and err the
	// client's error when it failed.
	at  []float64
	ok  []bool
	err []string
}

// report logs what the writer saw across what and the acknowledged writes
// lost, and fails the test when fewer than atLeast writes were
// acknowledged: a writer that did not run proves nothing.
func (w writeLog) report(t testing.TB, what string, lost []int, atLeast int) {
	t.Helper()
	t.Logf("%s: %d writes acknowledged, %d attempts in all; %d acknowledged writes lost: %v", what, len(w.acked), len(w.at), len(lost), lost)
	if len(w.acked) < atLeast {
		t.Errorf("only %d writes acknowledged: the writer did not run", len(w.acked))
	}
}

func parseWrites(t testing.TB, out string) writeLog {
	var w writeLog
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "ok" && f[0] != "fail" {
			continue
		}
		n, err1 := strconv.Atoi(f[1])
		at, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("writer line %q", line)
		}
		w.at, w.ok, w.err = append(w.at, at), append(w.ok, f[0] == "ok"), append(w.err, strings.Join(f[3:], " "))
		if f[0] == "ok" {
			w.acked = append(w.acked, n)
		}
	}
	return w
}

// lost are the rows the writer saw acknowledged that the Database's table
// w does not hold, read through the Secret's URI, in order.
func (w writeLog) lost(t testing.TB, ns, db string) []int {
	t.Helper()
	rows := runClient(t, ns, db, postgresImage, psql+`-c "SELECT string_agg(n::text, ' ' ORDER BY n) FROM w"`)
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
	sort.Ints(lost)
	return lost
}

// around counts the writes acknowledged before since and those after the
// first outage after it: a writer proves nothing about an event it did not
// span.
func (w writeLog) around(since float64) (before, after int) {
	_, until := w.outage(since)
	for k := range w.at {
		switch {
		case !w.ok[k]:
		case w.at[k] < since:
			before++
		case w.at[k] >= until:
			after++
		}
	}
	return before, after
}

// across reports what the writer saw across what, which began at event: the
// first outage after it, with when each failed attempt ended, and the
// acknowledged writes lost. It fails the test when one was lost, or when
// the writer did not span the event (no write acknowledged before it, or
// none after its outage).
func (w writeLog) across(t *testing.T, ns, db, what string, event time.Time) {
	t.Helper()
	since := float64(event.UnixNano()) / 1e9
	from, until := w.outage(since)
	t.Logf("%s: writes failed for %.1f s (%.1f s to %.1f s after it); failed attempts ended at %s s%s", what, until-from, from-since, until-since, w.failedAfter(since), w.errors(since))
	lost := w.lost(t, ns, db)
	w.report(t, what, lost, 20)
	if before, after := w.around(since); before == 0 || after == 0 {
		t.Errorf("%d writes acknowledged before it and %d after its outage: the writer did not span %s", before, after, what)
	}
	if len(lost) > 0 {
		t.Errorf("acknowledged writes lost across %s: %v", what, lost)
	}
}

// failedAfter is when each failed attempt after since ended, in seconds
// after it, for the log of an outage.
func (w writeLog) failedAfter(since float64) string {
	var at []string
	for k := range w.at {
		if !w.ok[k] && w.at[k] >= since {
			at = append(at, fmt.Sprintf("%.1f", w.at[k]-since))
		}
	}
	return strings.Join(at, " ")
}

// errors is, for the log, the distinct errors of the failed attempts after
// since, the first three.
func (w writeLog) errors(since float64) string {
	var seen []string
	for k := range w.at {
		if !w.ok[k] && w.at[k] >= since && !slices.Contains(seen, w.err[k]) && len(seen) < 3 {
			seen = append(seen, w.err[k])
		}
	}
	if len(seen) == 0 {
		return ""
	}
	return "; the clients said: " + strings.Join(seen, " | ")
}

// outage is the first run of failed writes after since: from the last
// acknowledged write before it to the first one after it (since and since
// when no write failed).
func (w writeLog) outage(since float64) (from, to float64) {
	lastOK := since
	for k := range w.at {
		if w.at[k] < since || w.ok[k] {
			if w.ok[k] {
				lastOK = w.at[k]
			}
			continue
		}
		for j := k + 1; j < len(w.at); j++ {
			if w.ok[j] {
				return lastOK, w.at[j]
			}
		}
		return lastOK, w.at[len(w.at)-1]
	}
	return since, since
}

// roleWatch watches the role labels of a Database's pods and records
// every state that had two pods labelled primary, and the longest run of
// states that had none. A watch, not a poll: it sees every state the API
// server held (e2eutil.WatchPods), where a poll every 200 ms missed any
// shorter, and it cost a list of the pods each time (15,705 lists in a
// clean clone's .ci/run at aadf3c6).
type roleWatch struct {
	stop   func()
	mu     sync.Mutex
	states int
	twice  []string
	// noneSince is when the current run of states with no pod labelled
	// primary began (zero outside one); noneLongest the longest such run.
	noneSince   time.Time
	noneLongest time.Duration
}

func watchRoles(t testing.TB, ns, db string) *roleWatch {
	t.Helper()
	s := &roleWatch{}
	stop, err := e2eutil.WatchPods(ns, "app.kubernetes.io/instance="+db, func(pods map[string]*corev1.Pod) {
		var primaries []string
		for name, pod := range pods {
			if pod.Labels[dbv1alpha1.LabelRole] == dbv1alpha1.RolePrimary {
				primaries = append(primaries, name+"="+dbv1alpha1.RolePrimary)
			}
		}
		sort.Strings(primaries)
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.states++
		if len(primaries) > 1 {
			s.twice = append(s.twice, strings.Join(primaries, " "))
		}
		switch {
		case len(primaries) == 0 && s.noneSince.IsZero():
			s.noneSince = now
		case len(primaries) > 0 && !s.noneSince.IsZero():
			s.noneLongest = max(s.noneLongest, now.Sub(s.noneSince))
			s.noneSince = time.Time{}
		}
	})
	if err != nil {
		t.Fatalf("watching the role labels of %s's pods: %v", db, err)
	}
	s.stop = stop
	return s
}

// longestWithoutPrimary is the longest time, so far, that no pod was
// labelled primary, as the watch saw the changes.
func (s *roleWatch) longestWithoutPrimary() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noneLongest
}

func (s *roleWatch) finish(t testing.TB) {
	s.stop()
	if len(s.twice) > 0 {
		t.Errorf("pods labelled primary at once, in %d of %d states: %q", len(s.twice), s.states, s.twice)
		return
	}
	t.Logf("role labels watched through %d states: never two primaries", s.states)
}

// replicated waits until the Database is Running with primary as its
// primary and every other pod streaming from it, and returns it.
func waitReplicating(t testing.TB, ns, name, why string) *dbv1alpha1.Database {
	t.Helper()
	return waitReplicatingWatching(t, ns, name, why, nil)
}

// waitReplicatingWatching is waitReplicating that hands watch, when not
// nil, each Database it reads and its Replicating condition's message.
func waitReplicatingWatching(t testing.TB, ns, name, why string, watch func(db *dbv1alpha1.Database, replicating string)) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	e2eutil.Eventually(t, 3*converge, why, func() (bool, string) {
		db = e2eutil.GetDB(t, ns, name)
		running, msg := e2eutil.IsRunning(db)
		st, reason, rmsg := e2eutil.Condition(db, dbv1alpha1.ConditionReplicating)
		if watch != nil {
			watch(db, rmsg)
		}
		return running && st == "True", fmt.Sprintf("%s; Replicating=%s/%s (%s)", msg, st, reason, rmsg)
	})
	return db
}

// A 3-replica PostgreSQL Database on real servers: rows written to the
// primary are read from the replicas through the read-only Service; the
// primary's pod is deleted, a replica is promoted and the client Service
// follows it, and the old primary comes back as a replica; a switchover to
// a named replica loses no acknowledged write; a switchover to a replica
// that restarted, with nothing written since, does not wait for the
// primary to write again; and no two pods are ever labelled primary at
// once.
func TestReplicationFailoverAndSwitchover(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("ha", "postgresql", "15", postgresImage, 3)+"  replication:\n    failoverDelaySeconds: 0\n", "-n", ns, "create", "-f", "-")
	start := time.Now()
	db := waitReplicating(t, ns, "ha", "three replicas, one primary and two streaming")
	t.Logf("3 replicas Running and replicating after %s; primary %s", time.Since(start).Round(time.Second), db.Status.Replication.Primary)
	if got := db.Status.Replication.Primary; got != "ha-0" {
		t.Errorf("first primary = %q, want ha-0 (it initialises the data)", got)
	}
	roles := watchRoles(t, ns, "ha")
	defer roles.finish(t)

	// 1. Written to the primary, read from the replicas.
	runClient(t, ns, "ha", postgresImage, psql+`-c "CREATE TABLE w (n int PRIMARY KEY)" -c "CREATE TABLE seeded (n int)" -c "INSERT INTO seeded SELECT generate_series(1, 1000)"`)
	written := time.Now()
	out := runClient(t, ns, "ha", postgresImage, `for i in $(seq 100); do
  got=$(psql "$RO_URI" -tAc "SELECT count(*) FROM seeded" 2>/dev/null); [ "$got" = 1000 ] && { echo "read $got; in recovery $(psql "$RO_URI" -tAc "SELECT pg_is_in_recovery()")"; exit 0; }
  sleep 0.1
done; echo "replicas never showed the rows: $got"; exit 1`, "ro-uri")
	t.Logf("rows written to the primary read through the read-only Service %s later: %s", time.Since(written).Round(100*time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(out, "in recovery t") {
		t.Errorf("the read-only Service reached a server out of recovery: %s", out)
	}

	// 2. Failover: the primary's pod is deleted while a client writes.
	writer := startWriter(t, ns, "ha", writerBound)
	writer.waitAcknowledged(t, 3)
	old := e2eutil.GetDB(t, ns, "ha").Status.Replication.Primary
	killed := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", old, "--wait=false")
	e2eutil.Eventually(t, converge, "a new primary", func() (bool, string) {
		rs := e2eutil.GetDB(t, ns, "ha").Status.Replication
		return rs != nil && rs.Primary != old && rs.Primary != "", fmt.Sprintf("%+v", rs)
	})
	t.Logf("deleted primary %s; %s is the primary %s later", old, e2eutil.GetDB(t, ns, "ha").Status.Replication.Primary, time.Since(killed).Round(100*time.Millisecond))
	db = waitReplicating(t, ns, "ha", "the old primary to come back as a replica that streams")
	for _, i := range db.Status.Replication.Instances {
		if i.Name == old && (i.Role != dbv1alpha1.RoleReplica || !i.Streaming) {
			t.Errorf("the old primary %s: %+v, want a streaming replica", old, i)
		}
	}
	t.Logf("%s streams from %s %s after the delete", old, db.Status.Replication.Primary, time.Since(killed).Round(100*time.Millisecond))
	checkStateMetrics(t, ns, "ha", 1, 0)

	// 3. Switchover to a named replica, while the client writes.
	asked := switchOver(t, ns, db)
	checkStateMetrics(t, ns, "ha", 1, 1)

	w := parseWrites(t, writer.finish(t, 50))
	from, until := w.outage(float64(killed.UnixNano()) / 1e9)
	t.Logf("failover: writes failed for %.1f s (from %.1f s to %.1f s after the delete)", until-from, from-float64(killed.UnixNano())/1e9, until-float64(killed.UnixNano())/1e9)
	from, until = w.outage(float64(asked.UnixNano()) / 1e9)
	t.Logf("switchover: writes failed for %.1f s", until-from)

	// Every acknowledged write is there: the pod was deleted, so the old
	// primary shut down cleanly and sent its last WAL; and a switchover
	// waits for the target to receive it all.
	lost := w.lost(t, ns, "ha")
	w.report(t, "failover and switchover", lost, 50)
	if len(lost) > 0 {
		t.Errorf("acknowledged writes lost across a graceful failover and a switchover: %v", lost)
	}

	// 4. A switchover to a replica that restarted, while nothing writes:
	// what a rollout does on an idle Database (its replicas restart at the
	// new revision, then the primary is switched over to one). The
	// restarted replica holds all the primary wrote, but its WAL receiver
	// reports only where its stream began until the primary writes
	// again; the switchover must not wait for that. So the primary is
	// made still first: a CHECKPOINT, then the one record of running
	// transactions its background writer logs within 15 s after it; then
	// it writes nothing of itself (no timed checkpoint follows one with no
	// WAL after it), and a switchover that waited would not end within
	// the bound. (Seen in CI: 7 minutes of a fenced, unlabelled primary,
	// its clients refused.)
	to := switchOverTarget(e2eutil.GetDB(t, ns, "ha"))
	runClient(t, ns, "ha", postgresImage, psql+`-c "CHECKPOINT" >/dev/null
lsn() { psql "$URI" -tAc "SELECT pg_current_wal_lsn()"; }
was=$(lsn)
for i in $(seq 6); do
  sleep 20; now=$(lsn); [ "$now" = "$was" ] && exit 0; was=$now
done
echo "the primary's WAL never stood still for 20 s: $was"; exit 1`)
	uid := e2eutil.Kubectl(t, "-n", ns, "get", "pod", to, "-o", "jsonpath={.metadata.uid}")
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", to)
	waitPodMadeAgain(t, ns, to, uid)
	switchOver(t, ns, waitReplicating(t, ns, "ha", to+" streaming again"))
}

// checkStateMetrics waits until the controller's metrics say what the
// status of the Database name says: each server's role, which replicas
// stream, the lag of those that do, and the failovers and switchovers
// counted.
func checkStateMetrics(t *testing.T, ns, name string, failovers, switchovers int) {
	t.Helper()
	per := []string{`database="` + name + `"`, `namespace="` + ns + `"`}
	with := func(more ...string) []string { return append(append([]string{}, per...), more...) }
	e2eutil.Eventually(t, converge, "the controller's metrics to say what the status says", func() (bool, string) {
		m, err := e2eutil.ScrapeMetrics(metricsAddress)
		if err != nil {
			return false, err.Error()
		}
		rs := e2eutil.GetDB(t, ns, name).Status.Replication
		if rs == nil {
			return false, "no status.replication"
		}
		var wrong []string
		for _, i := range rs.Instances {
			instance := `instance="` + i.Name + `"`
			if i.Role != "" && e2eutil.SumMetric(m, "database_controller_instance_role", with(instance, `role="`+i.Role+`"`)...) != 1 {
				wrong = append(wrong, i.Name+" not "+i.Role)
			}
			if i.Role != dbv1alpha1.RoleReplica {
				continue
			}
			if streaming := e2eutil.SumMetric(m, "database_controller_instance_streaming", with(instance)...) == 1; streaming != i.Streaming {
				wrong = append(wrong, fmt.Sprintf("%s streaming %v", i.Name, streaming))
			}
			if _, ok := m[fmt.Sprintf(`database_controller_replication_lag_bytes{database=%q,instance=%q,namespace=%q}`, name, i.Name, ns)]; ok != (i.LagBytes != nil) {
				wrong = append(wrong, fmt.Sprintf("%s lag series %v", i.Name, ok))
			}
		}
		for kind, want := range map[string]int{"failover": failovers, "switchover": switchovers} {
			if got := e2eutil.SumMetric(m, "database_controller_primary_changes_total", with(`kind="`+kind+`"`)...); got != float64(want) {
				wrong = append(wrong, fmt.Sprintf("%v %ss counted, want %d", got, kind, want))
			}
		}
		return len(wrong) == 0, fmt.Sprintf("%v; status %+v", wrong, rs.Instances)
	})
}

// writer is a client pod that runs a script through a Database's
// Secret: writerScript, or pgbenchScript.
type writer struct {
	ns, pod string
}

// startClient starts a pod named prefix-N that runs script with the
// Database's URI, and waits until it runs.
func startClient(t testing.TB, ns, db, prefix, script string) *writer {
	t.Helper()
	name := prefix + "-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	return startPod(t, ns, name, clientPod(name, db, postgresImage, script, "uri"))
}

// startPod creates the pod of manifest, named name, and waits until it runs.
func startPod(t testing.TB, ns, name, manifest string) *writer {
	t.Helper()
	e2eutil.KubectlIn(t, manifest, "-n", ns, "create", "-f", "-")
	e2eutil.Eventually(t, converge, "client pod "+name+" to run", func() (bool, string) {
		phase := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}"))
		return phase == "Running" || phase == "Succeeded", "phase " + phase
	})
	return &writer{ns: ns, pod: name}
}

func startWriter(t testing.TB, ns, db string, seconds int) *writer {
	t.Helper()
	return startClient(t, ns, db, "writer", fmt.Sprintf(writerScript, seconds))
}

// acknowledged is how many acknowledged writes the writer printed so far.
func (w *writer) acknowledged(t testing.TB) (int, error) {
	out, err := e2eutil.KubectlRun("", "-n", w.ns, "logs", w.pod)
	if err != nil {
		return 0, err
	}
	return len(parseWrites(t, string(out)).acked), nil
}

// waitAcknowledged waits until the writer printed n acknowledged writes:
// it runs, and reaches the primary, before what it is to write across.
func (w *writer) waitAcknowledged(t testing.TB, n int) {
	t.Helper()
	e2eutil.Eventually(t, converge, fmt.Sprintf("writer pod %s to have %d writes acknowledged", w.pod, n), func() (bool, string) {
		acked, err := w.acknowledged(t)
		if err != nil {
			return false, err.Error()
		}
		return acked >= n, fmt.Sprintf("%d acknowledged", acked)
	})
}

// stop has the writer end after its current write (its script checks
// for /tmp/stop before each), and reports whether it did. The exec that
// makes the file is tried again when it fails (exit 137 on a busy node,
// seen more than once), unless the writer ended (the exec may fail after
// the file was made); when it cannot be made, the writer ends at its own
// bound, and that is said.
func (w *writer) stop(t testing.TB) bool {
	t.Helper()
	for attempt := 1; ; attempt++ {
		out, err := e2eutil.KubectlRun("", "-n", w.ns, "exec", w.pod, "--", "touch", "/tmp/stop")
		if err == nil {
			return true
		}
		if phase := strings.TrimSpace(e2eutil.Kubectl(t, "-n", w.ns, "get", "pod", w.pod, "-o", "jsonpath={.status.phase}")); phase == "Succeeded" || phase == "Failed" {
			return true
		}
		if attempt == 5 {
			t.Logf("the writer %s was not stopped early (%v: %s); it ends at its bound", w.pod, err, strings.TrimSpace(string(out)))
			return false
		}
		t.Logf("stopping the writer %s: %v: %s; trying again", w.pod, err, strings.TrimSpace(string(out)))
		time.Sleep(2 * time.Second)
	}
}

// writerBound is how long a writer writes at most, in seconds: the tests
// end it with finish once it wrote across what they watch, however long a
// loaded machine takes; the bound only ends a writer whose test failed
// before that.
const writerBound = 900

// finish waits until the writer has written at least atLeast rows in all,
// and five since finish was called (so that it wrote past the outage of
// what the test watched, which the test waited for), then stops it and
// returns what it printed.
func (w *writer) finish(t testing.TB, atLeast int) string {
	t.Helper()
	since, err := w.acknowledged(t)
	if err != nil {
		t.Fatalf("reading the writer %s: %v", w.pod, err)
	}
	e2eutil.Eventually(t, 3*converge, fmt.Sprintf("writer pod %s to have %d writes acknowledged, 5 of them after %d", w.pod, atLeast, since), func() (bool, string) {
		n, err := w.acknowledged(t)
		if err != nil {
			return false, err.Error()
		}
		return n >= atLeast && n >= since+5, fmt.Sprintf("%d acknowledged", n)
	})
	// Its bound is far: a writer not stopped would outlast the wait.
	if !w.stop(t) {
		t.Fatalf("the writer %s could not be stopped (its bound is %d s)", w.pod, writerBound)
	}
	return w.wait(t)
}

// wait waits for the writer to end and returns what it printed.
func (w *writer) wait(t testing.TB) string {
	t.Helper()
	e2eutil.Eventually(t, 3*converge, "writer pod "+w.pod+" to end", func() (bool, string) {
		phase := strings.TrimSpace(e2eutil.Kubectl(t, "-n", w.ns, "get", "pod", w.pod, "-o", "jsonpath={.status.phase}"))
		return phase == "Succeeded" || phase == "Failed", "phase " + phase
	})
	return e2eutil.Kubectl(t, "-n", w.ns, "logs", w.pod)
}

// crashPrimary kills the server of the Database's primary, waits for
// another primary and for the crashed one to stream again, and returns
// when it killed it.
func crashPrimary(t testing.TB, ns, db, what string) time.Time {
	t.Helper()
	crashed := primaryOf(t, ns, db)
	at := time.Now()
	killServer(t, ns, crashed, "postgres")
	e2eutil.Eventually(t, converge, "a new primary after the crash", func() (bool, string) {
		p := primaryOf(t, ns, db)
		return p != "" && p != crashed, "primary " + p
	})
	t.Logf("%s: %s is the primary %s after the server of %s was killed", what, primaryOf(t, ns, db), time.Since(at).Round(100*time.Millisecond), crashed)
	waitReplicating(t, ns, db, "the crashed primary to come back as a replica that streams")
	return at
}

func primaryOf(t testing.TB, ns, name string) string {
	t.Helper()
	if rs := e2eutil.GetDB(t, ns, name).Status.Replication; rs != nil {
		return rs.Primary
	}
	return ""
}

// The primaries' node is drained (cordoned, so that their pods, evicted,
// cannot come back) and the controller is killed with SIGKILL once each
// status records its primary lost (and the replica it hands over to),
// while clients write, with a PostgreSQL, a MySQL and a MariaDB Database
// at once (one cordon and one kill for the three, to spend the suite's
// serial time once): the restarted controller reads each from the status
// and finishes the change, each old primary rejoins once its node is
// back, and no two pods are ever labelled primary. Then PostgreSQL's new
// primary's server is killed with SIGKILL: a replica is promoted at once
// (delay 0), the old primary rejoins, and the acknowledged writes lost to
// the asynchronous replication are counted. Last, the same crash with
// synchronous replication (a quorum of one) loses no acknowledged write.
// It is not parallel: it kills the suite's controller, and cordons its
// node.
func TestReplicationNodeLossControllerKillAndCrash(t *testing.T) {
	ns := e2eutil.NewNamespace(t)
	delay := "  replication:\n    failoverDelaySeconds: 8\n"
	e2eutil.KubectlIn(t, dbYAML("crash", "postgresql", "15", postgresImage, 3)+delay, "-n", ns, "create", "-f", "-")
	e2eutil.KubectlIn(t, mysqlYAML("stall", "9.7", mysqlImage, 3)+delay, "-n", ns, "create", "-f", "-")
	e2eutil.KubectlIn(t, dbYAML("stall-maria", "mysql", "10.11", mariadbImage, 3)+delay, "-n", ns, "create", "-f", "-")
	dbs, mysqls := []string{"crash", "stall", "stall-maria"}, []string{"stall", "stall-maria"}
	for _, name := range dbs {
		waitReplicating(t, ns, name, "three replicas of "+name+", one primary and two replicating")
		roles := watchRoles(t, ns, name)
		defer roles.finish(t)
	}
	runClient(t, ns, "crash", postgresImage, psql+`-c "CREATE TABLE w (n int PRIMARY KEY)"`)
	writers := map[string]*writer{"crash": startWriter(t, ns, "crash", writerBound)}
	for _, name := range mysqls {
		writers[name] = startMySQLWriter(t, ns, name, writerBound)
	}
	for _, name := range dbs {
		writers[name].waitAcknowledged(t, 3)
	}

	// 1. The node is lost to the primaries; the controller dies mid-way.
	lostAt := loseThePrimaryAndTheController(t, ns, dbs...)
	for _, name := range mysqls {
		server := serverProgram(imageOf(t, ns, name))
		w := parseWrites(t, writers[name].finish(t, 20))
		from, until := w.outage(float64(lostAt.UnixNano()) / 1e9)
		t.Logf("%s: node loss with the controller killed: writes failed for %.1f s (a delay of 8 s)", server, until-from)
		lost := w.lostMySQL(t, ns, name)
		w.report(t, server+": node loss (asynchronous replication; the pod's server shut down cleanly)", lost, 20)
		total := strings.TrimSpace(runClient(t, ns, name, imageOf(t, ns, name), waitMySQL+mysqlSQL+`"SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(n), 0)) FROM w"`))
		checkEveryPodHas(t, ns, name, "SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(n), 0)) FROM w", total)
	}
	writer := writers["crash"]

	// 2. A crash of the primary's server, failing over at once.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/crash", "--type=merge", "-p", `{"spec":{"replication":{"failoverDelaySeconds":0}}}`)
	time.Sleep(3 * time.Second)
	crashAt := crashPrimary(t, ns, "crash", "asynchronous")

	// 3. The same crash with synchronous replication: nothing acknowledged is lost.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/crash", "--type=merge", "-p", `{"spec":{"replication":{"synchronous":{"number":1}}}}`)
	e2eutil.Eventually(t, converge, "the primary to commit synchronously", func() (bool, string) {
		out, err := tryClient(t, ns, "crash", postgresImage, psql+`-c "SHOW synchronous_standby_names"`)
		return err == nil && strings.TrimSpace(out) == "ANY 1 (*)", strings.TrimSpace(out)
	})
	syncAt := crashPrimary(t, ns, "crash", "synchronous")

	w := parseWrites(t, writer.finish(t, 20))
	from, until := w.outage(float64(lostAt.UnixNano()) / 1e9)
	t.Logf("node loss with the controller killed: writes failed for %.1f s", until-from)
	crashSec := float64(crashAt.UnixNano()) / 1e9
	from, until = w.outage(crashSec)
	t.Logf("server crash: writes failed for %.1f s (%.1f s to %.1f s after the kill)", until-from, from-crashSec, until-crashSec)

	syncSec := float64(syncAt.UnixNano()) / 1e9
	lost := w.lost(t, ns, "crash")
	var lostBeforeCrash, lostSynchronous []int
	for _, n := range lost {
		// The writer numbers its attempts from 1: row n is attempt n-1.
		if at := w.at[n-1]; at < crashSec-1 {
			lostBeforeCrash = append(lostBeforeCrash, n)
		} else if at > syncSec-1 {
			lostSynchronous = append(lostSynchronous, n)
		}
	}
	from, until = w.outage(syncSec)
	t.Logf("synchronous server crash: writes failed for %.1f s", until-from)
	if len(lostSynchronous) > 0 {
		t.Errorf("acknowledged writes lost to a crash with synchronous replication: %v", lostSynchronous)
	}
	t.Logf("%d writes acknowledged; %d lost in all (asynchronous replication: a crash may lose what the primary had not sent): %v", len(w.acked), len(lost), lost)
	if len(lostBeforeCrash) > 0 {
		t.Errorf("acknowledged writes lost that were made more than 1 s before the crash (the node loss was a clean shutdown): %v", lostBeforeCrash)
	}
}

// loseThePrimaryAndTheController makes the primaries' node unavailable
// (cordoned, so that their pods, evicted through the Eviction API as a
// drain does, cannot come back) and kills the
// controller with SIGKILL once each status of the Databases in names
// records when its primary was lost (with, since a deleted primary's pod
// hands over at once, the replica it hands over to). It
// starts the controller again 2 s later, waits for it to make another pod
// the primary of each, then uncordons the node and waits for each old
// primary to replicate again. It returns when the pods were deleted.
func loseThePrimaryAndTheController(t *testing.T, ns string, names ...string) time.Time {
	t.Helper()
	old := map[string]string{}
	for _, name := range names {
		old[name] = primaryOf(t, ns, name)
	}
	e2eutil.Kubectl(t, "cordon", "real-node")
	t.Cleanup(func() { _, _ = e2eutil.KubectlRun("", "uncordon", "real-node") })
	// With every pod on the cordoned node, no switchover can move the
	// primary off it first: its disruption budget lets it go, and it is
	// evicted as a drain would.
	// The Eviction API reads the budget's status, which the disruption
	// controller writes after the spec changed: wait for it too (a CI run
	// evicted between the two, and was refused).
	for _, name := range names {
		e2eutil.Eventually(t, converge, "the budget of "+old[name]+" to let it go", func() (bool, string) {
			out := e2eutil.Kubectl(t, "-n", ns, "get", "pdb", name+"-primary", "-o",
				"jsonpath={.spec.minAvailable} {.metadata.generation} {.status.observedGeneration} {.status.disruptionsAllowed}")
			f := strings.Fields(out)
			return len(f) == 4 && f[0] == "0" && f[1] == f[2] && f[3] != "0",
				"minAvailable, generation, observed generation, disruptions allowed: " + out
		})
	}
	lostAt := time.Now()
	for _, name := range names {
		if err := evict(t, ns, old[name]); err != nil {
			t.Fatalf("eviction of the primary %s from the cordoned node: %v", old[name], err)
		}
	}
	for _, name := range names {
		e2eutil.Eventually(t, converge, "the controller to record that the primary of "+name+" was lost", func() (bool, string) {
			rs := e2eutil.GetDB(t, ns, name).Status.Replication
			return rs != nil && rs.PrimaryLostSince != nil, fmt.Sprintf("%+v", rs)
		})
	}
	killController(t)
	t.Logf("controller killed with SIGKILL %s after the primaries' pods were deleted, as they hand over", time.Since(lostAt).Round(100*time.Millisecond))
	time.Sleep(2 * time.Second)
	startController(t)
	for _, name := range names {
		e2eutil.Eventually(t, converge, "a new primary of "+name+" after the controller's restart", func() (bool, string) {
			p := primaryOf(t, ns, name)
			return p != "" && p != old[name], "primary " + p
		})
		db := e2eutil.GetDB(t, ns, name)
		t.Logf("%s is the primary %s after %s's pod was deleted (delay %s, controller down 2 s)", db.Status.Replication.Primary,
			time.Since(lostAt).Round(100*time.Millisecond), old[name], db.Spec.FailoverDelay())
	}
	e2eutil.Kubectl(t, "uncordon", "real-node")
	for _, name := range names {
		waitReplicating(t, ns, name, "the old primary of "+name+" to come back as a replica")
		if out := e2eutil.Kubectl(t, "-n", ns, "get", "pdb", name+"-primary", "-o", "jsonpath={.spec.minAvailable}"); strings.TrimSpace(out) != "1" {
			t.Errorf("the primary's budget of %s after the uncordon: minAvailable %s, want 1 (held again)", name, out)
		}
	}
	return lostAt
}

// A rolling image change of the same major version: every pod is restarted
// once, the replicas first, and the primary last, after a switchover; no
// acknowledged write is lost and no two pods are ever labelled primary.
func TestReplicationRollingImageChange(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("roll", "postgresql", "15", postgresImage, 3), "-n", ns, "create", "-f", "-")
	waitReplicating(t, ns, "roll", "three replicas, one primary and two streaming")
	runClient(t, ns, "roll", postgresImage, psql+`-c "CREATE TABLE w (n int PRIMARY KEY)"`)
	roles := watchRoles(t, ns, "roll")
	defer roles.finish(t)
	writer := startWriter(t, ns, "roll", writerBound)
	writer.waitAcknowledged(t, 3)

	changed := time.Now()
	// The same PostgreSQL 15, another image: the slow-init layer only runs
	// at a first init, which these data directories had.
	rollOutPrimaryLast(t, ns, "roll", fmt.Sprintf(`{"spec":{"image":%q}}`, slowInitImage), "15")
	var sts struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct{ Image string } `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "roll")
	if got := sts.Spec.Template.Spec.Containers[0].Image; got != slowInitImage {
		t.Errorf("StatefulSet image = %s, want %s", got, slowInitImage)
	}

	w := parseWrites(t, writer.finish(t, 20))
	lost := w.lost(t, ns, "roll")
	from, until := w.outage(float64(changed.UnixNano()) / 1e9)
	t.Logf("%d writes acknowledged during the rollout, %d lost; the first run of failed writes after the change: %.1f s", len(w.acked), len(lost), until-from)
	if len(lost) > 0 {
		t.Errorf("acknowledged writes lost in a rollout: %v", lost)
	}
}

// One server scaled up to three (it becomes the primary, and the new pods
// clone from it; a backup then dumps one of them), down to one while another pod is the primary (the role
// moves to pod 0 first), to zero and back: the rows and the primary stay.
func TestReplicationScaling(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("grow", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "grow", converge)
	runClient(t, ns, "grow", postgresImage, psql+`-c "CREATE TABLE kept (n int)" -c "INSERT INTO kept SELECT generate_series(1, 500)"`)
	count := psql + `-c "SELECT count(*) || ':' || sum(n) FROM kept"`
	const want = "500:125250"

	start := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "scale", "db/grow", "--replicas=3")
	db := waitReplicating(t, ns, "grow", "a single server scaled up to three, replicating")
	t.Logf("1 → 3 replicas, replicating, in %s; primary %s", time.Since(start).Round(time.Second), db.Status.Replication.Primary)
	if db.Status.Replication.Primary != "grow-0" {
		t.Errorf("primary after the scale-up = %s, want grow-0, the server that had the data", db.Status.Replication.Primary)
	}
	out := runClient(t, ns, "grow", postgresImage, `for i in $(seq 100); do got=$(psql "$RO_URI" -tAc "SELECT count(*) || ':' || sum(n) FROM kept" 2>/dev/null); [ "$got" = `+want+` ] && { echo "$got"; exit 0; }; sleep 0.2; done; echo "$got"; exit 1`, "ro-uri")
	t.Logf("the replicas cloned the rows: %s", strings.TrimSpace(out))
	// A backup dumps a streaming replica, not the primary.
	checkBackupOfAReplica(t, ns, "grow", func(name string) string { return dbYAML(name, "postgresql", "15", postgresImage, 1) }, postgresImage, count, want)

	scaleDownFromTheLastPod(t, ns, "grow")
	if got := strings.TrimSpace(runClient(t, ns, "grow", postgresImage, count)); got != want {
		t.Errorf("rows after the scale-down: %s, want %s", got, want)
	}
	stopAndStartThree(t, ns, "grow")
	if got := strings.TrimSpace(runClient(t, ns, "grow", postgresImage, count)); got != want {
		t.Errorf("rows after 0 and back: %s, want %s", got, want)
	}
}

// scaleDownFromTheLastPod switches a replicated Database of 3 pods over to
// <name>-2, unpins it, and scales to 1: the primary cannot be removed, so
// the controller switches over to <name>-0 first, which stays alone.
func scaleDownFromTheLastPod(t *testing.T, ns, name string) {
	t.Helper()
	last, first := name+"-2", name+"-0"
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replication":{"primary":%q}}}`, last))
	e2eutil.Eventually(t, converge, "the switchover to "+last, func() (bool, string) {
		p := primaryOf(t, ns, name)
		return p == last, "primary " + p
	})
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+name, "--type=json", "-p", `[{"op":"remove","path":"/spec/replication"}]`)
	start := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "scale", "db/"+name, "--replicas=1")
	e2eutil.Eventually(t, 2*converge, "one pod, "+first+", the primary", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, name)
		running, msg := e2eutil.IsRunning(db)
		p := primaryOf(t, ns, name)
		return running && p == first && db.Status.Replicas == 1, fmt.Sprintf("%s; primary %s; pods %d", msg, p, db.Status.Replicas)
	})
	t.Logf("3 → 1 replicas with %s the primary: %s primary and alone in %s", last, first, time.Since(start).Round(time.Second))
}

// stopAndStartThree scales a Database of one pod to 0 and then to 3: it
// stops, and comes back replicating with <name>-0 still the primary.
func stopAndStartThree(t *testing.T, ns, name string) {
	t.Helper()
	e2eutil.Kubectl(t, "-n", ns, "scale", "db/"+name, "--replicas=0")
	e2eutil.Eventually(t, converge, "Stopped", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, name)
		return db.Status.Phase == dbv1alpha1.PhaseStopped, string(db.Status.Phase)
	})
	e2eutil.Kubectl(t, "-n", ns, "scale", "db/"+name, "--replicas=3")
	db := waitReplicating(t, ns, name, "back to three, replicating")
	if db.Status.Replication.Primary != name+"-0" {
		t.Errorf("primary after 0 and back = %s, want %s-0", db.Status.Replication.Primary, name)
	}
}

// switchOver asks for a switchover of db to one of its replicas, waits until
// it is done and the replicas stream from the new primary, and returns
// when it asked.
func switchOver(t *testing.T, ns string, db *dbv1alpha1.Database) time.Time {
	t.Helper()
	to := switchOverTarget(db)
	changed := to + " is the primary, in place of " + db.Status.Replication.Primary
	told := eventsRecorded(t, ns, db.Name, "PrimaryChanged", changed)
	asked := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+db.Name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replication":{"primary":%q}}}`, to))
	e2eutil.Eventually(t, converge, "the switchover to "+to, func() (bool, string) {
		rs := e2eutil.GetDB(t, ns, db.Name).Status.Replication
		return rs != nil && rs.Primary == to && rs.TargetPrimary == "", fmt.Sprintf("%+v", rs)
	})
	t.Logf("switchover to %s done %s after it was asked", to, time.Since(asked).Round(100*time.Millisecond))
	waitReplicating(t, ns, db.Name, "every replica streaming from "+to)
	// Once: a pass on a cache behind the last status write finished it
	// again and told it twice.
	if n := eventsRecorded(t, ns, db.Name, "PrimaryChanged", changed) - told; n != 1 {
		t.Errorf("the switchover was told %d times (PrimaryChanged %q), want once", n, changed)
	}
	return asked
}

// switchOverTarget is the replica switchOver makes db's primary: the
// last of its instances that is not the primary.
func switchOverTarget(db *dbv1alpha1.Database) string {
	var to string
	for _, i := range db.Status.Replication.Instances {
		if i.Name != db.Status.Replication.Primary {
			to = i.Name
		}
	}
	return to
}

// eventsRecorded is how many times the events of reason and message were
// recorded about the Database name.
func eventsRecorded(t *testing.T, ns, name, reason, message string) int32 {
	t.Helper()
	return eventsCounted(t, ns, name, reason, func(m string) bool { return m == message })
}

// eventsStarting is how many times events of reason whose message starts
// with prefix were recorded about the Database name.
func eventsStarting(t *testing.T, ns, name, reason, prefix string) int32 {
	t.Helper()
	return eventsCounted(t, ns, name, reason, func(m string) bool { return strings.HasPrefix(m, prefix) })
}

// eventsCounted is how many times events of reason whose message matches
// were recorded about the Database name.
func eventsCounted(t *testing.T, ns, name, reason string, matches func(message string) bool) int32 {
	t.Helper()
	var n int32
	for _, e := range databaseEvents(t, ns, name, ",reason="+reason) {
		if matches(e.Message) {
			n += max(e.Count, 1)
		}
	}
	return n
}

// rollOutPrimaryLast applies patch, a change of the pods, to a replicated
// Database of 3 pods, waits until every pod runs it and replicates with
// version Running, and checks that each pod restarted once, the primary
// last.
func rollOutPrimaryLast(t *testing.T, ns, name, patch, version string) {
	t.Helper()
	primary := primaryOf(t, ns, name)
	uids := watchUIDs(t, ns, name)
	var order []string
	changed := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+name, "--type=merge", "-p", patch)
	e2eutil.Eventually(t, 3*converge, "every pod changed, replicating", func() (bool, string) {
		order = uids.replaced()
		db := e2eutil.GetDB(t, ns, name)
		running, msg := e2eutil.IsRunning(db)
		st, _, rmsg := e2eutil.Condition(db, dbv1alpha1.ConditionReplicating)
		return running && st == "True" && db.Status.CurrentVersion == version && len(order) >= 3,
			fmt.Sprintf("%s; Replicating=%s (%s); restarts so far %v", msg, st, rmsg, order)
	})
	uids.finish()
	t.Logf("rolled out in %s; pods restarted in this order: %v (primary before: %s, after: %s)",
		time.Since(changed).Round(time.Second), order, primary, primaryOf(t, ns, name))
	if len(order) != 3 || order[2] != primary {
		t.Errorf("pods restarted %v: want each of the 3 once, the primary %s last", order, primary)
	}
}
