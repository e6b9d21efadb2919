//go:build e2e

package realnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// serverPID is the PID, on this host, of the main process of pod's first
// container: the process in the pod's cgroup whose command line starts
// with program. 0 when there is none (yet).
func serverPID(t testing.TB, ns, pod, program string) int {
	t.Helper()
	return processPID(t, ns, pod, program+"\x00")
}

// processPID is the PID, on this host, of the oldest process in pod's
// cgroup whose command line starts with prefix (a PostgreSQL server's
// processes name themselves there: "postgres: <cluster_name>: startup
// ..."). 0 when there is none (yet). The oldest: a server's children are
// younger than it, and a PostgreSQL backend keeps its server's command
// line until it has read its client's first packet. In a clean clone's
// .ci/run at f85ea6d the first match in /proc's order was such a backend
// (PIDs wrap around at 32,768 here, so a new one can sort first), waiting
// on a slow TLS handshake: it was stopped in place of its postmaster,
// which went on serving, and TestDivergedReplicaIsRewound failed.
func processPID(t testing.TB, ns, pod, prefix string) int {
	t.Helper()
	found := processes(t, ns, pod, prefix)
	if len(found) == 0 {
		return 0
	}
	oldest := found[0]
	for _, p := range found[1:] {
		if p.started < oldest.started {
			oldest = p
		}
	}
	return oldest.pid
}

// process is a process on this host, and when it started (clock ticks
// after boot).
type process struct {
	pid     int
	started uint64
}

// processes are the processes in pod's cgroup whose command line starts
// with prefix.
func processes(t testing.TB, ns, pod, prefix string) []process {
	t.Helper()
	var p corev1.Pod
	if err := e2eutil.TryGetJSON(&p, "-n", ns, "get", "pod", pod); err != nil {
		return nil // not created yet, or deleted and not yet created again
	}
	uid := string(p.UID)
	var found []process
	cgroups, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, path := range cgroups {
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), "pod"+uid) && !strings.Contains(string(b), "pod"+strings.ReplaceAll(uid, "-", "_")) {
			continue
		}
		dir := filepath.Dir(path)
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmdline), prefix) {
			continue
		}
		// /proc/PID/stat: the start time is the 22nd field, the 20th
		// after the command's name in parentheses.
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 20 {
			continue
		}
		started, err := strconv.ParseUint(fields[19], 10, 64)
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		found = append(found, process{pid: pid, started: started})
	}
	return found
}

// pidInContainer is the PID that the process pid of this host has in its
// container's PID namespace, as /proc/PID/status's NSpid line ends.
func pidInContainer(t testing.TB, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" {
			return f[len(f)-1]
		}
	}
	t.Fatalf("process %d has no NSpid line", pid)
	return ""
}

// killServer kills the server of pod with SIGKILL from the host, as a
// crash would, once it runs, and returns the container's restart count
// before the kill.
func killServer(t testing.TB, ns, pod, program string) int32 {
	t.Helper()
	var pid int
	e2eutil.Eventually(t, converge, "the server of "+pod+" to run", func() (bool, string) {
		pid = serverPID(t, ns, pod, program)
		return pid != 0, "no " + program + " process in the pod's cgroup"
	})
	restarts := restartCount(t, ns, pod)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the server of %s (pid %d): %v", pod, pid, err)
	}
	t.Logf("killed the server of %s (pid %d, %d restarts before) with SIGKILL", pod, pid, restarts)
	return restarts
}

func restartCount(t testing.TB, ns, pod string) int32 {
	t.Helper()
	var p corev1.Pod
	e2eutil.GetJSON(t, &p, "-n", ns, "get", "pod", pod)
	if len(p.Status.ContainerStatuses) == 0 {
		return 0
	}
	return p.Status.ContainerStatuses[0].RestartCount
}

