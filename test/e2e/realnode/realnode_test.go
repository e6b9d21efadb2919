//go:build e2e

package realnode

import (
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// psql runs SQL with the Secret's uri, exactly as the controller wrote it.
// It first waits up to a minute for the server to be reachable through the
// Service: a Database is Running once its pod is ready, and kube-proxy
// routes the Service's ClusterIP a moment later (until then the node has
// no route for it: "Network is unreachable"). Clients on a real cluster
// retry the same way.
const psql = `for i in $(seq 60); do pg_isready -q -d "$URI" && break; sleep 1; done; psql "$URI" -v ON_ERROR_STOP=1 -tA `

// waitPostgreSQL, waitMariaDB and waitMySQL are the same wait for a client
// pod of the TLS tests (DATABASE_URL, with the pod's PGSSLMODE), a MariaDB
// or a MySQL server.
const (
	waitPostgreSQL = `for i in $(seq 60); do pg_isready -q -d "$DATABASE_URL" && break; sleep 1; done
`
	waitMariaDB = `for i in $(seq 60); do mariadb-admin ping -h "$HOST" -P "$PORT" --connect-timeout=2 >/dev/null 2>&1 && break; sleep 1; done
`
	waitMySQL = `for i in $(seq 60); do mysqladmin ping -h "$HOST" -P "$PORT" --connect-timeout=2 >/dev/null 2>&1 && break; sleep 1; done
`
)

// A PostgreSQL Database is Running only once its server accepts
// connections, and a client pod reaches it with the Secret's uri unchanged:
// the Service's DNS name, resolved by cluster DNS to its ClusterIP, routed
// by kube-proxy. A password changed by SQL alone is then reported
// (checkPasswordChangedInTheDatabase), and so is a pg_hba.conf that
// rejects every host (checkBrokenHostRuleIsNamed). Its TLS is Disabled:
// that check rewrites the data directory's pg_hba.conf, which a server
// with TLS does not read (the controller's is a file of the read-only
// TLS Secret); and so one Database of the suite runs without TLS, as
// those made before it did.
func TestPostgreSQLServesThroughTheSecretURI(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("orders", "postgresql", "15", postgresImage, 1)+"  tls:\n    mode: Disabled\n", "-n", ns, "create", "-f", "-")

	// The moment the Database is first seen Running, its server must take an
	// authenticated TCP connection, and the entrypoint must be done with
	// its temporary, socket-only server.
	var polls int
	e2eutil.Eventually(t, converge, "Database to be Running", func() (bool, string) {
		polls++
		return e2eutil.IsRunning(e2eutil.GetDB(t, ns, "orders"))
	})
	out, err := e2eutil.KubectlRun("", "-n", ns, "exec", "orders-0", "--", "sh", "-c",
		`PGPASSWORD="$POSTGRES_PASSWORD" psql -h 127.0.0.1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -tAc 'select 1'`)
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("Database Running after %d polls, but its server did not take a TCP connection: %v\n%s", polls, err, out)
	}
	if logs := e2eutil.Kubectl(t, "-n", ns, "logs", "orders-0"); !strings.Contains(logs, "entrypoint: initialised") {
		t.Errorf("Database Running before the entrypoint finished initialising:\n%s", logs)
	}
	// TLS Disabled: no certificate, and a server that refuses TLS.
	if st := e2eutil.GetDB(t, ns, "orders").Status.TLS; st != nil {
		t.Errorf("status.tls %+v with TLS Disabled, want none", st)
	}
	if out, err := e2eutil.KubectlRun("", "-n", ns, "get", "secret", "orders-tls", "orders-ca", "--ignore-not-found", "-o", "name"); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("TLS Secrets with TLS Disabled: %v %s", err, out)
	}

	uri := secretValue(t, ns, "orders", "uri")
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatalf("uri %q: %v", uri, err)
	}
	if want := "orders." + ns + ".svc"; u.Hostname() != want {
		t.Fatalf("uri host = %q, want %q", u.Hostname(), want)
	}
	clusterIP := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "service", "orders", "-o", "jsonpath={.spec.clusterIP}"))

	got := runClient(t, ns, "orders", postgresImage, `set -e
getent hosts "$HOST" | awk '{print "resolved", $1}'
if getent hosts example.com; then echo "outside name resolved"; fi
`+psql+`-c "CREATE TABLE items (name text)" -c "INSERT INTO items VALUES ('apple'), ('pear')" -c "SELECT string_agg(name, ',' ORDER BY name) FROM items"
`+psql+`-c "SELECT 'user=' || current_user || ' db=' || current_database() || ' ssl=' || coalesce((SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()), '?')"`)
	if !strings.Contains(got, "resolved "+clusterIP+"\n") {
		t.Errorf("the uri's host did not resolve to the Service's ClusterIP %s in the pod:\n%s", clusterIP, got)
	}
	if strings.Contains(got, "outside name resolved") {
		t.Errorf("cluster DNS answered a name outside the cluster domain:\n%s", got)
	}
	if !strings.Contains(got, "apple,pear\n") {
		t.Errorf("rows written through the uri not read back:\n%s", got)
	}
	if want := fmt.Sprintf("user=%s db=%s", u.User.Username(), strings.TrimPrefix(u.Path, "/")); !strings.Contains(got, want) {
		t.Errorf("connected as someone else than the uri says (%s):\n%s", want, got)
	}
	// A wrong password is refused: the server really authenticates.
	if out, err := tryClient(t, ns, "orders", postgresImage,
		`for i in $(seq 60); do pg_isready -q -d "$URI" && break; sleep 1; done
psql "postgresql://$USERNAME:wrong@$HOST:$PORT/$DATABASE" -c "select 1"`); err == nil {
		t.Errorf("a wrong password was accepted:\n%s", out)
	} else if !strings.Contains(out, "password authentication failed") {
		t.Errorf("a wrong password failed for another reason:\n%s", out)
	}
	checkPasswordChangedInTheDatabase(t, ns, "orders", postgresPasswordChange)
	checkBrokenHostRuleIsNamed(t, ns, "orders")
}

