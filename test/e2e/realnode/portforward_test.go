//go:build e2e

package realnode

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// unrouted makes the pods of one Database unreachable from the host, where
// the suite's controller runs, as pods are from outside a cloud cluster:
// a rule in the node's network namespace answers the host's packets to
// their server port "no route to host" (the node forwards the host's
// traffic to its pods). The kubelet's port-forward, which connects inside
// each pod, and the other pods are not stopped. It follows the pods'
// addresses as pods come and go, every 200 ms, until stop; the node's
// network namespace goes with the node, rules and all.
type unrouted struct {
	netns, veth, port string
	mu                sync.Mutex
	rules             map[string]bool
	stopped           chan struct{}
	done              sync.WaitGroup
}

func unroute(t *testing.T, ns, db, port string) *unrouted {
	// hack/lib/node.sh's names of the node's network namespace and of
	// its end of the host's veth.
	id := fmt.Sprintf("%x", sha256.Sum256([]byte(localDir)))[:8]
	u := &unrouted{netns: filepath.Join("/run/netns", "dbc-"+id), veth: "dbc" + id + "n", port: port, rules: map[string]bool{}, stopped: make(chan struct{})}
	u.done.Add(1)
	go func() {
		defer u.done.Done()
		for {
			out, err := e2eutil.KubectlRun("", "-n", ns, "get", "pods", "-l", "app.kubernetes.io/instance="+db, "-o", "jsonpath={.items[*].status.podIP}")
			if err == nil {
				u.follow(t, strings.Fields(string(out)))
			}
			select {
			case <-u.stopped:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(u.stop)
	return u
}

func (u *unrouted) iptables(op, ip string) error {
	out, err := exec.Command("nsenter", "--net="+u.netns, "--", "iptables", op, "FORWARD", "-i", u.veth, "-d", ip, "-p", "tcp", "--dport", u.port,
		"-j", "REJECT", "--reject-with", "icmp-host-unreachable").CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s for %s: %v: %s", op, ip, err, out)
	}
	return nil
}

// follow keeps a rule for each of ips and for no other address: another
// test's pod may take an address once this Database's pod left it.
func (u *unrouted) follow(t *testing.T, ips []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	want := map[string]bool{}
	for _, ip := range ips {
		want[ip] = true
		if !u.rules[ip] {
			if err := u.iptables("-I", ip); err != nil {
				t.Errorf("%v", err)
				continue
			}
			u.rules[ip] = true
		}
	}
	for ip := range u.rules {
		if !want[ip] {
			if err := u.iptables("-D", ip); err != nil {
				t.Errorf("%v", err)
			}
			delete(u.rules, ip)
		}
	}
}

func (u *unrouted) stop() {
	select {
	case <-u.stopped:
		return
	default:
	}
	close(u.stopped)
	u.done.Wait()
	u.mu.Lock()
	defer u.mu.Unlock()
	for ip := range u.rules {
		_ = u.iptables("-D", ip)
		delete(u.rules, ip)
	}
}

// A 3-replica PostgreSQL Database whose pods' addresses are not routed
// from where the controller runs (its default --server-access, auto, on
// the host, as out of a cloud cluster): the controller reaches the servers
// through the API server's port-forward, and the Database becomes Running
// with its replicas streaming; the primary's pod is deleted under a writer,
// and the failover goes through the tunnels too, no acknowledged write
// lost. Then every tunnel the controller holds dies without breaking (a
// black hole on the host), and the new primary's pod is deleted: the
// failover goes through new tunnels. The failover delay is 0, as
// TestReplicationFailoverAndSwitchover's, whose writer's outage is the
// direct path's figure. A 3-replica MariaDB Database and a 3-replica
// Oracle MySQL one beside it, unrouted too, become Running and fail over
// the same way. (The connections counted are the suite's controller's, for
// every test: those through the API server are this test's alone.)
func TestServersReachedThroughTheAPIServer(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	before := dialsByPath(t)
	known := controllerConnections(t)
	u := unroute(t, ns, "tunnel", "5432")
	mu := unroute(t, ns, "mtunnel", "3306")
	ou := unroute(t, ns, "otunnel", "3306")
	start := time.Now()
	e2eutil.KubectlIn(t, dbYAML("tunnel", "postgresql", "15", postgresImage, 3)+"  replication:\n    failoverDelaySeconds: 0\n", "-n", ns, "create", "-f", "-")
	e2eutil.KubectlIn(t, mysqlYAML("mtunnel", "10.11", mariadbImage, 3)+"  replication:\n    failoverDelaySeconds: 0\n", "-n", ns, "create", "-f", "-")
	e2eutil.KubectlIn(t, mysqlYAML("otunnel", "9.7", mysqlImage, 3)+"  replication:\n    failoverDelaySeconds: 0\n", "-n", ns, "create", "-f", "-")
	db := waitReplicating(t, ns, "tunnel", "three replicas, one primary and two streaming, reached through the API server")
	t.Logf("Running and replicating through the API server after %s; primary %s", time.Since(start).Round(time.Second), db.Status.Replication.Primary)

	// The pods are not reachable from here directly: the rule holds.
	ip := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pod", db.Status.Replication.Primary, "-o", "jsonpath={.status.podIP}"))
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "5432"), 3*time.Second); err == nil {
		c.Close()
		t.Fatalf("the primary's address %s answers from the host: the test proves nothing", ip)
	} else if !errors.Is(err, syscall.EHOSTUNREACH) {
		t.Errorf("a direct dial of the primary %s: %v, want no route to host", ip, err)
	}
	after := dialsByPath(t)
	t.Logf("the controller's connections since the test began: %s", after.since(before))
	if after["port-forward/success"] <= before["port-forward/success"] {
		t.Errorf("no connection through the API server counted: %s", after.since(before))
	}
	if m, err := e2eutil.ScrapeMetrics(metricsAddress); err != nil || e2eutil.SumMetric(m, "database_controller_server_tunnels") < 1 {
		t.Errorf("tunnels open: %v (%v), want at least one", e2eutil.SumMetric(m, "database_controller_server_tunnels"), err)
	}

	// Failover through the tunnels: the primary's pod is deleted while a
	// client writes.
	runClient(t, ns, "tunnel", postgresImage, psql+`-c "CREATE TABLE w (n int PRIMARY KEY)"`)
	roles := watchRoles(t, ns, "tunnel")
	defer roles.finish(t)
	writer := startWriter(t, ns, "tunnel", writerBound)
	writer.waitAcknowledged(t, 3)
	killed := deletePrimary(t, ns, "tunnel", db.Status.Replication.Primary)
	parseWrites(t, writer.finish(t, 20)).across(t, ns, "tunnel", "the failover through the API server", killed)

	// Dead tunnels: every tunnel the controller holds now becomes a black
	// hole (its packets dropped both ways, the connection left open, as a
	// NAT or a proxy that forgot it), then the primary's pod is deleted
	// again. The failover opens new tunnels: each dial waits 1 s for its
	// streams on a dead one (podnet's StreamTimeout), then goes through a
	// new one.
	holes := blackHoleConnections(t, known)
	dead := dialsByPath(t)
	primary := e2eutil.GetDB(t, ns, "tunnel").Status.Replication.Primary
	deletePrimary(t, ns, "tunnel", primary)
	holes.remove(t)
	made := dialsByPath(t)
	t.Logf("since the tunnels went dead: %s", made.since(dead))
	if made["tunnels made"]-dead["tunnels made"] < 1 {
		t.Errorf("no tunnel made after the %d tunnels went dead", len(holes.ports))
	}

	// MariaDB's replication the same way: Running through the API server,
	// and a failover.
	mdb := waitReplicating(t, ns, "mtunnel", "three MariaDB servers, one primary and two replicating, reached through the API server")
	t.Logf("MariaDB: Running and replicating through the API server %s after it was created", time.Since(start).Round(time.Second))
	deletePrimary(t, ns, "mtunnel", mdb.Status.Replication.Primary)

	// And Oracle MySQL's.
	odb := waitReplicating(t, ns, "otunnel", "three Oracle MySQL servers, one primary and two replicating, reached through the API server")
	t.Logf("Oracle MySQL: Running and replicating through the API server %s after it was created", time.Since(start).Round(time.Second))
	deletePrimary(t, ns, "otunnel", odb.Status.Replication.Primary)

	// A steady minute: what the three Databases cost the API server once
	// they only run (each server polled every 10 s, the credentials
	// checked every 30 s), still unrouted.
	steady := dialsByPath(t)
	time.Sleep(time.Minute)
	quiet := dialsByPath(t)
	t.Logf("a steady minute, per Database: %.1f upgrade requests, %.1f connections and %.0f bytes through the API server (%s)",
		(quiet["tunnels made"]-steady["tunnels made"])/3, (quiet["port-forward/success"]-steady["port-forward/success"])/3,
		(quiet["tunnel bytes"]-steady["tunnel bytes"])/3, quiet.since(steady))
	u.stop()
	mu.stop()
	ou.stop()
	after = dialsByPath(t)
	t.Logf("the controller's connections since the test began: %s", after.since(before))
	// What the tunnels cost the API server, per replicated Database, over
	// the whole test: the upgrade requests, and the bytes it relays.
	minutes := time.Since(start).Minutes()
	t.Logf("through the API server, per Database and minute: %.1f upgrade requests, %.0f bytes (%.1f min, three Databases of three servers)",
		(after["tunnels made"]-before["tunnels made"])/3/minutes, (after["tunnel bytes"]-before["tunnel bytes"])/3/minutes, minutes)
}

