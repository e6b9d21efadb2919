//go:build e2e

package realnode

import (
	"maps"
	"strings"
	"testing"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// spec.parameters on MySQL 9.7 and on MariaDB, as a user tunes them:
//  1. MySQL, at creation: one a running server takes (max_connections)
//     and one read at start (back_log, on the command line), and SELECT
//     shows both;
//  2. MySQL, changed: max_connections and wait_timeout are set with SET
//     PERSIST, with no pod restarted (same UID, start time, restart
//     count), and persisted in the data directory for the next start;
//  3. MySQL, a value the server refuses: the condition names it in the
//     server's words, the Database serves on, and the server keeps 88;
//  4. MariaDB, which cannot persist a setting made live: the parameter is
//     read at start, the pod restarts once to take it, and a name the
//     server does not know is refused in its words;
//  5. MariaDB, a value it cannot start with (sql_mode=BOGUS), corrected
//     while its one server crash-loops: the correction reaches the pod.
func TestMySQLParameters(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, mysqlYAML("tuned", "9.7", mysqlImage, 1)+"  parameters:\n    max_connections: \"77\"\n    back_log: \"123\"\n", "-n", ns, "create", "-f", "-")
	e2eutil.KubectlIn(t, mysqlYAML("tuned-maria", "8.4", mariadbImage, 1), "-n", ns, "create", "-f", "-")
	show := func(db, image, query string) string {
		t.Helper()
		return strings.TrimSpace(runClient(t, ns, db, image, waitMySQL+mysqlSQL+`"`+query+`"`))
	}

	// 1. At creation.
	e2eutil.WaitRunning(t, ns, "tuned", converge)
	waitParameters(t, ns, "tuned", "Applied")
	if got := show("tuned", mysqlImage, "SELECT CONCAT(@@max_connections, ' ', @@back_log)"); got != "77 123" {
		t.Errorf("max_connections and back_log = %q, want \"77 123\"", got)
	}
	args := e2eutil.Kubectl(t, "-n", ns, "get", "statefulset", "tuned", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	if !strings.Contains(args, "--back_log=123") || strings.Contains(args, "max_connections") {
		t.Errorf("server arguments %s: want back_log, read at start, and not max_connections, set live", args)
	}

	// 2. Changed live.
	before := podStarts(t, ns, "tuned", "mysql")
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=merge", "-p", `{"spec":{"parameters":{"max_connections":"88","wait_timeout":"600"}}}`)
	t.Logf("live: %s", waitParameters(t, ns, "tuned", "Applied"))
	persisted := "SELECT CONCAT(@@max_connections, ' ', @@wait_timeout, ' persisted ', GROUP_CONCAT(CONCAT(VARIABLE_NAME, '=', VARIABLE_VALUE) ORDER BY VARIABLE_NAME)) FROM performance_schema.persisted_variables WHERE VARIABLE_NAME IN ('max_connections', 'wait_timeout', 'back_log')"
	if got := show("tuned", mysqlImage, persisted); got != "88 600 persisted max_connections=88,wait_timeout=600" {
		t.Errorf("after the change: %q, want 88 600, both persisted, back_log not", got)
	}
	if after := podStarts(t, ns, "tuned", "mysql"); !maps.Equal(after, before) || len(after) != 1 {
		t.Errorf("a parameter set live restarted the server: %v, then %v", before, after)
	}

	// 3. Refused.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=merge", "-p", `{"spec":{"parameters":{"max_connections":"lots"}}}`)
	msg := waitParameters(t, ns, "tuned", "ParameterRejected")
	t.Logf("refused: %s", msg)
	if !strings.Contains(msg, `refused parameter max_connections = "lots": Incorrect argument type to variable 'max_connections'`) {
		t.Errorf("the condition does not name the parameter in the server's words: %s", msg)
	}
	e2eutil.WaitRunning(t, ns, "tuned", converge)
	if got := show("tuned", mysqlImage, "SELECT @@max_connections"); got != "88" {
		t.Errorf("max_connections after a refused value = %q, want 88, the last good one", got)
	}

	// 4. MariaDB.
	e2eutil.WaitRunning(t, ns, "tuned-maria", converge)
	before = podStarts(t, ns, "tuned-maria", "mysql")
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned-maria", "--type=merge", "-p", `{"spec":{"parameters":{"max_connections":"66"}}}`)
	waitParameters(t, ns, "tuned-maria", "Applied")
	e2eutil.WaitRunning(t, ns, "tuned-maria", converge)
	if got := show("tuned-maria", mariadbImage, "SELECT @@max_connections"); got != "66" {
		t.Errorf("MariaDB's max_connections = %q, want 66", got)
	}
	if after := podStarts(t, ns, "tuned-maria", "mysql"); maps.Equal(after, before) {
		t.Errorf("MariaDB took a parameter read at start without a restart: %v", after)
	}
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned-maria", "--type=merge", "-p", `{"spec":{"parameters":{"max_connexions":"66"}}}`)
	msg = waitParameters(t, ns, "tuned-maria", "ParameterRejected")
	if !strings.Contains(msg, "refused parameter max_connexions = \"66\": Unknown system variable 'max_connexions'") {
		t.Errorf("MariaDB's refusal of an unknown name: %s", msg)
	}
	t.Logf("MariaDB: max_connections taken at a restart; an unknown name refused: %s", msg)

	// 5. MariaDB, a value it accepts by name but cannot start with: the
	// one server crash-loops; corrected, the value reaches the pod
	// unchecked (no server serves to check it), the failing pod is
	// replaced, and the server runs with the correction.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned-maria", "--type=merge", "-p", `{"spec":{"parameters":{"max_connexions":null,"sql_mode":"BOGUS"}}}`)
	e2eutil.Eventually(t, 3*converge, "the server failing to start with sql_mode=BOGUS", func() (bool, string) {
		msg := readyMessage(t, ns, "tuned-maria")
		return strings.Contains(msg, "keeps crashing"), msg
	})
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned-maria", "--type=merge", "-p", `{"spec":{"parameters":{"sql_mode":"STRICT_TRANS_TABLES"}}}`)
	e2eutil.WaitRunning(t, ns, "tuned-maria", 3*converge)
	waitParameters(t, ns, "tuned-maria", "Applied")
	if got := show("tuned-maria", mariadbImage, "SELECT CONCAT(@@max_connections, ' ', @@sql_mode)"); got != "66 STRICT_TRANS_TABLES" {
		t.Errorf("MariaDB after the correction: %q, want \"66 STRICT_TRANS_TABLES\"", got)
	}
}