// watchStates polls the Database's phase and Ready reason until stop is
// closed, and returns each state it saw, once per change, in order.
func watchStates(t testing.TB, ns, name string, stop <-chan struct{}) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		var seen []string
		for {
			if out, err := e2eutil.KubectlRun("", "-n", ns, "get", "db", name, "-o",
				`jsonpath={.status.phase}/{.status.conditions[?(@.type=="Ready")].reason}`); err == nil {
				if s := string(out); len(seen) == 0 || seen[len(seen)-1] != s {
					seen = append(seen, s)
				}
			}
			select {
			case <-stop:
				out <- seen
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return out
}

// warnings are the Warning events on the Database name with reason, and
// how often each was recorded.
func warnings(t testing.TB, ns, name, reason string) (objects int, recorded int32) {
	t.Helper()
	events := databaseEvents(t, ns, name, ",type=Warning,reason="+reason)
	for _, e := range events {
		recorded += max(e.Count, 1)
	}
	return len(events), recorded
}

// One kill -9 of a single server is a restart, not a crash loop and not a
// rollout: the Database goes Degraded (Restarting) and back to Running, with
// no CrashLooping and no Updating. Crashes soon after each restart, three
// in a row, make a crash loop, with its Warning.
func TestOneCrashIsARestartAndRepeatedOnesALoop(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("crashy", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "crashy", converge)

	// The process killed is the server's own, even while a backend that
	// has not read its client's first packet has the server's command
	// line (processPID): a connection that sends nothing holds one.
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = e2eutil.KubectlRun("", "-n", ns, "exec", "crashy-0", "--", "perl", "-MIO::Socket::INET", "-e",
			`my $s = IO::Socket::INET->new("127.0.0.1:5432") or die "$!"; sleep 60`)
	}()
	e2eutil.Eventually(t, converge, "a backend of crashy-0 with its server's command line", func() (bool, string) {
		n := len(processes(t, ns, "crashy-0", "postgres\x00"))
		return n >= 2, fmt.Sprintf("%d processes", n)
	})
	postmaster := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "exec", "crashy-0", "--", "sh", "-c", `head -n 1 "$PGDATA/postmaster.pid"`))
	if got := pidInContainer(t, serverPID(t, ns, "crashy-0", "postgres")); got != postmaster {
		t.Errorf("the server's process found is %s in its container, want the postmaster's, %s", got, postmaster)
	}

	stop := make(chan struct{})
	states := watchStates(t, ns, "crashy", stop)
	killed := time.Now()
	killServer(t, ns, "crashy-0", "postgres")
	<-held
	e2eutil.Eventually(t, converge, "the server to restart", func() (bool, string) {
		return restartCount(t, ns, "crashy-0") >= 1, "not restarted yet"
	})
	e2eutil.WaitRunning(t, ns, "crashy", converge)
	t.Logf("Running again %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	// What a status write in flight would still show.
	time.Sleep(2 * time.Second)
	close(stop)
	seen := <-states
	t.Logf("states seen after one kill: %s", strings.Join(seen, " → "))
	for _, s := range seen {
		if strings.HasPrefix(s, "Updating/") || strings.HasSuffix(s, "/CrashLooping") {
			t.Errorf("one crash was reported as %s (states seen: %s)", s, strings.Join(seen, " → "))
		}
	}
	if n, _ := warnings(t, ns, "crashy", "CrashLooping"); n != 0 {
		t.Errorf("one crash gave %d CrashLooping Warnings, want none: %v", n, dbEvents(t, ns, "crashy"))
	}

	// Killed again as soon as it runs, three times: the kubelet backs off.
	for range 3 {
		before := killServer(t, ns, "crashy-0", "postgres")
		e2eutil.Eventually(t, 2*converge, "the server to restart", func() (bool, string) {
			return restartCount(t, ns, "crashy-0") > before, "not restarted yet"
		})
	}
	e2eutil.Eventually(t, converge, "the Ready condition to name a crash loop", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "crashy")
		_, reason, msg := e2eutil.Condition(db, "Ready")
		return reason == "CrashLooping" || (db.Status.Phase == "Running" && crashLoopWarned(t, ns)), string(db.Status.Phase) + " " + reason + ": " + msg
	})
	// One per loop: the server may pass its readiness probe, and the
	// Database be Running, between two kills.
	n, count := warnings(t, ns, "crashy", "CrashLooping")
	t.Logf("repeated crashes: %d CrashLooping Warning events, recorded %d times", n, count)
	if n == 0 {
		t.Errorf("repeated crashes gave no CrashLooping Warning: %v", dbEvents(t, ns, "crashy"))
	}
	e2eutil.WaitRunning(t, ns, "crashy", 2*converge)
}

// crashLoopWarned reports whether a CrashLooping Warning was emitted: the
// loop may be over by the time a poll looks.
func crashLoopWarned(t testing.TB, ns string) bool {
	n, _ := warnings(t, ns, "crashy", "CrashLooping")
	return n > 0
}

