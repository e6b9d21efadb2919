//go:build e2e

package realnode

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine/postgresql"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// A PostgreSQL replica that applied WAL which its new primary's history
// does not have can never follow it, and its server does not say so over
// SQL: it retries for ever ("new timeline 2 forked off current database
// system timeline 1 before current recovery point"). Made here as an
// unplanned failover makes it: fork-1 stops receiving, fork-0 writes 100
// rows that only fork-2 gets, then fork-0 and fork-2 stop answering
// (SIGSTOP). fork-0, a primary whose kubelet still reports its server
// running, is stopped (its pod deleted; the kubelet kills the postmaster
// after the grace period, for SIGTERM waits behind SIGSTOP), and then
// fork-1, the one replica that answers, is promoted. Once fork-2 answers
// again, the controller names its divergence in the Replicating
// condition, restarts its pod with one Warning, and its init container
// rewinds it (pg_rewind) onto fork-1's timeline: all three stream from
// fork-1 and hold its 100 rows; fork-0's new pod rejoins as a former
// primary does.
func TestDivergedReplicaIsRewound(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	replicatedFromZero(t, ns, "fork", 3)
	must := func(pod, query string) string { t.Helper(); return mustPodSQL(t, ns, pod, query) }
	rows := func(pod, want string) { t.Helper(); waitRows(t, ns, pod, "f", want) }
	must("fork-0", "CREATE TABLE f (n int); INSERT INTO f SELECT generate_series(1, 100)")
	rows("fork-1", "100")
	rows("fork-2", "100")

	// fork-1 stops receiving; fork-2 alone gets the next 100 rows.
	stopReceiving(t, ns, "fork-1")
	must("fork-0", "INSERT INTO f SELECT generate_series(101, 200)")
	rows("fork-2", "200")
	rows("fork-1", "100")

	// fork-0's data is marked fenced, as the controller marks a primary it
	// fences, so that its next pod waits for the new primary and rejoins:
	// one made before fork-1's promotion would otherwise start as the
	// primary it was, and, as it wrote WAL fork-1 does not stream, the
	// failover would be called off (TestFailoverCalledOffWhenTheOldPrimaryIsBackAhead).
	must("fork-0", "COPY (SELECT 'fenced by the test') TO "+quoteSQL(postgresql.FenceMarker))
	// fork-2, then fork-0, stop answering: their postmasters are stopped
	// (the sessions they run go on), so that new connections hang.
	failOverAtOnce(t, ns, "fork")
	resume2 := pauseProcess(t, ns, "fork-2", "postgres\x00")
	resume0 := pauseProcess(t, ns, "fork-0", "postgres\x00")
	stopped := time.Now()
	e2eutil.Eventually(t, converge, "fork-1 promoted, the one replica that answers", func() (bool, string) {
		rs := e2eutil.GetDB(t, ns, "fork").Status.Replication
		return rs != nil && rs.Primary == "fork-1" && rs.TargetPrimary == "", rs.Primary + " " + rs.TargetPrimary
	})
	t.Logf("fork-1 promoted %s after fork-0 and fork-2 stopped answering", time.Since(stopped).Round(100*time.Millisecond))
	// The default failover delay again before the two answer: with none,
	// one poll of fork-1 that a busy machine answers late fails over again
	// (seen in CI: fork-2 promoted 15 s after fork-1), and fork-2 has
	// nothing left to rewind.
	e2eutil.Kubectl(t, "-n", ns, "patch", "database", "fork", "--type=json", "-p", `[{"op":"remove","path":"/spec/replication/failoverDelaySeconds"}]`)
	var pod corev1.Pod
	e2eutil.GetJSON(t, &pod, "-n", ns, "get", "pod", "fork-2")
	if err := resume2(); err != nil {
		t.Fatalf("resuming the postmaster of fork-2: %v", err)
	}
	// fork-0's postmaster is gone with its pod: a replica was not
	// promoted beside a primary whose server ran.
	if err := resume0(); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("resuming the postmaster of fork-0 after fork-1's promotion: %v, want ESRCH: its server was not stopped before the failover", err)
	}

	// fork-2 is named, and restarted once its pod is brokenRestartAge old.
	said := ""
	e2eutil.Eventually(t, 3*converge, "the controller to restart fork-2, which diverged", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "fork")
		if _, _, msg := e2eutil.Condition(db, dbv1alpha1.ConditionReplicating); strings.Contains(msg, "fork-2 (it cannot replicate: ") {
			said = msg
		}
		var now corev1.Pod
		if err := e2eutil.TryGetJSON(&now, "-n", ns, "get", "pod", "fork-2"); err != nil {
			// Between the old pod's deletion and the new one's creation.
			return false, err.Error()
		}
		return now.UID != pod.UID, "pod " + string(now.UID)
	})
	t.Logf("while fork-2 could not follow fork-1, Replicating said: %s", said)
	if !strings.Contains(said, "it diverged") {
		t.Errorf("the Replicating condition never said that fork-2 diverged: %q", said)
	}
	if objects, recorded := warnings(t, ns, "fork", "ReplicaBroken"); objects != 1 || recorded != 1 {
		t.Errorf("ReplicaBroken Warnings: %d events recorded %d times, want one, once: %v", objects, recorded, dbEvents(t, ns, "fork"))
	}
	db := waitReplicating(t, ns, "fork", "fork-2 rewound and fork-0 rejoined, both streaming from fork-1")
	t.Logf("all three stream from %s %s after the failover", db.Status.Replication.Primary, time.Since(stopped).Round(time.Second))
	init := e2eutil.Kubectl(t, "-n", ns, "logs", "fork-2", "-c", "replication")
	if !strings.Contains(init, "rewinding it") || !strings.Contains(init, "rewound; starting as a replica") {
		t.Errorf("fork-2's init container did not rewind it:\n%s", init)
	}
	t.Logf("fork-2: %s", lineWith(init, "rewinding it"))
	// The rows only the old primary and fork-2 had are gone: every server
	// holds what fork-1 holds.
	for _, p := range []string{"fork-0", "fork-1", "fork-2"} {
		rows(p, "100")
	}
}