// Rows survive the pod's deletion and scaling the Database to zero and back.
func TestRowsSurvivePodDeletionAndScaleToZero(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("keep", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "keep", converge)
	runClient(t, ns, "keep", postgresImage, psql+`-c "CREATE TABLE kept (n int)" -c "INSERT INTO kept SELECT generate_series(1, 1000)"`)
	count := func() string {
		return strings.TrimSpace(runClient(t, ns, "keep", postgresImage, psql+`-c "SELECT count(*) || ':' || sum(n) FROM kept"`))
	}
	if got := count(); got != "1000:500500" {
		t.Fatalf("rows before: %q", got)
	}

	uid := podUID(t, ns, "keep")
	stop := make(chan struct{})
	states := watchStates(t, ns, "keep", stop)
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", "keep-0")
	// The Database may read Running for a moment after the pod went, until
	// the controller has seen it go: what says the new server serves is the
	// new pod's readiness, and then the Database's.
	waitPodMadeAgain(t, ns, "keep-0", uid)
	e2eutil.WaitRunning(t, ns, "keep", converge)
	close(stop)
	seen := <-states
	t.Logf("states seen while the pod was replaced: %s", strings.Join(seen, " → "))
	for _, s := range seen {
		// Nothing in the spec changed: a lost pod is no rollout.
		if strings.HasPrefix(s, "Updating/") {
			t.Errorf("a deleted pod was reported as %s (states seen: %s)", s, strings.Join(seen, " → "))
		}
	}
	if got := count(); got != "1000:500500" {
		t.Errorf("rows after deleting the pod: %q", got)
	}

	e2eutil.Kubectl(t, "-n", ns, "patch", "db", "keep", "--type=merge", "-p", `{"spec":{"replicas":0}}`)
	e2eutil.Eventually(t, converge, "Stopped with no pod", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "keep")
		return db.Status.Phase == "Stopped" && podUID(t, ns, "keep") == "", "phase " + string(db.Status.Phase)
	})
	e2eutil.Kubectl(t, "-n", ns, "patch", "db", "keep", "--type=merge", "-p", `{"spec":{"replicas":1}}`)
	e2eutil.WaitRunning(t, ns, "keep", converge)
	if got := count(); got != "1000:500500" {
		t.Errorf("rows after scaling 1→0→1: %q", got)
	}
}

