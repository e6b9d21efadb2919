//go:build e2e

package realnode

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// The exporters' images (hack/images/names.sh): Debian's builds of the
// upstream images' versions.
const (
	postgresExporterImage = "localhost/dbc/postgres-exporter:0.17.1"
	mysqldExporterImage   = "localhost/dbc/mysqld-exporter:0.17.2"
)

// monitoredCase is one engine's monitored Database, and what its
// exporters must say.
type monitoredCase struct {
	name, engine, version, image, exporterImage string
	port                                        int
	// table makes the table the writes go to; writes is a client that
	// runs the statements it reads, each in a transaction of its own.
	table, writes string
	// up is the exporter's up metric; commits counts the primary's
	// writes: a metric's name, then what its series' labels must hold
	// (e2eutil.SumMetric); replica names series a replica's exporter has
	// of its replication, with the value each must have ("" for any).
	up      string
	commits []string
	replica map[string]string
	// noReplica names series the replica's exporter is known not to
	// have, and why: the test fails once an exporter brings them.
	noReplica map[string]string
	// primary names series the primary's exporter has of its replicas.
	primary []string
	// asMonitor runs SQL as the monitoring user over the server's
	// loopback, in the server's container; fromElsewhere logs in as it
	// from another pod, at $IP.
	asMonitor, fromElsewhere string
	// refusedWrite and refusedLogin are the servers' words.
	refusedWrite, refusedLogin []string
}

// A monitored PostgreSQL Database of two servers: each pod runs
// postgres_exporter, which a pod of the cluster scrapes at the pod's
// metrics port: up, the primary's commits moving under a writer, its
// replica's WAL position, the replica's lag; the monitoring user the
// controller made reads statistics but cannot write, nor log in from
// another pod.
func TestPostgreSQLMonitoring(t *testing.T) {
	parallel(t)
	ns, replica := checkMonitoring(t, monitoredCase{
		name: "watched", engine: "postgresql", version: "15", image: postgresImage, exporterImage: postgresExporterImage, port: 9187,
		table:   psql + `-c 'CREATE TABLE m (i int PRIMARY KEY)'`,
		writes:  `PGCONNECT_TIMEOUT=5 psql "$URI" -v ON_ERROR_STOP=1 -qtA`,
		up:      "pg_up",
		commits: []string{"pg_stat_database_xact_commit"},
		replica: map[string]string{"pg_replication_is_replica": "1", "pg_replication_lag_seconds": ""},
		primary: []string{"pg_stat_replication_pg_wal_lsn_diff"},
		asMonitor: `psql -h 127.0.0.1 -U dbcontroller_monitor -d watched -v ON_ERROR_STOP=1 -tAc "SELECT count(*) FROM pg_stat_activity" ` +
			`-c "INSERT INTO m VALUES (0)" 2>&1; psql -h 127.0.0.1 -U dbcontroller_monitor -d watched -tAc "CREATE TABLE n (i int)" 2>&1`,
		fromElsewhere: `PGCONNECT_TIMEOUT=5 psql "host=$IP user=dbcontroller_monitor dbname=watched sslmode=require" -tAc 'SELECT 1' </dev/null 2>&1`,
		refusedWrite:  []string{"permission denied for table m", "permission denied for schema public"},
		refusedLogin:  []string{"no password supplied"},
	})
	checkLagMoves(t, ns, "watched", replica)
}