// A failover's old primary that is back as the primary before the target
// is promoted, having written WAL the target does not stream, stays the
// primary: the failover is called off, and none of its writes is thrown
// away (without that, it was fenced, and the promotion waited for the
// target to receive that WAL, for ever, with no server taking writes).
// Made here so: back-1 stops receiving, and back-0 writes 100 rows that
// only it has; back-1's startup process is stopped, so that it cannot
// leave recovery (a promotion asked waits for it, and times out); back-0's
// postmaster is stopped, so the controller stops its pod, whose server
// the kubelet kills at the end of its grace period; its new pod starts as
// the primary it was, as no other primary answers.
func TestFailoverCalledOffWhenTheOldPrimaryIsBackAhead(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	replicatedFromZero(t, ns, "back", 2)
	mustPodSQL(t, ns, "back-0", "CREATE TABLE b (n int); INSERT INTO b SELECT generate_series(1, 100)")
	waitRows(t, ns, "back-1", "b", "100")
	conninfo := stopReceiving(t, ns, "back-1")
	mustPodSQL(t, ns, "back-0", "INSERT INTO b SELECT generate_series(101, 200)")
	var old corev1.Pod
	e2eutil.GetJSON(t, &old, "-n", ns, "get", "pod", "back-0")
	failOverAtOnce(t, ns, "back")
	resumeStartup := pauseProcess(t, ns, "back-1", "postgres: back-1: startup")
	resume0 := pauseProcess(t, ns, "back-0", "postgres\x00")
	stopped := time.Now()

	called := ""
	e2eutil.Eventually(t, converge, "back-0's new pod to be the primary again, the failover called off", func() (bool, string) {
		for _, e := range databaseEvents(t, ns, "back", ",reason=FailoverCalledOff") {
			called = e.Message
		}
		var now corev1.Pod
		if err := e2eutil.TryGetJSON(&now, "-n", ns, "get", "pod", "back-0"); err != nil {
			return false, err.Error()
		}
		rs := e2eutil.GetDB(t, ns, "back").Status.Replication
		return called != "" && now.UID != old.UID && now.Labels[dbv1alpha1.LabelRole] == "primary" && rs.Primary == "back-0" && rs.TargetPrimary == "",
			fmt.Sprintf("pod %s role %q; primary %q target %q; called off: %q", now.UID, now.Labels[dbv1alpha1.LabelRole], rs.Primary, rs.TargetPrimary, called)
	})
	t.Logf("%s after back-0 stopped answering: %s", time.Since(stopped).Round(100*time.Millisecond), called)
	if err := resume0(); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("resuming the postmaster of back-0: %v, want ESRCH: its server was not stopped", err)
	}
	if got := mustPodSQL(t, ns, "back-1", "SELECT pg_is_in_recovery()"); got != "t" {
		t.Errorf("back-1 in recovery: %s, want t: it was promoted", got)
	}
	// Every row back-0 wrote is there, and it takes writes.
	waitRows(t, ns, "back-0", "b", "200")
	mustPodSQL(t, ns, "back-0", "INSERT INTO b VALUES (201)")

	// back-1 goes on, without the promotion it was asked for while it
	// could not, and streams from back-0 again.
	data := mustPodSQL(t, ns, "back-1", "SHOW data_directory")
	e2eutil.Kubectl(t, "-n", ns, "exec", "back-1", "-c", "postgresql", "--", "rm", "-f", data+"/promote")
	if err := resumeStartup(); err != nil {
		t.Fatalf("resuming back-1's startup process: %v", err)
	}
	mustPodSQL(t, ns, "back-1", "ALTER SYSTEM SET primary_conninfo = "+quoteSQL(conninfo))
	mustPodSQL(t, ns, "back-1", "SELECT pg_reload_conf()")
	waitReplicating(t, ns, "back", "back-1 streaming from back-0 again")
	waitRows(t, ns, "back-1", "b", "201")
	if n := eventsCounted(t, ns, "back", "PrimaryChanged", func(string) bool { return true }); n != 0 {
		t.Errorf("the primary changed %d times, want none: %v", n, dbEvents(t, ns, "back"))
	}
}

