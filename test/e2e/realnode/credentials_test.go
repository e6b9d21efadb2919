//go:build e2e

package realnode

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// newPassword is what the tests below change a password to, by SQL alone.
const newPassword = "changed-by-sql-7Qx"

// passwordChange is how one engine's password is changed in the database:
// change runs in the server's container (kubectl exec), and newClient,
// in a client pod with the Secret's keys, logs in with newPassword through
// the Service and prints "served".
type passwordChange struct {
	image, change, newClient string
}

// checkPasswordChangedInTheDatabase changes the password of the Secret's
// user by SQL alone, in the Database name that is Running: it leaves
// Running for Degraded with the cause CredentialsRejected and one Warning,
// while its pods stay ready and a client with the new password is served
// through the Service; and it is Running again once the Secret holds the
// new password. The tests that made a Database of each engine call it at
// their end, to share their servers.
func checkPasswordChangedInTheDatabase(t *testing.T, ns, name string, pc passwordChange) {
	t.Helper()
	e2eutil.WaitRunning(t, ns, name, converge)
	e2eutil.Kubectl(t, "-n", ns, "exec", name+"-0", "--", "sh", "-c", pc.change)
	changed := time.Now()
	e2eutil.Eventually(t, converge, "the Database to report the password the server refuses", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, name)
		_, reason, msg := e2eutil.Condition(db, "Ready")
		return db.Status.Phase == "Degraded" && reason == "CredentialsRejected", string(db.Status.Phase) + " " + reason + ": " + msg
	})
	t.Logf("%s: Degraded/CredentialsRejected %s after the password was changed by SQL", name, time.Since(changed).Round(100*time.Millisecond))
	_, _, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, name), "Ready")
	t.Logf("Ready: %s", msg)
	if !strings.Contains(msg, "Secret "+name+"-credentials") || !strings.Contains(msg, "pod "+name+"-0") {
		t.Errorf("the cause does not name the Secret and the pod: %s", msg)
	}

	// The server still serves the clients that have its password: its pod
	// is ready, and the Service routes to it.
	var pod corev1.Pod
	e2eutil.GetJSON(t, &pod, "-n", ns, "get", "pod", name+"-0")
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			t.Errorf("pod %s-0 is not ready while its server serves: %s", name, c.Message)
		}
	}
	if got := runClient(t, ns, name, pc.image, pc.newClient); !strings.Contains(got, "served") {
		t.Errorf("a client with the password the server holds was not served:\n%s", got)
	}

	// The user writes the password to the Secret.
	oldPassword := secretValue(t, ns, name, "password")
	uri := strings.Replace(secretValue(t, ns, name, "uri"), ":"+oldPassword+"@", ":"+newPassword+"@", 1)
	patch, _ := json.Marshal(map[string]any{"stringData": map[string]string{"password": newPassword, "uri": uri}})
	e2eutil.Kubectl(t, "-n", ns, "patch", "secret", name+"-credentials", "--type=merge", "-p", string(patch))
	updated := time.Now()
	e2eutil.WaitRunning(t, ns, name, converge)
	t.Logf("%s: Running %s after the Secret was updated", name, time.Since(updated).Round(100*time.Millisecond))
	if n, count := warnings(t, ns, name, "CredentialsRejected"); n != 1 || count != 1 {
		t.Errorf("the refused password gave %d CredentialsRejected Warnings recorded %d times, want one, once: %v", n, count, dbEvents(t, ns, name))
	}
	if got := runClient(t, ns, name, pc.image, pc.newClient); !strings.Contains(got, "served") {
		t.Errorf("a client with the Secret's new password was not served:\n%s", got)
	}
}

// PostgreSQL: the role's password, changed through the pod's socket, which
// the image trusts.
var postgresPasswordChange = passwordChange{image: postgresImage,
	change: `psql -X -h /var/run/postgresql -U "$POSTGRES_USER" -d "$POSTGRES_DB" -v ON_ERROR_STOP=1 -c "ALTER ROLE \"$POSTGRES_USER\" PASSWORD '` + newPassword + `'"`,
	newClient: `for i in $(seq 60); do pg_isready -q -h "$HOST" -p "$PORT" && break; sleep 1; done
psql "postgresql://$USERNAME:` + newPassword + `@$HOST:$PORT/$DATABASE" -tAc "SELECT 'served'"`}

