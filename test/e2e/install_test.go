//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// TestInstall checks what `kubectl apply -k artifacts/deploy` (run by
// TestMain) installed: the Deployment's pods run, on kwok's fake nodes.
func TestInstall(t *testing.T) {
	t.Parallel()
	e2eutil.Eventually(t, 2*converge, "the controller Deployment to be available", func() (bool, string) {
		out, _ := e2eutil.KubectlRun("", "-n", installNamespace, "get", "deployment", "database-controller",
			"-o", "jsonpath={.status.readyReplicas}/{.spec.replicas}")
		return string(out) == "2/2", string(out)
	})
	out := e2eutil.Kubectl(t, "-n", installNamespace, "get", "pods", "-o", "jsonpath={range .items[*]}{.status.phase} {end}")
	if strings.Count(out, "Running") != 2 {
		t.Errorf("controller pods: %q, want 2 Running", out)
	}
}

// TestLeastPrivilege asks the API server what the ServiceAccount of the
// install may do. Every other e2e test runs the controller under this
// identity, which shows the rules are sufficient; this shows they are not
// more than that.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	as := "--as=system:serviceaccount:" + installNamespace + ":" + serviceAccount
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"create", "statefulsets.apps", "-n", "default"}, "yes"},
		{[]string{"patch", "services", "-n", "default"}, "yes"},
		{[]string{"create", "secrets", "-n", "default"}, "yes"},
		{[]string{"patch", "databases.dbcontroller.io", "--subresource=status", "-n", "default"}, "yes"},
		{[]string{"create", "events", "-n", "default"}, "yes"},
		{[]string{"patch", "persistentvolumeclaims", "-n", "default"}, "yes"},
		{[]string{"watch", "pods", "-n", "default"}, "yes"},
		{[]string{"list", "events", "-n", "default"}, "yes"},
		{[]string{"watch", "events", "-n", "default"}, "yes"},
		{[]string{"create", "jobs.batch", "-n", "default"}, "yes"},
		{[]string{"create", "databasebackups.dbcontroller.io", "-n", "default"}, "yes"},
		{[]string{"update", "databasebackups.dbcontroller.io", "--subresource=status", "-n", "default"}, "yes"},
		{[]string{"patch", "databases.dbcontroller.io", "-n", "default"}, "yes"},
		{[]string{"patch", "secrets", "-n", "default"}, "yes"},
		{[]string{"create", "persistentvolumeclaims", "-n", "default"}, "yes"},
		{[]string{"update", "leases.coordination.k8s.io/database-controller", "-n", installNamespace}, "yes"},

		{[]string{"delete", "namespaces"}, "no"},
		{[]string{"create", "pods", "-n", "default"}, "no"},
		{[]string{"delete", "pods", "-n", "default"}, "yes"},
		// The role label of a replicated PostgreSQL Database's pods.
		{[]string{"patch", "pods", "-n", "default"}, "yes"},
		{[]string{"update", "pods", "-n", "default"}, "no"},
		{[]string{"update", "jobs.batch", "-n", "default"}, "no"},
		{[]string{"create", "pods/exec", "-n", "default"}, "no"},
		// In the cluster the controller dials the pods' addresses
		// (--server-access=auto is direct there): no tunnel through the
		// API server, which a controller run out of the cluster takes
		// with its user's own rights.
		{[]string{"create", "pods/portforward", "-n", "default"}, "no"},
		{[]string{"delete", "statefulsets.apps", "-n", "default"}, "no"},
		// The data claim of a replica whose data cannot start, to seed it again.
		{[]string{"delete", "persistentvolumeclaims", "-n", "default"}, "yes"},
		{[]string{"update", "persistentvolumeclaims", "-n", "default"}, "no"},
		{[]string{"update", "secrets", "-n", "default"}, "no"},
		{[]string{"delete", "secrets", "-n", "default"}, "no"},
		{[]string{"update", "databases.dbcontroller.io", "-n", "default"}, "no"},
		{[]string{"update", "databasebackups.dbcontroller.io", "-n", "default"}, "no"},
		{[]string{"delete", "databases.dbcontroller.io", "-n", "default"}, "no"},
		{[]string{"bind", "clusterroles.rbac.authorization.k8s.io"}, "no"},
		{[]string{"escalate", "clusterroles.rbac.authorization.k8s.io"}, "no"},
		{[]string{"create", "rolebindings.rbac.authorization.k8s.io", "-n", "default"}, "no"},
		// The ConfigMaps of spec.parametersConfigMap, through a watch
		// limited by their label; never one by name, never a write.
		{[]string{"get", "configmaps", "-n", "default"}, "no"},
		{[]string{"watch", "configmaps", "-n", "default"}, "yes"},
		{[]string{"patch", "configmaps", "-n", "default"}, "no"},
		{[]string{"create", "deployments.apps", "-n", "default"}, "no"},
		{[]string{"update", "leases.coordination.k8s.io", "-n", "default"}, "no"},
		// Whether nodes are cordoned, for drains; nothing else of them.
		{[]string{"watch", "nodes"}, "yes"},
		{[]string{"patch", "nodes"}, "no"},
		{[]string{"update", "nodes"}, "no"},
		// A replicated Database's disruption budgets; never an eviction.
		{[]string{"delete", "poddisruptionbudgets.policy", "-n", "default"}, "yes"},
		{[]string{"update", "poddisruptionbudgets.policy", "-n", "default"}, "no"},
		{[]string{"create", "pods/eviction", "-n", "default"}, "no"},
		// A monitored Database's PodMonitor; never another's changed by update.
		{[]string{"patch", "podmonitors.monitoring.coreos.com", "-n", "default"}, "yes"},
		{[]string{"update", "podmonitors.monitoring.coreos.com", "-n", "default"}, "no"},
		{[]string{"create", "servicemonitors.monitoring.coreos.com", "-n", "default"}, "no"},
	}
	for _, tt := range tests {
		out, _ := e2eutil.KubectlRun("", append([]string{"auth", "can-i", as}, tt.args...)...)
		// The answer is the last line; kubectl may warn before it.
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if got := lines[len(lines)-1]; got != tt.want {
			t.Errorf("can-i %s: %q, want %q", strings.Join(tt.args, " "), got, tt.want)
		}
	}
}