// A Database whose server cannot start never reports Running: its volume
// holds the data directory of another major version (14), as after a
// careless version change, and postgres 15 refuses it and exits.
func TestServerThatCannotStartIsNeverRunning(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	// The claim the StatefulSet will adopt (data-<name>-0), filled first by
	// a pod of our own, as uid 999 like the server.
	e2eutil.KubectlIn(t, `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-old-0
spec:
  storageClassName: real-node-local
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata:
  name: writer
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext: {runAsUser: 999, runAsGroup: 999, fsGroup: 999}
  containers:
  - name: writer
    image: `+postgresImage+`
    command: ["sh", "-c", "mkdir -m 700 /data/pgdata && echo 14 > /data/pgdata/PG_VERSION && touch /data/pgdata/postgresql.conf"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data-old-0}
`, "-n", ns, "create", "-f", "-")
	e2eutil.Eventually(t, converge, "the writer pod to succeed", func() (bool, string) {
		phase := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pod", "writer", "-o", "jsonpath={.status.phase}"))
		if phase == "Failed" {
			t.Fatalf("writer pod failed: %s", e2eutil.Kubectl(t, "-n", ns, "logs", "writer"))
		}
		return phase == "Succeeded", phase
	})
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", "writer")

	e2eutil.KubectlIn(t, dbYAML("old", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	// Until the server has failed to start at least twice, the Database must
	// never look Running or Ready.
	var seen []string
	e2eutil.Eventually(t, converge, "postgres to refuse the data directory twice", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "old")
		ready, reason, msg := e2eutil.Condition(db, "Ready")
		if db.Status.Phase == "Running" || ready == "True" {
			t.Fatalf("a Database whose server cannot start reports phase=%s Ready=%s (%s: %s)", db.Status.Phase, ready, reason, msg)
		}
		state := fmt.Sprintf("phase=%s Ready=%s/%s", db.Status.Phase, ready, reason)
		if len(seen) == 0 || seen[len(seen)-1] != state {
			seen = append(seen, state)
		}
		var pod corev1.Pod
		if err := e2eutil.TryGetJSON(&pod, "-n", ns, "get", "pod", "old-0"); err != nil {
			return false, "no pod yet: " + err.Error()
		}
		if len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].RestartCount < 2 {
			return false, "fewer than 2 restarts; " + state
		}
		logs, _ := e2eutil.KubectlRun("", "-n", ns, "logs", "old-0", "--previous")
		return strings.Contains(string(logs), "database files are incompatible with server"), "previous log: " + string(logs)
	})
	t.Logf("states seen: %s", strings.Join(seen, " → "))
	// The Ready condition names the cause: a crash loop, with the last exit.
	e2eutil.Eventually(t, converge, "the Ready condition to name the crash loop", func() (bool, string) {
		_, reason, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, "old"), "Ready")
		return reason == "CrashLooping" && strings.Contains(msg, "container postgresql of pod old-0 keeps crashing; it last ended with Error (exit code 1)"),
			reason + ": " + msg
	})
	// One Warning for the cause, not one per restart (the events store a
	// repeat as a count, so count them too).
	var list corev1.EventList
	e2eutil.GetJSON(t, &list, "-n", ns, "get", "events", "--field-selector", "involvedObject.kind=Database,involvedObject.name=old,reason=CrashLooping")
	if n := len(list.Items); n != 1 || list.Items[0].Count > 1 {
		t.Errorf("Warning CrashLooping events: %d objects %+v, want one, recorded once", n, dbEvents(t, ns, "old"))
	}
	for _, e := range dbEvents(t, ns, "old") {
		if strings.Contains(e, " Running ") || strings.Contains(e, "is running") {
			t.Errorf("an event claims success: %s", e)
		}
	}
	db := e2eutil.GetDB(t, ns, "old")
	if ready, _, _ := e2eutil.Condition(db, "Ready"); db.Status.Phase == "Running" || ready == "True" || db.Status.ReadyReplicas != 0 {
		t.Errorf("status claims success: phase=%s Ready=%s readyReplicas=%d", db.Status.Phase, ready, db.Status.ReadyReplicas)
	}
}

