//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// kubectl delete of a protected Database is refused by the admission
// policy, with a message that says how to delete it; turning the field off
// is the way.
func TestDeletionProtection(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("guarded", "postgresql", "16", 1, "  deletionProtection: true\n"))
	e2eutil.WaitRunning(t, ns, "guarded", converge)
	want := "Database " + ns + "/guarded has spec.deletionProtection: true; set it to false to delete it"
	// An admission policy takes effect a moment after it is installed: wait
	// until a server-side dry run is refused, so that nothing is deleted
	// by a policy not yet in force.
	e2eutil.Eventually(t, converge, "the policy to refuse a dry-run delete", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "delete", "db", "guarded", "--dry-run=server")
		return err != nil && strings.Contains(string(out), want), string(out)
	})

	out, err := e2eutil.KubectlRun("", "-n", ns, "delete", "db", "guarded", "--wait=false")
	if err == nil {
		t.Fatalf("kubectl delete of a protected Database succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("kubectl delete said %q, want it to contain %q", out, want)
	}
	if db := e2eutil.GetDB(t, ns, "guarded"); db.DeletionTimestamp != nil {
		t.Fatal("the protected Database is being deleted")
	}

	e2eutil.Kubectl(t, "-n", ns, "patch", "db", "guarded", "--type=merge", "-p", `{"spec":{"deletionProtection":false}}`)
	e2eutil.Kubectl(t, "-n", ns, "delete", "db", "guarded", "--wait=false")
	e2eutil.Eventually(t, converge, "the Database to go", func() (bool, string) {
		_, err := e2eutil.KubectlRun("", "-n", ns, "get", "db", "guarded")
		return err != nil, "still there"
	})
}

// A protected Database does not hold its namespace's deletion: the
// namespace takes its volumes anyway.
func TestDeletionProtectionDoesNotBlockNamespaceDeletion(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("guarded", "mysql", "8.4", 1, "  deletionProtection: true\n"))
	e2eutil.WaitRunning(t, ns, "guarded", converge)
	e2eutil.Eventually(t, converge, "the policy to refuse a dry-run delete", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "delete", "db", "guarded", "--dry-run=server")
		return err != nil && strings.Contains(string(out), "spec.deletionProtection: true"), string(out)
	})
	e2eutil.Kubectl(t, "delete", "namespace", ns, "--wait=false")
	e2eutil.Eventually(t, 3*time.Minute, "namespace "+ns+" to be gone", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "get", "namespace", ns, "-o", "jsonpath={.status.conditions}")
		return err != nil, string(out)
	})
}