func leaseHolder(t *testing.T, ns string) string {
	t.Helper()
	out, err := e2eutil.KubectlRun("", "-n", ns, "get", "lease", "database-controller", "-o", "jsonpath={.spec.holderIdentity}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// leaseRecord is one version of the Lease.
type leaseRecord struct {
	holder               string
	leaseDurationSeconds int32
	acquireTime          time.Time
	renewTime            time.Time
}

func (r leaseRecord) String() string {
	return fmt.Sprintf("holder=%q duration=%ds acquired=%s renewed=%s", r.holder, r.leaseDurationSeconds,
		r.acquireTime.Format("15:04:05.000"), r.renewTime.Format("15:04:05.000"))
}

// leaseWatch records every version of a Lease, as `kubectl get --watch`
// streams them, so that a test sees also the states that last only a
// moment, such as a released Lease before a standby takes it.
type leaseWatch struct {
	mu      sync.Mutex
	records []leaseRecord
	err     error
}

func watchLease(t *testing.T, ns, name string) *leaseWatch {
	t.Helper()
	w := &leaseWatch{}
	cmd := exec.Command(kubectlBin, "--kubeconfig", kubeconfig, "-n", ns, "get", "lease", name, "--watch", "-o", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		dec := json.NewDecoder(stdout)
		for {
			var l coordinationv1.Lease
			if err := dec.Decode(&l); err != nil {
				waitErr := cmd.Wait()
				w.mu.Lock()
				w.err = fmt.Errorf("watch ended: %v (kubectl: %v %s)", err, waitErr, strings.TrimSpace(stderr.String()))
				w.mu.Unlock()
				return
			}
			r := leaseRecord{}
			if l.Spec.HolderIdentity != nil {
				r.holder = *l.Spec.HolderIdentity
			}
			if l.Spec.LeaseDurationSeconds != nil {
				r.leaseDurationSeconds = *l.Spec.LeaseDurationSeconds
			}
			if l.Spec.AcquireTime != nil {
				r.acquireTime = l.Spec.AcquireTime.Time
			}
			if l.Spec.RenewTime != nil {
				r.renewTime = l.Spec.RenewTime.Time
			}
			w.mu.Lock()
			w.records = append(w.records, r)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	e2eutil.Eventually(t, 30*time.Second, "the Lease watch to start", func() (bool, string) {
		records, err := w.snapshot()
		return len(records) > 0, fmt.Sprint(err)
	})
	return w
}

func (w *leaseWatch) snapshot() ([]leaseRecord, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]leaseRecord(nil), w.records...), w.err
}

// handover is how the Lease passed from one holder to the next.
type handover struct {
	// lastHeld is the last version the old holder wrote while holding it.
	lastHeld leaseRecord
	// between are the versions after lastHeld and before acquired.
	between []leaseRecord
	// acquired is the first version the new holder wrote.
	acquired leaseRecord
}

// waitHandover waits until the watch has seen the new holder take the Lease
// from the old one.
func (w *leaseWatch) waitHandover(t *testing.T, from, to string) handover {
	t.Helper()
	var h handover
	e2eutil.Eventually(t, 30*time.Second, fmt.Sprintf("the Lease to pass from %s to %s", from, to), func() (bool, string) {
		records, err := w.snapshot()
		for i, r := range records {
			if r.holder != to {
				continue
			}
			for j := i - 1; j >= 0; j-- {
				if records[j].holder == from {
					h = handover{lastHeld: records[j], between: records[j+1 : i], acquired: r}
					return true, ""
				}
			}
			return false, fmt.Sprintf("%s acquired the Lease, but %s never held it before", to, from)
		}
		last := "none"
		if len(records) > 0 {
			last = records[len(records)-1].String()
		}
		return false, fmt.Sprintf("%d versions seen, the last %s; %v", len(records), last, err)
	})
	return h
}

var becameLeader = regexp.MustCompile(`"Became leader".* identity="([^"]+)"`)

// leaderIdentity is the identity with which a controller logged that it
// became leader, or "".
func leaderIdentity(p *controllerProcess) string {
	if m := becameLeader.FindStringSubmatch(tail(p.logPath, 1000)); m != nil {
		return m[1]
	}
	return ""
}

// TestLeaderElection runs replicas with leader election: only the leader
// acts, a standby takes over once a killed leader's Lease expires, and a
// leader that is shut down releases the Lease so that a standby takes it at
// once, without waiting for it to expire.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	const (
		leaseDuration = 6 * time.Second
		renewDeadline = 4 * time.Second
		retryPeriod   = 1 * time.Second
		// A released Lease is free: a candidate takes it at its next try,
		// at most 2.2 retry periods apart (client-go's jitter), so within a
		// few seconds of the release. A Lease that was not released expires
		// only a lease duration after its last renewal, so no such takeover
		// comes sooner than that. Both are counted from the Lease's own
		// records (the release, the last renewal), not from the SIGTERM: a
		// busy machine took 2.6 s from the SIGTERM to the release, the
		// leader's shutdown, which the release waits for.
		releasedTakeoverBound = leaseDuration - 2*retryPeriod
		// A killed leader's Lease expires a lease duration after its last
		// renewal; a standby notices at its next tries, each at most 2.2
		// retry periods apart.
		killedTakeoverBound = leaseDuration + 6*retryPeriod
	)
	le := controllerOptions{namespace: ns, args: []string{
		"--leader-elect", "--leader-elect-namespace=" + ns,
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
	}}
	// The Lease of the test namespace is outside the install's Role, so
	// this test runs as the admin.
	le.kubeconfigMode = true
	a := startController(t, le)
	b := startController(t, le)
	procs := []*controllerProcess{a, b}

	var leader, standby *controllerProcess
	e2eutil.Eventually(t, 30*time.Second, "a leader", func() (bool, string) {
		holder := leaseHolder(t, ns)
		for i, p := range procs {
			if id := leaderIdentity(p); id != "" {
				leader, standby = p, procs[1-i]
				return holder == id, "holder " + holder + ", logged " + id
			}
		}
		return false, "holder " + holder
	})
	lease := watchLease(t, ns, "database-controller")

	createDB(t, ns, dbYAML("one", "postgresql", "16", 1, ""))
	e2eutil.WaitRunning(t, ns, "one", converge)
	if n := sum(standby.metrics(), "database_controller_reconcile_total"); n != 0 {
		t.Errorf("the standby synced %v times; only the leader may act", n)
	}
	if n := sum(leader.metrics(), "database_controller_reconcile_total"); n == 0 {
		t.Errorf("the leader never synced")
	}
	if code, body := standby.get("/readyz", standby.healthAddr); code != http.StatusOK {
		t.Errorf("standby /readyz = %d %s", code, body)
	}

	// SIGKILL: the standby takes over once the lease expires.
	killedID := leaderIdentity(leader)
	killed := time.Now()
	leader.kill()
	e2eutil.Eventually(t, 30*time.Second, "the standby to take over", func() (bool, string) {
		return leaderIdentity(standby) != "", leaseHolder(t, ns)
	})
	seen := time.Since(killed)
	h := lease.waitHandover(t, killedID, leaderIdentity(standby))
	takeover := h.acquired.acquireTime.Sub(killed)
	waited := h.acquired.acquireTime.Sub(h.lastHeld.renewTime)
	t.Logf("takeover after SIGKILL: %s (seen in the log after %s); %s after the last renewal (lease duration %s)",
		takeover.Round(time.Millisecond), seen.Round(100*time.Millisecond), waited.Round(time.Millisecond), leaseDuration)
	if takeover > killedTakeoverBound {
		t.Errorf("the standby took over %s after the leader was killed, want at most %s (lease duration %s, retry period %s)",
			takeover.Round(time.Millisecond), killedTakeoverBound, leaseDuration, retryPeriod)
	}
	// The standby may take the Lease only once it expired: a lease duration
	// after the last renewal it saw (to within the clocks' granularity).
	if waited < leaseDuration-10*time.Millisecond {
		t.Errorf("the standby took the Lease %s after the killed leader's last renewal, before it expired (lease duration %s); versions in between: %v",
			waited.Round(time.Millisecond), leaseDuration, h.between)
	}
	createDB(t, ns, dbYAML("two", "mysql", "8.4", 1, ""))
	e2eutil.WaitRunning(t, ns, "two", converge)

	// SIGTERM: the lease is released, and a new candidate takes it at once.
	c := startController(t, le)
	termedID := leaderIdentity(standby)
	termed := time.Now()
	_ = standby.cmd.Process.Signal(syscall.SIGTERM)
	e2eutil.Eventually(t, 30*time.Second, "the new candidate to take over", func() (bool, string) {
		return leaderIdentity(c) != "", leaseHolder(t, ns)
	})
	seen = time.Since(termed)
	standby.stop() // waits for the exit
	h = lease.waitHandover(t, termedID, leaderIdentity(c))
	takeover = h.acquired.acquireTime.Sub(termed)
	// What client-go's release writes: no holder, a lease of one second.
	var released *leaseRecord
	for i, r := range h.between {
		if r.holder == "" && r.leaseDurationSeconds == 1 && !r.renewTime.Before(termed) {
			released = &h.between[i]
		}
	}
	if released == nil {
		t.Errorf("the SIGTERMed leader did not release the Lease: after its last renewal (%s) the versions were %v, then %s",
			h.lastHeld, h.between, h.acquired)
	} else {
		t.Logf("Lease released %s after SIGTERM: %s", released.renewTime.Sub(termed).Round(time.Millisecond), released)
	}
	waited = h.acquired.acquireTime.Sub(h.lastHeld.renewTime)
	t.Logf("takeover after SIGTERM: %s (seen in the log after %s); %s after the leader's last renewal",
		takeover.Round(time.Millisecond), seen.Round(100*time.Millisecond), waited.Round(time.Millisecond))
	if released != nil {
		if afterRelease := h.acquired.acquireTime.Sub(released.renewTime); afterRelease >= releasedTakeoverBound {
			t.Errorf("the new candidate took over %s after the release, want less than %s: a released Lease is taken within about a retry period (%s)",
				afterRelease.Round(time.Millisecond), releasedTakeoverBound, retryPeriod)
		}
	}
	// A Lease that expires is taken no sooner than a lease duration after
	// the last renewal; a retry period short of it says it did not wait.
	if waited >= leaseDuration-retryPeriod {
		t.Errorf("the new candidate took over %s after the leader's last renewal, want less than %s: it waited as for a Lease that expires (lease duration %s), not one released",
			waited.Round(time.Millisecond), leaseDuration-retryPeriod, leaseDuration)
	}
	createDB(t, ns, dbYAML("three", "mongodb", "7.0", 1, ""))
	e2eutil.WaitRunning(t, ns, "three", converge)
}