// An image that cannot be pulled is reported once: the kubelet's words
// alternate between the pull error and "Back-off pulling image" for as long
// as it tries, and the Database gets one ImagePullFailed Warning in two
// minutes, recorded once.
func TestImageThatCannotBePulledWarnsOnce(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("nopull", "postgresql", "15", "localhost/dbc/does-not-exist:15", 1), "-n", ns, "create", "-f", "-")
	e2eutil.Eventually(t, converge, "the Ready condition to name the pull", func() (bool, string) {
		_, reason, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, "nopull"), "Ready")
		return reason == "ImagePullFailed", reason + ": " + msg
	})
	start := time.Now()
	var messages []string
	for time.Since(start) < 2*time.Minute {
		var p corev1.Pod
		e2eutil.GetJSON(t, &p, "-n", ns, "get", "pod", "nopull-0")
		if cs := p.Status.ContainerStatuses; len(cs) > 0 && cs[0].State.Waiting != nil {
			if m := cs[0].State.Waiting.Reason; len(messages) == 0 || messages[len(messages)-1] != m {
				messages = append(messages, m)
			}
		}
		time.Sleep(time.Second)
	}
	t.Logf("the kubelet's reasons in 2 min: %s", strings.Join(messages, " → "))
	if n, count := warnings(t, ns, "nopull", "ImagePullFailed"); n != 1 || count != 1 {
		t.Errorf("an image that cannot be pulled gave %d ImagePullFailed Warning events recorded %d times in 2 min, want one, once: %v",
			n, count, dbEvents(t, ns, "nopull"))
	}
	if db := e2eutil.GetDB(t, ns, "nopull"); db.Status.Phase == "Running" {
		t.Errorf("phase %s with an image that cannot be pulled", db.Status.Phase)
	}
}

// sessionWriterScript is writerScript over one session: each INSERT on
// the connection the client opened first, "ok N T" once it committed (T
// the server's clock, the host's). The session ends at the first error.
const sessionWriterScript = `end=$(( $(date +%%s) + %d ))
i=0
while [ "$(date +%%s)" -lt "$end" ] && [ ! -e /tmp/stop ]; do
  i=$((i + 1))
  echo "INSERT INTO w VALUES ($i); SELECT 'ok', $i, extract(epoch FROM clock_timestamp());"
  sleep 0.2
done | psql "$URI" -v ON_ERROR_STOP=1 -qtA -F ' '
echo "the session ended: $?"`

// A primary whose server hangs while a session it already had goes on
// writing: its postmaster is stopped (SIGSTOP), so it takes no new
// connection (the controller's checks and its pod's readiness fail), but
// the session's backend, and the WAL sender, still run. No replica may be
// promoted beside it while it can still take writes: every write the
// session saw committed is in the Database after the failover.
func TestReplicationHungPrimaryIsNotPromotedBeside(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("hung", "postgresql", "15", postgresImage, 2)+"  replication:\n    failoverDelaySeconds: 5\n", "-n", ns, "create", "-f", "-")
	old := waitReplicating(t, ns, "hung", "two replicas, one primary and one streaming").Status.Replication.Primary
	runClient(t, ns, "hung", postgresImage, psql+`-c "CREATE TABLE w (n int PRIMARY KEY)"`)
	w := startClient(t, ns, "hung", "session", fmt.Sprintf(sessionWriterScript, writerBound))
	w.waitAcknowledged(t, 3)

	resume := pauseProcess(t, ns, old, "postgres\x00")
	stopped := time.Now()
	e2eutil.Eventually(t, converge, "a new primary", func() (bool, string) {
		p := primaryOf(t, ns, "hung")
		return p != "" && p != old, "primary " + p
	})
	t.Logf("the postmaster of %s stopped: %s is the primary %s later", old, primaryOf(t, ns, "hung"), time.Since(stopped).Round(100*time.Millisecond))
	// The session, if it still can, writes on for a while; then the old
	// server, if it still runs, is let go on, to be fenced and rejoin.
	time.Sleep(5 * time.Second)
	_ = resume() // gone, if its pod was deleted
	waitReplicating(t, ns, "hung", "the old primary back as a replica that streams")
	w.stop(t)
	out := w.wait(t)
	writes := parseWrites(t, out)
	lost := writes.lost(t, ns, "hung")
	writes.report(t, "a hung primary's session", lost, 3)
	if len(lost) > 0 {
		t.Errorf("acknowledged writes lost: a replica was promoted while the hung primary's session still wrote; the writer printed:\n%s", out)
	}
}