func dbEvents(t testing.TB, ns, name string) []string {
	t.Helper()
	var out []string
	for _, e := range databaseEvents(t, ns, name, "") {
		out = append(out, e.Type+" "+e.Reason+" "+e.Message)
	}
	return out
}

// databaseEvents are the events on the Database name that the field
// selector terms more (",type=Warning", or "") also select.
func databaseEvents(t testing.TB, ns, name, more string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	e2eutil.GetJSON(t, &list, "-n", ns, "get", "events", "--field-selector", "involvedObject.kind=Database,involvedObject.name="+name+more)
	return list.Items
}

// A mysql Database served by the MariaDB image takes the Secret's
// credentials, and only those, and runs SQL; a password changed by SQL
// alone is reported (checkPasswordChangedInTheDatabase).
func TestMySQLOnMariaDB(t *testing.T) {
	parallel(t)
	checkMySQLProtocolServes(t, "inventory", "8.4", mariadbImage, "mariadb", waitMariaDB, "-MariaDB", mariadbPasswordChange)
}

// The same on Oracle's MySQL 9.7 (Debian sid's server, in the official
// image's contract).
func TestMySQLServes(t *testing.T) {
	parallel(t)
	checkMySQLProtocolServes(t, "ledger", "9.7", mysqlImage, "mysql", waitMySQL, "9.7.", mysqlPasswordChange)
}