func TestMetricsAndReadiness(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	c := startController(t, controllerOptions{namespace: ns}) // returns once /readyz is ok
	createDB(t, ns, dbYAML("observed", "postgresql", "16", 1, ""))
	e2eutil.WaitRunning(t, ns, "observed", converge)

	// The gauge of Databases by phase is counted from the controller's
	// informer cache when scraped, which shows the status write that made
	// the Database Running a moment after kubectl does: CI scraped in
	// between once.
	var m map[string]float64
	running := `database_controller_databases{engine="postgresql",phase="Running"}`
	e2eutil.Eventually(t, 30*time.Second, running+" > 0", func() (bool, string) {
		m = c.metrics()
		return m[running] > 0, fmt.Sprintf("%s = %v", running, m[running])
	})
	for _, check := range []struct {
		name  string
		value float64
	}{
		{`database_controller_reconcile_total{result="success"}`, m[`database_controller_reconcile_total{result="success"}`]},
		{`workqueue_adds_total{name="databases"}`, m[`workqueue_adds_total{name="databases"}`]},
		{`database_controller_databases{engine="postgresql",phase="Running"}`, m[`database_controller_databases{engine="postgresql",phase="Running"}`]},
		{`rest_client_requests_by_resource_total{resource="statefulsets",verb="POST"}`, m[`rest_client_requests_by_resource_total{resource="statefulsets",verb="POST"}`]},
	} {
		if check.value <= 0 {
			t.Errorf("metric %s = %v, want > 0", check.name, check.value)
		}
	}
	// What its caches hold: the one Database of its namespace, and its
	// one StatefulSet.
	for _, kind := range []string{"Database", "StatefulSet"} {
		if name := `database_controller_cached_objects{kind="` + kind + `"}`; m[name] != 1 {
			t.Errorf("metric %s = %v, want 1", name, m[name])
		}
	}
	for _, name := range []string{"workqueue_depth", "workqueue_work_duration_seconds_count", "database_controller_reconcile_duration_seconds_count"} {
		if sum(m, name) == 0 && !hasMetric(m, name) {
			t.Errorf("metric %s missing", name)
		}
	}
	if code, body := c.get("/healthz", c.healthAddr); code != http.StatusOK {
		t.Errorf("/healthz = %d %s", code, body)
	}
	t.Logf("%s", fmt.Sprintf("reconciles: %v", sum(m, "database_controller_reconcile_total")))
}

func hasMetric(m map[string]float64, name string) bool {
	for k := range m {
		if strings.HasPrefix(k, name) {
			return true
		}
	}
	return false
}

// A controller that cannot bind its health port (here, a port another
// process holds) says why and exits 1 at once, as a pod's restart would
// need, instead of running on with no /readyz.
func TestPortInUseExits(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cmd := exec.Command(controllerBin, "--kubeconfig="+kubeconfig, "--metrics-bind-address=0",
		"--health-probe-bind-address="+held.Addr().String(), "--namespace="+e2eutil.NewNamespace(t))
	done := make(chan []byte, 1)
	go func() {
		out, _ := cmd.CombinedOutput()
		done <- out
	}()
	select {
	case out := <-done:
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "health server: listen tcp "+held.Addr().String()+": bind: address already in use") {
			t.Errorf("exit %d, want 1 and the health server's bind error; output:\n%s", code, out)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the controller still ran 60 s after it could not bind its health port:\n%s", <-done)
	}
}
