//go:build e2e

package realnode

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
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
	// The default failover delay while the servers start: with none, one
	// poll of fork-0 that a busy machine answers late (the suite's peak
	// load) fails over before the test begins.
	e2eutil.KubectlIn(t, dbYAML("fork", "postgresql", "15", postgresImage, 3), "-n", ns, "create", "-f", "-")
	if got := waitReplicating(t, ns, "fork", "three servers, two streaming").Status.Replication.Primary; got != "fork-0" {
		t.Fatalf("first primary %s, want fork-0", got)
	}
	e2eutil.Kubectl(t, "-n", ns, "patch", "database", "fork", "--type=merge", "-p", `{"spec":{"replication":{"failoverDelaySeconds":0}}}`)
	sql := func(pod, query string) (string, error) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "exec", pod, "-c", "postgresql", "--",
			"psql", "-X", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-tAc", query)
		return strings.TrimSpace(string(out)), err
	}
	must := func(pod, query string) string {
		t.Helper()
		out, err := sql(pod, query)
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s", query, pod, err, out)
		}
		return out
	}
	rows := func(pod, want string) {
		t.Helper()
		e2eutil.Eventually(t, converge, pod+" to hold "+want+" rows", func() (bool, string) {
			out, err := sql(pod, "SELECT count(*) FROM f")
			return err == nil && out == want, out
		})
	}
	must("fork-0", "CREATE TABLE f (n int); INSERT INTO f SELECT generate_series(1, 100)")
	rows("fork-1", "100")
	rows("fork-2", "100")

	// fork-1 stops receiving; fork-2 alone gets the next 100 rows.
	must("fork-1", "ALTER SYSTEM SET primary_conninfo = ''")
	must("fork-1", "SELECT pg_reload_conf()")
	e2eutil.Eventually(t, converge, "fork-1's WAL receiver to stop", func() (bool, string) {
		out, err := sql("fork-1", "SELECT count(*) FROM pg_stat_wal_receiver")
		return err == nil && out == "0", out
	})
	must("fork-0", "INSERT INTO f SELECT generate_series(101, 200)")
	rows("fork-2", "200")
	rows("fork-1", "100")

	// fork-2, then fork-0, stop answering: their postmasters are stopped
	// (the sessions they run go on), so that new connections hang. resume
	// says the error of SIGCONT: ESRCH once the process is gone.
	pause := func(pod string) (resume func() error) {
		pid := serverPID(t, ns, pod, "postgres")
		if pid == 0 {
			t.Fatalf("no postgres process in the pod %s", pod)
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping the postmaster of %s (pid %d): %v", pod, pid, err)
		}
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
	resume2 := pause("fork-2")
	resume0 := pause("fork-0")
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
