//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// TestInstall checks what `kubectl apply -k artifacts/deploy` (run by
// TestMain) installed: the Deployment's pods run, on kwok's fake nodes.
func TestInstall(t *testing.T) {
	t.Parallel()
	eventually(t, 2*converge, "the controller Deployment to be available", func() (bool, string) {
		out, _ := kubectlRun("", "-n", installNamespace, "get", "deployment", "database-controller",
			"-o", "jsonpath={.status.readyReplicas}/{.spec.replicas}")
		return string(out) == "2/2", string(out)
	})
	out := kubectl(t, "-n", installNamespace, "get", "pods", "-o", "jsonpath={range .items[*]}{.status.phase} {end}")
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
		{[]string{"update", "leases.coordination.k8s.io/database-controller", "-n", installNamespace}, "yes"},

		{[]string{"delete", "namespaces"}, "no"},
		{[]string{"create", "pods", "-n", "default"}, "no"},
		{[]string{"delete", "pods", "-n", "default"}, "no"},
		{[]string{"create", "pods/exec", "-n", "default"}, "no"},
		{[]string{"delete", "statefulsets.apps", "-n", "default"}, "no"},
		{[]string{"delete", "persistentvolumeclaims", "-n", "default"}, "no"},
		{[]string{"update", "secrets", "-n", "default"}, "no"},
		{[]string{"delete", "secrets", "-n", "default"}, "no"},
		{[]string{"update", "databases.dbcontroller.io", "-n", "default"}, "no"},
		{[]string{"delete", "databases.dbcontroller.io", "-n", "default"}, "no"},
		{[]string{"bind", "clusterroles.rbac.authorization.k8s.io"}, "no"},
		{[]string{"escalate", "clusterroles.rbac.authorization.k8s.io"}, "no"},
		{[]string{"create", "rolebindings.rbac.authorization.k8s.io", "-n", "default"}, "no"},
		{[]string{"get", "configmaps", "-n", "default"}, "no"},
		{[]string{"create", "deployments.apps", "-n", "default"}, "no"},
		{[]string{"update", "leases.coordination.k8s.io", "-n", "default"}, "no"},
		{[]string{"get", "nodes"}, "no"},
	}
	for _, tt := range tests {
		out, _ := kubectlRun("", append([]string{"auth", "can-i", as}, tt.args...)...)
		// The answer is the last line; kubectl may warn before it.
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if got := lines[len(lines)-1]; got != tt.want {
			t.Errorf("can-i %s: %q, want %q", strings.Join(tt.args, " "), got, tt.want)
		}
	}
}

func leaseHolder(t *testing.T, ns string) string {
	t.Helper()
	var lease coordinationv1.Lease
	out, err := kubectlRun("", "-n", ns, "get", "lease", "database-controller", "-o", "jsonpath={.spec.holderIdentity}")
	if err != nil {
		return ""
	}
	_ = lease
	return strings.TrimSpace(string(out))
}

func TestLeaderElection(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	le := controllerOptions{namespace: ns, args: []string{
		"--leader-elect", "--leader-elect-namespace=" + ns,
		"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
	}}
	// The Lease of the test namespace is outside the install's Role, so
	// this test runs as the admin.
	le.kubeconfigMode = true
	a := startController(t, le)
	b := startController(t, le)
	procs := []*controllerProcess{a, b}

	var leader, standby *controllerProcess
	eventually(t, 30*time.Second, "a leader", func() (bool, string) {
		holder := leaseHolder(t, ns)
		for i, p := range procs {
			if strings.Contains(tail(p.logPath, 1000), "Became leader") {
				leader, standby = p, procs[1-i]
				return holder != "", holder
			}
		}
		return false, "holder " + holder
	})

	createDB(t, ns, dbYAML("one", "postgresql", "16", 1, ""))
	waitRunning(t, ns, "one", converge)
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
	killed := time.Now()
	leader.kill()
	eventually(t, 30*time.Second, "the standby to take over", func() (bool, string) {
		return strings.Contains(tail(standby.logPath, 1000), "Became leader"), leaseHolder(t, ns)
	})
	t.Logf("takeover after SIGKILL: %s (lease duration 6s)", time.Since(killed).Round(100*time.Millisecond))
	createDB(t, ns, dbYAML("two", "mysql", "8.4", 1, ""))
	waitRunning(t, ns, "two", converge)

	// SIGTERM: the lease is released, and a new candidate takes it at once.
	c := startController(t, le)
	termed := time.Now()
	_ = standby.cmd.Process.Signal(syscall.SIGTERM)
	eventually(t, 10*time.Second, "the new candidate to take over within seconds of SIGTERM", func() (bool, string) {
		return strings.Contains(tail(c.logPath, 1000), "Became leader"), leaseHolder(t, ns)
	})
	standby.stop() // waits for the exit
	if !strings.Contains(tail(standby.logPath, 100), "Released the leader election lease") {
		t.Errorf("no lease release in the log of the SIGTERMed leader:\n%s", tail(standby.logPath, 20))
	}
	t.Logf("takeover after SIGTERM: %s", time.Since(termed).Round(100*time.Millisecond))
	createDB(t, ns, dbYAML("three", "mongodb", "7.0", 1, ""))
	waitRunning(t, ns, "three", converge)
}

func TestMetricsAndReadiness(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := startController(t, controllerOptions{namespace: ns}) // returns once /readyz is ok
	createDB(t, ns, dbYAML("observed", "postgresql", "16", 1, ""))
	waitRunning(t, ns, "observed", converge)

	m := c.metrics()
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