// apiServerPort is the port of the suite's API server, from its
// kubeconfig.
func apiServerPort(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(localDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`server: https://[^:]+:(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no server in %s", filepath.Join(localDir, "kubeconfig"))
	}
	return string(m[1])
}

// controllerConnections are the local ports of the suite's controller's
// TCP connections to the API server (ss(8)).
func controllerConnections(t *testing.T) map[string]bool {
	t.Helper()
	controller.mu.Lock()
	pid := controller.cmd.Process.Pid
	controller.mu.Unlock()
	api := apiServerPort(t)
	out, err := exec.Command("ss", "-tnpH", "state", "established").CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v: %s", err, out)
	}
	ports := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.Contains(line, fmt.Sprintf("pid=%d,", pid)) {
			continue
		}
		_, local, _ := net.SplitHostPort(f[2])
		if _, peer, _ := net.SplitHostPort(f[3]); peer == api {
			ports[local] = true
		}
	}
	return ports
}

// holes is an nftables table of the host's that drops the packets of some
// of the controller's connections to the API server, both ways (a table of
// its own, removed whole: the host keeps no trace of it).
type holes struct {
	table string
	ports []string
	once  sync.Once
}

// blackHoleConnections drops the packets of the controller's connections
// to the API server made since known was taken (its tunnels: its clients'
// connections were made at its start), until remove, or the test's end.
func blackHoleConnections(t *testing.T, known map[string]bool) *holes {
	t.Helper()
	h := &holes{table: "dbc_e2e_holes_" + fmt.Sprintf("%x", sha256.Sum256([]byte(t.Name())))[:8]}
	for port := range controllerConnections(t) {
		if !known[port] {
			h.ports = append(h.ports, port)
		}
	}
	if len(h.ports) == 0 {
		t.Fatalf("the controller holds no tunnel to make a black hole of")
	}
	api := apiServerPort(t)
	rules := ""
	for _, port := range h.ports {
		rules += fmt.Sprintf("    ip daddr 127.0.0.1 tcp sport %s tcp dport %s drop\n    ip saddr 127.0.0.1 tcp sport %s tcp dport %s drop\n", port, api, api, port)
	}
	t.Cleanup(func() { h.remove(t) })
	nft := exec.Command("nft", "-f", "-")
	nft.Stdin = strings.NewReader(fmt.Sprintf("table ip %s {\n  chain output {\n    type filter hook output priority 0; policy accept;\n%s  }\n}\n", h.table, rules))
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	t.Logf("%d connections of the controller to the API server made a black hole (local ports %v)", len(h.ports), h.ports)
	return h
}

func (h *holes) remove(t *testing.T) {
	h.once.Do(func() {
		if out, err := exec.Command("nft", "delete", "table", "ip", h.table).CombinedOutput(); err != nil {
			t.Errorf("nft: %v: %s", err, out)
		}
	})
}

// deletePrimary deletes the pod of db's primary old, waits for another
// primary, then for old to replicate from it, and logs how long each took;
// it returns when the pod was deleted.
func deletePrimary(t *testing.T, ns, db, old string) time.Time {
	t.Helper()
	killed := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", old, "--wait=false")
	e2eutil.Eventually(t, converge, "a new primary of "+db, func() (bool, string) {
		rs := e2eutil.GetDB(t, ns, db).Status.Replication
		return rs != nil && rs.Primary != old && rs.Primary != "", fmt.Sprintf("%+v", rs)
	})
	t.Logf("%s: deleted the primary %s; %s is the primary %s later, through the API server", db, old, e2eutil.GetDB(t, ns, db).Status.Replication.Primary,
		time.Since(killed).Round(100*time.Millisecond))
	waitReplicating(t, ns, db, "the old primary of "+db+" to come back as a replica")
	t.Logf("%s: %s replicates again %s after the delete", db, old, time.Since(killed).Round(100*time.Millisecond))
	return killed
}

// dials are the controller's connections to the servers, by path and
// result ("port-forward/success"), from its metrics.
type dials map[string]float64

func dialsByPath(t *testing.T) dials {
	t.Helper()
	m, err := e2eutil.ScrapeMetrics(metricsAddress)
	if err != nil {
		t.Fatalf("scraping the controller: %v", err)
	}
	out := dials{}
	for _, path := range []string{"direct", "port-forward"} {
		for _, result := range []string{"success", "error"} {
			out[path+"/"+result] = e2eutil.SumMetric(m, "database_controller_server_dials_total", `path="`+path+`"`, `result="`+result+`"`)
		}
	}
	out["tunnels made"] = e2eutil.SumMetric(m, "database_controller_server_tunnel_connects_total")
	out["tunnel bytes"] = e2eutil.SumMetric(m, "database_controller_server_tunnel_bytes_total")
	return out
}

func (d dials) since(before dials) string {
	var parts []string
	for _, k := range []string{"direct/success", "direct/error", "port-forward/success", "port-forward/error", "tunnels made", "tunnel bytes"} {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, d[k]-before[k]))
	}
	return strings.Join(parts, ", ")
}