// checkMySQLProtocolServes makes a mysql Database name of specVersion on
// image, and with the image's client: SQL runs through the Secret's credentials, over the
// network as root@'%', on a server whose VERSION() contains version; a
// wrong password is refused; and a password changed by SQL alone is
// reported.
func checkMySQLProtocolServes(t *testing.T, name, specVersion, image, client, wait, version string, pc passwordChange) {
	t.Helper()
	ns := e2eutil.NewNamespace(t)
	// 1Gi for MariaDB too, as for MySQL.
	yaml := mysqlYAML(name, specVersion, image, 1)
	e2eutil.KubectlIn(t, yaml, "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, name, converge)
	got := runClient(t, ns, name, image, wait+`set -e
`+client+` -h "$HOST" -P "$PORT" -u "$USERNAME" -p"$PASSWORD" "$DATABASE" -N -e "CREATE TABLE stock (sku VARCHAR(10), n INT); INSERT INTO stock VALUES ('a', 3), ('b', 4); SELECT CONCAT('total=', SUM(n)) FROM stock; SELECT CONCAT('user=', CURRENT_USER()); SELECT CONCAT('skip_name_resolve=', @@skip_name_resolve); SELECT CONCAT('version=', VERSION())"
if `+client+` -h "$HOST" -P "$PORT" -u "$USERNAME" -pwrong "$DATABASE" -e "SELECT 1" 2>/dev/null; then echo "wrong password accepted"; fi`)
	for _, want := range []string{"total=7", "user=root@%"} {
		if !strings.Contains(got, want) {
			t.Errorf("SQL through the Secret's credentials, over the network as root: no %q in\n%s", want, got)
		}
	}
	// skip_name_resolve is the image's setting, as in the official image:
	// it proves the server read the image's configuration (MySQL says 1,
	// MariaDB ON).
	if !strings.Contains(got, "skip_name_resolve=1") && !strings.Contains(got, "skip_name_resolve=ON") {
		t.Errorf("the server did not read the image's configuration (skip_name_resolve):\n%s", got)
	}
	if !strings.Contains(got, "version=") || !strings.Contains(got[strings.Index(got, "version="):], version) {
		t.Errorf("not served by the server of %s (%q):\n%s", image, version, got)
	}
	if strings.Contains(got, "wrong password accepted") {
		t.Errorf("the server accepted a wrong password")
	}
	checkPasswordChangedInTheDatabase(t, ns, name, pc)
}

// The pod runs exactly as the controller builds it, nothing relaxed: uid
// 999, its fsGroup applied to a real volume, a read-only root filesystem
// with its scratch directories writable, no service account token.
func TestPodRunsAsTheControllerBuildsIt(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("strict", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "strict", converge)

	var pod corev1.Pod
	e2eutil.GetJSON(t, &pod, "-n", ns, "get", "pod", "strict-0")
	psc, c := pod.Spec.SecurityContext, pod.Spec.Containers[0]
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 999 || psc.FSGroup == nil || *psc.FSGroup != 999 ||
		c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Fatalf("the pod is not as the controller builds it: %+v %+v", psc, c.SecurityContext)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil {
			t.Errorf("the pod has a projected (service account token) volume %s", v.Name)
		}
	}

	exec := func(script string) string {
		t.Helper()
		out, _ := e2eutil.KubectlRun("", "-n", ns, "exec", "strict-0", "--", "sh", "-c", script)
		return strings.TrimSpace(string(out))
	}
	if got := strings.Fields(exec("id -u; id -g; id -G")); len(got) < 3 || got[0] != "999" || got[1] != "999" || !contains(got[2:], "999") {
		t.Errorf("ids in the container: %q, want uid 999, gid 999, in group 999", got)
	}
	if got := exec("grep CapEff /proc/1/status"); !strings.HasSuffix(got, "0000000000000000") {
		t.Errorf("effective capabilities of the server: %q", got)
	}
	if got := exec("touch /usr/probe 2>&1; echo rc=$?"); !strings.Contains(got, "Read-only file system") {
		t.Errorf("the root filesystem is writable: %q", got)
	}
	for _, dir := range []string{"/var/run/postgresql", "/tmp", "/var/lib/postgresql/data"} {
		if got := exec("touch " + dir + "/probe && rm " + dir + "/probe && echo ok"); got != "ok" {
			t.Errorf("%s is not writable: %q", dir, got)
		}
	}
	if got := exec("ls /var/run/secrets/kubernetes.io/serviceaccount 2>&1; echo rc=$?"); !strings.Contains(got, "No such file") {
		t.Errorf("a service account token is mounted: %q", got)
	}
	// The volume is a real local volume on the node, and the kubelet gave
	// it the pod's fsGroup.
	if got := exec("stat -c '%g %A' /var/lib/postgresql/data"); !strings.HasPrefix(got, "999 drwxrws") {
		t.Errorf("the data volume's group and mode: %q, want group 999 with setgid", got)
	}
	pvName := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pvc", "data-strict-0", "-o", "jsonpath={.spec.volumeName}"))
	var pv corev1.PersistentVolume
	e2eutil.GetJSON(t, &pv, "get", "pv", pvName)
	if pv.Spec.Local == nil {
		t.Fatalf("PersistentVolume %s is not a local volume: %+v", pvName, pv.Spec.PersistentVolumeSource)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(pv.Spec.Local.Path, &st); err != nil || st.Gid != 999 || st.Mode&syscall.S_ISGID == 0 {
		t.Errorf("the volume's directory on the host %s: gid %d mode %o (%v), want gid 999 and setgid", pv.Spec.Local.Path, st.Gid, st.Mode, err)
	}
}

// Drift repair and `kubectl rollout restart` on a real StatefulSet leave the
// server serving the same data.
func TestDriftRepairAndRolloutRestartKeepServing(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("drift", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "drift", converge)
	runClient(t, ns, "drift", postgresImage, psql+`-c "CREATE TABLE t (v text)" -c "INSERT INTO t VALUES ('before')"`)
	read := func() string {
		return strings.TrimSpace(runClient(t, ns, "drift", postgresImage, psql+`-c "SELECT string_agg(v, ',' ORDER BY v) FROM t"`))
	}

	// Drift: the container's memory limit changed by hand (which rolls the
	// pod), and the client Service deleted.
	e2eutil.Kubectl(t, "-n", ns, "set", "resources", "statefulset/drift", "-c", "postgresql", "--limits=memory=300Mi")
	e2eutil.Kubectl(t, "-n", ns, "delete", "service", "drift")
	e2eutil.Eventually(t, converge, "StatefulSet and Service repaired", func() (bool, string) {
		var sts appsv1.StatefulSet
		e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "drift")
		limit := sts.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String()
		_, err := e2eutil.KubectlRun("", "-n", ns, "get", "service", "drift")
		return limit == "512Mi" && err == nil, fmt.Sprintf("limit=%s service: %v", limit, err)
	})
	e2eutil.Eventually(t, converge, "the StatefulSet rolled out and the Database Running", func() (bool, string) {
		var sts appsv1.StatefulSet
		e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "drift")
		ok, why := e2eutil.IsRunning(e2eutil.GetDB(t, ns, "drift"))
		return ok && sts.Status.UpdateRevision == sts.Status.CurrentRevision && sts.Status.ReadyReplicas == 1,
			fmt.Sprintf("%s; revisions %s/%s", why, sts.Status.CurrentRevision, sts.Status.UpdateRevision)
	})
	if got := read(); got != "before" {
		t.Errorf("data after drift repair: %q", got)
	}
	runClient(t, ns, "drift", postgresImage, psql+`-c "INSERT INTO t VALUES ('repaired')"`)

	uid := podUID(t, ns, "drift")
	e2eutil.Kubectl(t, "-n", ns, "rollout", "restart", "statefulset/drift")
	e2eutil.Eventually(t, converge, "the pod replaced by rollout restart", func() (bool, string) {
		now := podUID(t, ns, "drift")
		return now != "" && now != uid, "uid " + now
	})
	e2eutil.Kubectl(t, "-n", ns, "rollout", "status", "statefulset/drift", "--timeout=3m")
	e2eutil.WaitRunning(t, ns, "drift", converge)
	if got := read(); got != "before,repaired" {
		t.Errorf("data after rollout restart: %q", got)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// A first init that takes longer than the liveness budget still completes:
// the startup probe holds liveness off until the server serves, so the
// container is not killed halfway through its init scripts (a restart
// would find the data directory, skip the rest of the init for good, and
// serve a database without what the scripts make).
func TestFirstInitSlowerThanLivenessCompletes(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("slow", "postgresql", "15", slowInitImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.Eventually(t, converge+3*time.Minute, "the slow first init to finish", func() (bool, string) {
		return e2eutil.IsRunning(e2eutil.GetDB(t, ns, "slow"))
	})

	var sts appsv1.StatefulSet
	e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "slow")
	live := sts.Spec.Template.Spec.Containers[0].LivenessProbe
	if live == nil {
		t.Fatal("the StatefulSet has no liveness probe")
	}
	budget := time.Duration(live.InitialDelaySeconds+live.PeriodSeconds*live.FailureThreshold) * time.Second

	var pod corev1.Pod
	e2eutil.GetJSON(t, &pod, "-n", ns, "get", "pod", "slow-0")
	cs := pod.Status.ContainerStatuses[0]
	if cs.RestartCount != 0 {
		t.Errorf("the container restarted %d times during its first init; last ended: %+v", cs.RestartCount, cs.LastTerminationState.Terminated)
	}
	// The init really outlasted the liveness budget, or this test proves
	// nothing: from the container's start to the pod's readiness.
	var readyAt time.Time
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			readyAt = c.LastTransitionTime.Time
		}
	}
	if cs.State.Running == nil || readyAt.IsZero() {
		t.Fatalf("pod slow-0 not running and ready: %+v", pod.Status)
	}
	took := readyAt.Sub(cs.State.Running.StartedAt.Time)
	t.Logf("first init took %s; liveness budget %s", took, budget)
	if took <= budget {
		t.Errorf("the first init took %s, within the liveness budget %s: the image is not slow enough to test anything", took, budget)
	}
	if logs := e2eutil.Kubectl(t, "-n", ns, "logs", "slow-0"); !strings.Contains(logs, "slow-init: done") || !strings.Contains(logs, "entrypoint: initialised") {
		t.Errorf("the init did not run to its end:\n%s", logs)
	}
	if got := strings.TrimSpace(runClient(t, ns, "slow", postgresImage, psql+`-c "SELECT count(*) FROM init_completed"`)); got != "1" {
		t.Errorf("rows in init_completed: %q, want 1 (the init script's last step)", got)
	}
}