// checkLagMoves pauses the replay of PostgreSQL replica, writes on the
// primary, and sees the controller's replication_lag_bytes of it grow,
// then fall back to 0 once the replay resumes: the metric follows the
// state.
func checkLagMoves(t *testing.T, ns, db, replica string) {
	lag := func() (float64, bool) {
		m, err := e2eutil.ScrapeMetrics(metricsAddress)
		if err != nil {
			return 0, false
		}
		v, ok := m[fmt.Sprintf(`database_controller_replication_lag_bytes{database=%q,instance=%q,namespace=%q}`, db, replica, ns)]
		return v, ok
	}
	replay := func(fn string) {
		e2eutil.Kubectl(t, "-n", ns, "exec", replica, "-c", "postgresql", "--", "psql", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-tAc", "SELECT "+fn+"()")
	}
	replay("pg_wal_replay_pause")
	runClient(t, ns, db, postgresImage, psql+`-c 'INSERT INTO m SELECT generate_series(1000, 20000)'`)
	var paused float64
	e2eutil.Eventually(t, converge, "the controller's lag of "+replica+" to grow while its replay is paused", func() (bool, string) {
		v, ok := lag()
		paused = v
		return ok && v > 100000, fmt.Sprintf("lag %v (series %v)", v, ok)
	})
	replay("pg_wal_replay_resume")
	e2eutil.Eventually(t, converge, "the controller's lag of "+replica+" to fall once its replay resumes", func() (bool, string) {
		v, ok := lag()
		return ok && v == 0, fmt.Sprintf("lag %v (series %v)", v, ok)
	})
	t.Logf("replay of %s paused: the controller's replication_lag_bytes reached %.0f; resumed: 0", replica, paused)
}

// The same of a monitored MariaDB Database and mysqld_exporter: up, the
// primary's INSERTs counted, the replica's SQL thread running; its TLS is
// Required, so that the exporter connects with TLS over the loopback.
func TestMariaDBMonitoring(t *testing.T) {
	parallel(t)
	checkMonitoring(t, monitoredCase{
		name: "watched", engine: "mysql", version: "10.11", image: mariadbImage, exporterImage: mysqldExporterImage, port: 9104,
		table:   waitMariaDB + `MYSQL_PWD="$PASSWORD" mariadb -h "$HOST" -P "$PORT" -u "$USERNAME" --ssl "$DATABASE" -e 'CREATE TABLE m (i int PRIMARY KEY)'`,
		writes:  `MYSQL_PWD="$PASSWORD" mariadb -h "$HOST" -P "$PORT" -u "$USERNAME" --ssl --connect-timeout=5 "$DATABASE"`,
		up:      "mysql_up",
		commits: []string{"mysql_global_status_commands_total", `command="insert"`},
		replica: map[string]string{"mysql_slave_status_slave_sql_running": "1", "mysql_slave_status_seconds_behind_master": ""},
		asMonitor: `mariadb -h 127.0.0.1 -u dbcontroller_monitor --ssl -N -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST; INSERT INTO watched.m VALUES (0)" 2>&1; ` +
			`mariadb -h 127.0.0.1 -u dbcontroller_monitor --ssl -N -e "SELECT COUNT(*) FROM watched.m" 2>&1`,
		fromElsewhere: `mariadb -h "$IP" -u dbcontroller_monitor --ssl --connect-timeout=5 -e 'SELECT 1' 2>&1`,
		refusedWrite:  []string{"INSERT command denied", "SELECT command denied"},
		refusedLogin:  []string{"Access denied for user 'dbcontroller_monitor'"},
	})
}

// The same of Oracle's MySQL 9.7, TLS Required. mysqld_exporter 0.17.2
// reports no replication status of a MySQL 9.7 replica (it asks SHOW
// SLAVE STATUS, gone since MySQL 8.4): the controller's own metrics say
// whether it streams.
func TestMySQLMonitoring(t *testing.T) {
	parallel(t)
	checkMonitoring(t, monitoredCase{
		name: "watched", engine: "mysql", version: "9.7", image: mysqlImage, exporterImage: mysqldExporterImage, port: 9104,
		table:     waitMySQL + `MYSQL_PWD="$PASSWORD" mysql -h "$HOST" -P "$PORT" -u "$USERNAME" --ssl-mode=REQUIRED "$DATABASE" -e 'CREATE TABLE m (i int PRIMARY KEY)'`,
		writes:    `MYSQL_PWD="$PASSWORD" mysql -h "$HOST" -P "$PORT" -u "$USERNAME" --ssl-mode=REQUIRED --connect-timeout=5 "$DATABASE"`,
		up:        "mysql_up",
		commits:   []string{"mysql_global_status_commands_total", `command="insert"`},
		noReplica: map[string]string{"mysql_slave_status_slave_sql_running": "mysqld_exporter 0.17.2 asks MySQL 9.7 SHOW SLAVE STATUS, which it no longer has"},
		asMonitor: `mysql -h 127.0.0.1 -u dbcontroller_monitor --ssl-mode=REQUIRED -N -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST; INSERT INTO watched.m VALUES (0)" 2>&1; ` +
			`mysql -h 127.0.0.1 -u dbcontroller_monitor --ssl-mode=REQUIRED -N -e "SELECT COUNT(*) FROM watched.m" 2>&1`,
		fromElsewhere: `mysql -h "$IP" -u dbcontroller_monitor --ssl-mode=REQUIRED --connect-timeout=5 -e 'SELECT 1' 2>&1`,
		refusedWrite:  []string{"INSERT command denied", "SELECT command denied"},
		refusedLogin:  []string{"Access denied for user 'dbcontroller_monitor'"},
	})
}

// scrapeScript prints, for each address of $IPS, "### <address> <ms>"
// (how long the scrape took) and the exporter's /metrics, fetched with
// bash alone (the server's image has no HTTP client).
const scrapeScript = `scrape() {
  for ip in $IPS; do
    t0=$(date +%%s%%N)
    body=$(bash -c 'exec 3<>/dev/tcp/'"$ip"'/%d; printf "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n" >&3; cat <&3')
    echo "### $ip $(( ($(date +%%s%%N) - t0) / 1000000 ))"
    printf '%%s\n' "$body" | tr -d '\r'
  done
}
`

// checkMonitoring checks c's Database, and returns its namespace and its
// replica's name.
func checkMonitoring(t *testing.T, c monitoredCase) (ns, replica string) {
	ns = e2eutil.NewNamespace(t)
	yaml := dbYAML(c.name, c.engine, c.version, c.image, 2)
	if c.image == mysqlImage {
		yaml = mysqlYAML(c.name, c.version, c.image, 2)
	}
	yaml += "  monitoring:\n    enabled: true\n    image: " + c.exporterImage + "\n"
	if c.engine == "mysql" {
		yaml += "  tls:\n    mode: Required\n"
	}
	e2eutil.KubectlIn(t, yaml, "-n", ns, "create", "-f", "-")
	start := time.Now()
	db := waitReplicating(t, ns, c.name, "two monitored servers, one primary and one replica")
	t.Logf("2 monitored servers Running and replicating after %s", time.Since(start).Round(time.Second))
	primary := db.Status.Replication.Primary
	replica = c.name + "-1"
	if primary == replica {
		replica = c.name + "-0"
	}
	e2eutil.Eventually(t, converge, "the monitoring user's event", func() (bool, string) {
		events := dbEvents(t, ns, c.name)
		for _, e := range events {
			if strings.HasPrefix(e, "Normal MonitoringUserCreated Made the monitoring user dbcontroller_monitor on "+primary) {
				return true, ""
			}
		}
		return false, strings.Join(events, "\n")
	})
	ips := map[string]string{}
	for _, pod := range []string{primary, replica} {
		ips[pod] = e2eutil.Kubectl(t, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.podIP}")
	}

	// A pod of the cluster scrapes both exporters, writes 100 rows, one
	// transaction each, in one connection (a client per row took over
	// three minutes on a slow machine), then scrapes again.
	runClient(t, ns, c.name, c.image, c.table)
	script := fmt.Sprintf(scrapeScript, c.port) + fmt.Sprintf(`IPS="%s %s"
echo "=== before"; scrape
i=0; while [ $i -lt 100 ]; do i=$((i + 1)); echo "INSERT INTO m VALUES ($i);"; done | %s || exit 1
sleep 2
echo "=== after"; scrape
`, ips[primary], ips[replica], c.writes)
	out := runClient(t, ns, c.name, c.image, script)
	before, after := scrapes(t, out, "before"), scrapes(t, out, "after")
	for _, pod := range []string{primary, replica} {
		m := after[ips[pod]]
		if m == nil {
			t.Fatalf("no scrape of %s's exporter at %s:%d:\n%s", pod, ips[pod], c.port, tail(out, 40))
		}
		if got := e2eutil.SumMetric(m.metrics, c.up); got != 1 {
			t.Errorf("%s's exporter: %s = %v, want 1 (it cannot log in or reach the server)", pod, c.up, got)
		}
		t.Logf("%s's exporter: %d series, scraped in %d ms", pod, len(m.metrics), m.ms)
	}
	pm, pb := after[ips[primary]].metrics, before[ips[primary]].metrics
	moved := e2eutil.SumMetric(pm, c.commits[0], c.commits[1:]...) - e2eutil.SumMetric(pb, c.commits[0], c.commits[1:]...)
	if moved < 100 {
		t.Errorf("the primary's %s moved by %v across 100 writes, want at least 100", strings.Join(c.commits, " "), moved)
	}
	t.Logf("the primary's %s moved by %v across 100 writes", strings.Join(c.commits, " "), moved)
	for _, name := range c.primary {
		if !hasSeries(pm, name) {
			t.Errorf("the primary's exporter has no %s series (its replicas)", name)
		}
	}
	rm := after[ips[replica]].metrics
	for name, why := range c.noReplica {
		if hasSeries(rm, name) {
			t.Errorf("the replica's exporter has %s, which it was known not to (%s): check it as the others' are", name, why)
		}
	}
	// The controller's view of the replica, whatever the exporter says.
	if m, err := e2eutil.ScrapeMetrics(metricsAddress); err != nil ||
		m[fmt.Sprintf(`database_controller_instance_streaming{database=%q,instance=%q,namespace=%q}`, c.name, replica, ns)] != 1 {
		t.Errorf("the controller's instance_streaming of %s is not 1 (%v)", replica, err)
	}
	for name, want := range c.replica {
		switch {
		case !hasSeries(rm, name):
			t.Errorf("the replica's exporter has no %s series", name)
		case want != "" && strconv.FormatFloat(e2eutil.SumMetric(rm, name), 'f', -1, 64) != want:
			t.Errorf("the replica's exporter: %s = %v, want %s", name, e2eutil.SumMetric(rm, name), want)
		default:
			t.Logf("the replica's %s = %v", name, e2eutil.SumMetric(rm, name))
		}
	}

	// The monitoring user reads the server's state and nothing else.
	server := e2eutil.Kubectl(t, "-n", ns, "get", "pod", primary, "-o", "jsonpath={.spec.containers[0].name}")
	said, _ := e2eutil.KubectlRun("", "-n", ns, "exec", primary, "-c", server, "--", "sh", "-c", c.asMonitor)
	t.Logf("as the monitoring user, in the server's container:\n%s", strings.TrimSpace(string(said)))
	for _, want := range c.refusedWrite {
		if !strings.Contains(string(said), want) {
			t.Errorf("as the monitoring user, want %q:\n%s", want, said)
		}
	}
	if first := strings.TrimSpace(strings.SplitN(string(said), "\n", 2)[0]); strings.Trim(first, "0123456789") != "" || first == "" {
		t.Errorf("the monitoring user could not read the server's sessions:\n%s", said)
	}
	elsewhere, err := tryClient(t, ns, c.name, c.image, "IP="+ips[primary]+"; "+c.fromElsewhere+"; exit 0")
	if err != nil {
		t.Fatalf("client: %v\n%s", err, elsewhere)
	}
	t.Logf("as the monitoring user, from another pod: %s", strings.TrimSpace(elsewhere))
	for _, want := range c.refusedLogin {
		if !strings.Contains(elsewhere, want) {
			t.Errorf("the monitoring user logging in from another pod: want %q:\n%s", want, elsewhere)
		}
	}
	logExporterCost(t, ns, c.name)
	return ns, replica
}

// scraped is one exporter's scrape: its series and how long it took.
type scraped struct {
	metrics map[string]float64
	ms      int
}

// scrapes reads the scrapes after "=== when" in out, by address.
func scrapes(t *testing.T, out, when string) map[string]*scraped {
	t.Helper()
	i := strings.Index(out, "=== "+when+"\n")
	if i < 0 {
		t.Fatalf("no %q in the client's output:\n%s", when, tail(out, 40))
	}
	section := out[i+len(when)+5:]
	if j := strings.Index(section, "\n=== "); j >= 0 {
		section = section[:j]
	}
	res := map[string]*scraped{}
	for _, part := range strings.Split(section, "### ")[1:] {
		head, body, _ := strings.Cut(part, "\n")
		addr, ms, _ := strings.Cut(head, " ")
		n, _ := strconv.Atoi(ms)
		res[addr] = &scraped{metrics: e2eutil.ParseMetrics(body), ms: n}
	}
	return res
}

func hasSeries(m map[string]float64, name string) bool {
	for k := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			return true
		}
	}
	return false
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logExporterCost logs each exporter's CPU and memory, as the kubelet's
// summary has them.
func logExporterCost(t *testing.T, ns, db string) {
	t.Helper()
	node := e2eutil.Kubectl(t, "-n", ns, "get", "pod", db+"-0", "-o", "jsonpath={.spec.nodeName}")
	var summary struct {
		Pods []struct {
			PodRef struct {
				Name, Namespace string
			} `json:"podRef"`
			Containers []struct {
				Name string `json:"name"`
				CPU  struct {
					UsageNanoCores       *uint64 `json:"usageNanoCores"`
					UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
				} `json:"cpu"`
				Memory struct {
					WorkingSetBytes *uint64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	raw, err := e2eutil.KubectlRun("", "get", "--raw", "/api/v1/nodes/"+node+"/proxy/stats/summary")
	if err != nil || json.Unmarshal(raw, &summary) != nil {
		t.Logf("the kubelet's summary: %v", err)
		return
	}
	for _, p := range summary.Pods {
		if p.PodRef.Namespace != ns {
			continue
		}
		for _, c := range p.Containers {
			if c.Memory.WorkingSetBytes == nil || c.CPU.UsageCoreNanoSeconds == nil {
				continue
			}
			t.Logf("%s container %s: working set %.1f MiB, CPU %.2f s in all", p.PodRef.Name, c.Name,
				float64(*c.Memory.WorkingSetBytes)/(1<<20), float64(*c.CPU.UsageCoreNanoSeconds)/1e9)
		}
	}
}

// prometheusAddress is where the suite's Prometheus server listens.
var prometheusAddress = "127.0.0.1:" + e2eutil.EnvOr("E2E_NODE_PROMETHEUS_PORT", "21090")

// startPrometheus runs Debian's Prometheus server (hack/tools/prometheus.sh)
// on the host, stopped by its PID when the test ends: every 2 s it scrapes
// the suite's controller, and the pods of namespace ns that have a port
// named metrics, with their namespace and pod as labels, as the Prometheus
// Operator's PodMonitor (artifacts/monitoring/podmonitors.yaml) has them;
// and evaluates artifacts/monitoring/prometheusrule.yaml's alerts.
// Debian's Prometheus is built without Kubernetes discovery: the pods are
// found by the test, every 2 s, written to a file Prometheus reads
// (file_sd).
func startPrometheus(t *testing.T, ns string) {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(root, "artifacts", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatal(err)
	}
	rules, err := yaml.JSONToYAML(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [%s]
scrape_configs:
- job_name: controller
  static_configs: [{targets: [%q]}]
- job_name: servers
  file_sd_configs: [{files: [%q], refresh_interval: 2s}]
`, filepath.Join(dir, "rules.yaml"), metricsAddress, filepath.Join(dir, "targets.json"))
	for name, body := range map[string][]byte{"rules.yaml": rules, "prometheus.yml": []byte(config), "targets.json": []byte("[]")} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log, err := os.Create(filepath.Join(root, "_output", "e2e-node-prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "_output", "bin", "prometheus"), "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+prometheusAddress, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Prometheus (hack/tools/prometheus.sh puts it in _output/bin): %v", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			discoverPods(ns, filepath.Join(dir, "targets.json"))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	e2eutil.Eventually(t, time.Minute, "Prometheus to be ready", func() (bool, string) {
		resp, err := http.Get("http://" + prometheusAddress + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// discoverPods writes to file the targets of the pods of ns that have a
// container port named metrics: address, namespace and pod, in file_sd's
// form. A failed look leaves the file as it was.
func discoverPods(ns, file string) {
	var pods corev1.PodList
	if err := e2eutil.TryGetJSON(&pods, "-n", ns, "get", "pods"); err != nil {
		return
	}
	type target struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	targets := []target{}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.Name == "metrics" && p.Status.PodIP != "" {
					targets = append(targets, target{Targets: []string{fmt.Sprintf("%s:%d", p.Status.PodIP, port.ContainerPort)},
						Labels: map[string]string{"namespace": ns, "pod": p.Name}})
				}
			}
		}
	}
	body, err := json.Marshal(targets)
	if err != nil {
		return
	}
	// Written whole, then renamed: Prometheus never reads half a file.
	if os.WriteFile(file+".new", body, 0o644) == nil {
		_ = os.Rename(file+".new", file)
	}
}

// promSample is one series of a query's answer.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// promQuery asks the suite's Prometheus server query, now.
func promQuery(t *testing.T, query string) []promSample {
	t.Helper()
	resp, err := http.Get("http://" + prometheusAddress + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.Status != "success" {
		t.Fatalf("query %s: %v %s %s", query, err, answer.Status, answer.Error)
	}
	return answer.Data.Result
}

// alerts are the alerts of namespace ns, pending or firing (on a slow
// run, one may have outlasted its 5 minutes), as "name labels".
func alerts(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	for _, s := range promQuery(t, `ALERTS{namespace="`+ns+`"}`) {
		out = append(out, fmt.Sprintf("%s database=%s pod=%s reason=%s", s.Metric["alertname"],
			s.Metric["database"], s.Metric["pod"], s.Metric["reason"]))
	}
	slices.Sort(out)
	return out
}

// A real Prometheus server evaluates artifacts/monitoring's alerts against
// the live cluster: a healthy monitored Database raises none; one whose
// image cannot be pulled raises DatabaseNotReady, DatabaseCrashLooping and
// (its exporter runs) DatabaseServerDown, and a server whose exporter can
// no longer log in DatabaseServerDown
// (pending: each fires after its 5 minutes, which the rules' unit tests
// cover, make test-monitoring).
func TestAlertsOnALiveCluster(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	startPrometheus(t, ns)
	monitored := "  monitoring:\n    enabled: true\n    image: " + postgresExporterImage + "\n"
	e2eutil.KubectlIn(t, dbYAML("steady", "postgresql", "15", postgresImage, 1)+monitored, "-n", ns, "create", "-f", "-")
	e2eutil.KubectlIn(t, dbYAML("unpulled", "postgresql", "15", "localhost/dbc/does-not-exist:15", 1)+monitored, "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "steady", converge)

	e2eutil.Eventually(t, converge, "Prometheus to see steady ready and its exporter up", func() (bool, string) {
		ready := promQuery(t, `database_controller_database_ready{namespace="`+ns+`",database="steady"} == 1`)
		up := promQuery(t, `pg_up{namespace="`+ns+`",pod="steady-0"} == 1`)
		return len(ready) == 1 && len(up) == 1, fmt.Sprintf("ready %v, pg_up %v", ready, up)
	})
	// The unpulled pod's exporter runs, and its server does not.
	want := []string{
		"DatabaseCrashLooping database=unpulled pod= reason=ImagePullFailed",
		"DatabaseNotReady database=unpulled pod= reason=",
		"DatabaseServerDown database= pod=unpulled-0 reason=",
	}
	e2eutil.Eventually(t, converge, "the unpulled Database's alerts, and none of steady's", func() (bool, string) {
		got := alerts(t, ns)
		return slices.Equal(got, want), strings.Join(got, "\n")
	})
	t.Logf("alerts: %s", strings.Join(want, "; "))

	// The exporter's user can no longer log in, and its session ends.
	e2eutil.Kubectl(t, "-n", ns, "exec", "steady-0", "-c", "postgresql", "--", "psql", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-c",
		"ALTER ROLE dbcontroller_monitor NOLOGIN", "-c", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'dbcontroller_monitor'")
	want = append(want, "DatabaseServerDown database= pod=steady-0 reason=")
	slices.Sort(want)
	e2eutil.Eventually(t, converge, "DatabaseServerDown for steady-0", func() (bool, string) {
		got := alerts(t, ns)
		return slices.Equal(got, want), strings.Join(got, "\n")
	})
}

// customQueries is a postgres_exporter queries file: whether the query
// runs as the monitoring user, and how many sessions the server has.
const customQueries = `dbc_custom:
  query: "SELECT CASE WHEN current_user = 'dbcontroller_monitor' THEN 1 ELSE 0 END AS as_monitor, (SELECT count(*) FROM pg_stat_activity) AS sessions"
  metrics:
    - as_monitor:
        usage: "GAUGE"
        description: "1 when the query runs as the monitoring user"
    - sessions:
        usage: "GAUGE"
        description: "Sessions of the server"
`

// Custom queries from a ConfigMap (spec.monitoring.queries): postgres_exporter
// runs them as the monitoring user beside its own. A Database that names a
// ConfigMap that does not exist still serves; its exporter says it could
// not read the queries.
func TestPostgreSQLCustomQueries(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	cm := corev1.ConfigMap{}
	cm.APIVersion, cm.Kind, cm.Name = "v1", "ConfigMap", "counted-queries"
	cm.Data = map[string]string{"pg.yaml": customQueries}
	manifest, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	e2eutil.KubectlIn(t, string(manifest), "-n", ns, "create", "-f", "-")
	monitored := "  monitoring:\n    enabled: true\n    image: " + postgresExporterImage + "\n    queries:\n"
	e2eutil.KubectlIn(t, dbYAML("counted", "postgresql", "15", postgresImage, 1)+monitored+"      configMapName: counted-queries\n      key: pg.yaml\n",
		"-n", ns, "create", "-f", "-")
	e2eutil.KubectlIn(t, dbYAML("unread", "postgresql", "15", postgresImage, 1)+monitored+"      configMapName: missing-queries\n",
		"-n", ns, "create", "-f", "-")
	ips := map[string]string{}
	for _, db := range []string{"counted", "unread"} {
		e2eutil.WaitRunning(t, ns, db, converge)
		e2eutil.Eventually(t, converge, db+"'s monitoring user", func() (bool, string) {
			events := dbEvents(t, ns, db)
			return slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Normal MonitoringUserCreated") }), strings.Join(events, "\n")
		})
		ips[db] = e2eutil.Kubectl(t, "-n", ns, "get", "pod", db+"-0", "-o", "jsonpath={.status.podIP}")
	}
	var got map[string]*scraped
	e2eutil.Eventually(t, converge, "the exporters to have logged in and read their queries", func() (bool, string) {
		out, err := tryClient(t, ns, "counted", postgresImage, fmt.Sprintf(scrapeScript, 9187)+
			fmt.Sprintf("IPS=\"%s %s\"\necho '=== now'; scrape\n", ips["counted"], ips["unread"]))
		if err != nil {
			return false, err.Error()
		}
		got = scrapes(t, out, "now")
		c, u := got[ips["counted"]], got[ips["unread"]]
		return c != nil && u != nil && e2eutil.SumMetric(c.metrics, "pg_up") == 1 && e2eutil.SumMetric(u.metrics, "pg_up") == 1 &&
				hasSeries(u.metrics, "pg_exporter_user_queries_load_error"),
			tail(out, 5)
	})
	c, u := got[ips["counted"]].metrics, got[ips["unread"]].metrics
	if v := e2eutil.SumMetric(c, "dbc_custom_as_monitor"); v != 1 {
		t.Errorf("the custom query's as_monitor = %v, want 1: it runs as the monitoring user", v)
	}
	if v := e2eutil.SumMetric(c, "dbc_custom_sessions"); v < 1 {
		t.Errorf("the custom query's sessions = %v, want at least its own", v)
	}
	if v := e2eutil.SumMetric(c, "pg_exporter_user_queries_load_error"); v != 0 {
		t.Errorf("the exporter of counted: user queries load error %v, want 0", v)
	}
	if v := e2eutil.SumMetric(u, "pg_exporter_user_queries_load_error"); v != 1 {
		t.Errorf("the exporter of unread, whose ConfigMap does not exist: user queries load error %v, want 1", v)
	}
	if hasSeries(u, "dbc_custom_as_monitor") {
		t.Errorf("the exporter of unread has the custom query's series")
	}
	t.Logf("counted: dbc_custom_as_monitor %v, dbc_custom_sessions %v; unread: pg_up 1, pg_exporter_user_queries_load_error %v",
		e2eutil.SumMetric(c, "dbc_custom_as_monitor"), e2eutil.SumMetric(c, "dbc_custom_sessions"), e2eutil.SumMetric(u, "pg_exporter_user_queries_load_error"))

	// A changed ConfigMap is read by an exporter restarted alone, as the
	// README says: sh -c 'kill 1' in its container (the image's shell's
	// kill: the upstream image is busybox's), once the kubelet wrote it.
	changed := strings.ReplaceAll(customQueries, "dbc_custom:", "dbc_changed:")
	patch, err := json.Marshal(map[string]any{"data": map[string]string{"pg.yaml": changed}})
	if err != nil {
		t.Fatal(err)
	}
	e2eutil.Kubectl(t, "-n", ns, "patch", "configmap", "counted-queries", "--type=merge", "-p", string(patch))
	edited := time.Now()
	e2eutil.Eventually(t, 3*converge, "the kubelet to write the changed ConfigMap into the exporter's volume", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "exec", "counted-0", "-c", "exporter", "--", "cat", "/etc/dbc-exporter/queries.yaml")
		return err == nil && strings.Contains(string(out), "dbc_changed:"), string(out)
	})
	t.Logf("the changed ConfigMap was in the exporter's volume %s after the patch", time.Since(edited).Round(time.Second))
	serverStarts := func() string {
		return e2eutil.Kubectl(t, "-n", ns, "get", "pod", "counted-0", "-o", `jsonpath={.status.containerStatuses[?(@.name=="postgresql")].restartCount}`)
	}
	before := serverStarts()
	e2eutil.Kubectl(t, "-n", ns, "exec", "counted-0", "-c", "exporter", "--", "sh", "-c", "kill 1")
	e2eutil.Eventually(t, converge, "the restarted exporter to run the changed queries", func() (bool, string) {
		out, err := tryClient(t, ns, "counted", postgresImage, fmt.Sprintf(scrapeScript, 9187)+
			fmt.Sprintf("IPS=%s\necho '=== now'; scrape\n", ips["counted"]))
		if err != nil {
			return false, err.Error()
		}
		m := scrapes(t, out, "now")[ips["counted"]]
		return m != nil && e2eutil.SumMetric(m.metrics, "dbc_changed_as_monitor") == 1 && !hasSeries(m.metrics, "dbc_custom_as_monitor"), tail(out, 5)
	})
	if after := serverStarts(); after != before {
		t.Errorf("the server's restarts went from %s to %s: the exporter's restart restarted the server", before, after)
	}
}