// MariaDB: the password of root@'%', the account of clients of other pods,
// changed through the socket as root@localhost, whose password stays.
var mariadbPasswordChange = passwordChange{image: mariadbImage,
	change:    `mariadb -uroot -p"$MYSQL_ROOT_PASSWORD" -e "ALTER USER 'root'@'%' IDENTIFIED BY '` + newPassword + `'"`,
	newClient: waitMariaDB + `mariadb -h "$HOST" -P "$PORT" -u "$USERNAME" -p'` + newPassword + `' "$DATABASE" -N -e "SELECT 'served'"`}

// MySQL: the password of root@'%', changed through the socket as
// root@localhost, as for MariaDB.
var mysqlPasswordChange = passwordChange{image: mysqlImage,
	change:    `mysql -uroot -p"$MYSQL_ROOT_PASSWORD" -e "ALTER USER 'root'@'%' IDENTIFIED BY '` + newPassword + `'"`,
	newClient: waitMySQL + `mysql -h "$HOST" -P "$PORT" -u "$USERNAME" -p'` + newPassword + `' "$DATABASE" -N -e "SELECT 'served'"`}

// checkBrokenHostRuleIsNamed makes the pg_hba.conf of the PostgreSQL
// Database name reject every host, and reloads it: the server runs, and
// its readiness probe, which logs in through the pod's own address, fails.
// The Database is Degraded with the cause ReadinessProbeFailing in the
// probe's words, one Warning; once the file is put back, Running again.
func checkBrokenHostRuleIsNamed(t *testing.T, ns, name string) {
	t.Helper()
	e2eutil.WaitRunning(t, ns, name, converge)
	const hba = `"$PGDATA/pg_hba.conf"`
	reload := ` && psql -X -h /var/run/postgresql -U "$POSTGRES_USER" -d "$POSTGRES_DB" -v ON_ERROR_STOP=1 -tAc 'SELECT pg_reload_conf()'`
	e2eutil.Kubectl(t, "-n", ns, "exec", name+"-0", "--", "sh", "-c",
		`cp `+hba+` /tmp/pg_hba.conf.kept && sed -i 's/^host all all all scram-sha-256$/host all all all reject/' `+hba+` && grep -q 'all all all reject' `+hba+reload)
	broken := time.Now()
	e2eutil.Eventually(t, converge, "the Database to name the failing readiness probe", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, name)
		_, reason, msg := e2eutil.Condition(db, "Ready")
		return db.Status.Phase == "Degraded" && reason == "ReadinessProbeFailing", string(db.Status.Phase) + " " + reason + ": " + msg
	})
	_, _, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, name), "Ready")
	t.Logf("%s: Degraded/ReadinessProbeFailing %s after pg_hba.conf rejected every host: %s", name, time.Since(broken).Round(100*time.Millisecond), msg)
	if !strings.Contains(msg, "pg_hba.conf rejects connection") {
		t.Errorf("the cause does not say what the probe said: %s", msg)
	}
	e2eutil.Kubectl(t, "-n", ns, "exec", name+"-0", "--", "sh", "-c", `cp /tmp/pg_hba.conf.kept `+hba+reload)
	mended := time.Now()
	e2eutil.WaitRunning(t, ns, name, converge)
	t.Logf("%s: Running %s after pg_hba.conf was put back", name, time.Since(mended).Round(100*time.Millisecond))
	if n, count := warnings(t, ns, name, "ReadinessProbeFailing"); n != 1 || count != 1 {
		t.Errorf("the failing probe gave %d ReadinessProbeFailing Warnings recorded %d times, want one, once: %v", n, count, dbEvents(t, ns, name))
	}
}