// replicatedFromZero creates the replicated PostgreSQL Database name of n
// pods and waits until they replicate, <name>-0 the primary.
func replicatedFromZero(t *testing.T, ns, name string, n int) {
	t.Helper()
	e2eutil.KubectlIn(t, dbYAML(name, "postgresql", "15", postgresImage, n), "-n", ns, "create", "-f", "-")
	if got := waitReplicating(t, ns, name, "every server streaming").Status.Replication.Primary; got != name+"-0" {
		t.Fatalf("first primary %s, want %s-0", got, name)
	}
}

// failOverAtOnce sets the failover delay of the Database name to 0, just
// before a test stops its primary. Not before: with no delay, one poll of
// the primary that a busy machine answers late fails over, while the
// servers start or while the test writes the rows it then checks (seen in
// a new machine's CI: fork-2 made the primary before the test stopped
// fork-0).
func failOverAtOnce(t *testing.T, ns, name string) {
	t.Helper()
	e2eutil.Kubectl(t, "-n", ns, "patch", "database", name, "--type=merge", "-p", `{"spec":{"replication":{"failoverDelaySeconds":0}}}`)
}

// stopReceiving clears the primary_conninfo of the replica pod, waits until
// its WAL receiver stops, and returns the setting it had.
func stopReceiving(t *testing.T, ns, pod string) (conninfo string) {
	t.Helper()
	conninfo = mustPodSQL(t, ns, pod, "SHOW primary_conninfo")
	mustPodSQL(t, ns, pod, "ALTER SYSTEM SET primary_conninfo = ''")
	mustPodSQL(t, ns, pod, "SELECT pg_reload_conf()")
	e2eutil.Eventually(t, converge, pod+"'s WAL receiver to stop", func() (bool, string) {
		out, err := podSQL(ns, pod, "SELECT count(*) FROM pg_stat_wal_receiver")
		return err == nil && out == "0", out
	})
	return conninfo
}

// podSQL runs query with psql as the superuser in pod's postgresql
// container, and returns what it printed, trimmed.
func podSQL(ns, pod, query string) (string, error) {
	out, err := e2eutil.KubectlRun("", "-n", ns, "exec", pod, "-c", "postgresql", "--",
		"psql", "-X", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-tAc", query)
	return strings.TrimSpace(string(out)), err
}

// mustPodSQL is podSQL that fails the test on an error.
func mustPodSQL(t testing.TB, ns, pod, query string) string {
	t.Helper()
	out, err := podSQL(ns, pod, query)
	if err != nil {
		t.Fatalf("%s on %s: %v\n%s", query, pod, err, out)
	}
	return out
}

// waitRows waits until pod's table holds want rows.
func waitRows(t testing.TB, ns, pod, table, want string) {
	t.Helper()
	e2eutil.Eventually(t, converge, pod+" to hold "+want+" rows", func() (bool, string) {
		out, err := podSQL(ns, pod, "SELECT count(*) FROM "+table)
		return err == nil && out == want, out
	})
}

// quoteSQL is s as an SQL string literal.
func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// pauseProcess stops (SIGSTOP) the process of pod's whose command line
// starts with prefix (processPID), and returns what resumes it (SIGCONT)
// and says the error: ESRCH once the process is gone. The test's cleanup
// resumes it, if nothing did before.
func pauseProcess(t testing.TB, ns, pod, prefix string) (resume func() error) {
	t.Helper()
	pid := processPID(t, ns, pod, prefix)
	if pid == 0 {
		t.Fatalf("no process %q in the pod %s", prefix, pod)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping the process %q of %s (pid %d): %v", prefix, pod, pid, err)
	}
	t.Logf("stopped the process %q of %s (pid %d)", strings.TrimSuffix(prefix, "\x00"), pod, pid)
	resumed := false
	resume = func() error {
		if resumed {
			return nil
		}
		resumed = true
		return syscall.Kill(pid, syscall.SIGCONT)
	}
	t.Cleanup(func() { _ = resume() })
	return resume
}
