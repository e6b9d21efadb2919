//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
	"github.com/dbcontroller/database-controller/pkg/wal"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// archivingYAML is a PostgreSQL Database of replicas that archives its WAL
// to the local object store under prefix, with the keys of the Secret store.
func archivingYAML(name string, replicas int, cfg objectstore.Config, prefix string) string {
	return dbYAML(name, "postgresql", "15", postgresImage, replicas) + fmt.Sprintf(`  backup:
    objectStore:
      endpoint: %s
      bucket: %s
      prefix: %s
      region: %s
      credentialsSecret: {name: store}
    continuous:
      archiveTimeoutSeconds: 10
`, cfg.Endpoint, cfg.Bucket, prefix, cfg.Region)
}

// waitArchiving waits until db's ContinuousArchiving condition has reason
// and, for Archiving, status.archive names a file archived after after.
func waitArchiving(t *testing.T, ns, name, reason string) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	e2eutil.Eventually(t, converge, "ContinuousArchiving "+reason, func() (bool, string) {
		db = e2eutil.GetDB(t, ns, name)
		c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving)
		if c == nil {
			return false, "no condition"
		}
		return c.Reason == reason, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	})
	return db
}

// A PostgreSQL Database archives each WAL file its primary completes to
// the object store, and status.archive and the ContinuousArchiving
// condition say so; a file written to and left partial is completed by
// archive_timeout, even just after the server started. With keys the store refuses, it serves on, and the
// condition says why in the store's words; with the keys mended and the
// server restarted, it archives what it kept, the file that failed first.
// With no Secret at all, the server starts and serves all the same, and the
// condition says what is missing. With the store stopped, it serves on
// and the condition says the store cannot be reached; once the store is
// back, the archive catches up with no file missing. Across a failover, the new primary
// archives its timeline's history file and its files, and restores reach
// past it (archivesAcrossAFailover).
func TestContinuousArchiving(t *testing.T) {
	t.Parallel()
	cfg := e2eutil.LocalObjectStore(t, localDir)
	for _, name := range []string{"archives", "refused, then mended", "no Secret", "across a failover", "the store stopped, then back"} {
		wrongKeys := name == "refused, then mended"
		t.Run(name, func(t *testing.T) {
			parallel(t)
			ns := e2eutil.NewNamespace(t)
			secret := cfg.SecretAccessKey
			if wrongKeys {
				secret = "wrong"
			}
			if name != "no Secret" {
				e2eutil.Kubectl(t, "-n", ns, "create", "secret", "generic", "store",
					"--from-literal=accessKeyID="+cfg.AccessKeyID, "--from-literal=secretAccessKey="+secret)
			}
			prefix := "realnode/" + ns
			if name == "across a failover" {
				archivesAcrossAFailover(t, ns, cfg, prefix)
				return
			}
			if name == "the store stopped, then back" {
				archivesOnceTheStoreIsBack(t, ns, cfg, prefix)
				return
			}
			e2eutil.KubectlIn(t, archivingYAML("ledger", 1, cfg, prefix), "-n", ns, "create", "-f", "-")
			db := e2eutil.WaitRunning(t, ns, "ledger", converge)
			if name == "archives" {
				archivesOnTimeout(t, ns, cfg, prefix, db)
				return
			}
			// Writes, then a file completed at once (as archive_timeout would).
			runClient(t, ns, "ledger", postgresImage, psql+`-c "CREATE TABLE entries AS SELECT g AS n FROM generate_series(1, 10000) g" -c "SELECT pg_switch_wal()"`)

			if name == "no Secret" {
				db = waitArchiving(t, ns, "ledger", "ArchivingFailed")
				c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving)
				if !strings.Contains(c.Message, "no access key id or secret access key") || db.Status.Phase != dbv1alpha1.PhaseRunning {
					t.Errorf("phase %s, condition %q: want Running, and the keys named as missing", db.Status.Phase, c.Message)
				}
				return
			}
			if wrongKeys {
				db = waitArchiving(t, ns, "ledger", "ArchivingFailed")
				c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving)
				t.Logf("refused: %s", c.Message)
				if !strings.Contains(c.Message, "Access Denied") || db.Status.Archive == nil || db.Status.Archive.LastFailedWAL == "" {
					t.Errorf("condition %q, archive %+v: want the store's refusal (Access Denied) and the file that failed", c.Message, db.Status.Archive)
				}
				if db.Status.Phase != dbv1alpha1.PhaseRunning {
					t.Errorf("phase %s while archiving fails, want Running: the server serves", db.Status.Phase)
				}
				failed := db.Status.Archive.LastFailedWAL
				e2eutil.KubectlIn(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"store"},"stringData":{"accessKeyID":%q,"secretAccessKey":%q}}`,
					cfg.AccessKeyID, cfg.SecretAccessKey), "-n", ns, "apply", "-f", "-")
				// The keys are the server's environment: it reads them at its start.
				e2eutil.Kubectl(t, "-n", ns, "delete", "pod", "ledger-0")
				db = waitArchiving(t, ns, "ledger", "Archiving")
				store, err := objectstore.New(withPrefix(cfg, prefix))
				if err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprintf("%s/ledger/%s/wal/%s", ns, db.UID, failed)
				if r, err := store.Get(context.Background(), key); err != nil {
					t.Errorf("the file that failed, %s, is not in the store once the keys are mended: %v", key, err)
				} else {
					r.Close()
				}
			}
		})
	}
}

// archiveBound is how long the test gives a written, partial WAL file to
// reach the store with no WAL switch asked for: archiveTimeoutSeconds (10)
// plus the controller's ArchivePoll (30 s), which wakes a freshly started
// server's checkpointer, with room for a busy machine. A server left to
// itself takes up to checkpoint_timeout (5 minutes) after its start.
const archiveBound = 2 * time.Minute

// archivesOnTimeout writes to a Database that started moments ago and asks
// for no WAL switch: archive_timeout completes the partial file, which
// reaches the store whole (16 MiB) within archiveBound, and status.archive
// names it.
func archivesOnTimeout(t *testing.T, ns string, cfg objectstore.Config, prefix string, db *dbv1alpha1.Database) {
	out := runClient(t, ns, "ledger", postgresImage, psql+`-c "CREATE TABLE entries AS SELECT g AS n FROM generate_series(1, 10000) g" -c "SELECT pg_walfile_name(pg_current_wal_lsn())"`)
	written := time.Now()
	lines := strings.Fields(out)
	if len(lines) == 0 {
		t.Fatalf("no WAL file name in %q", out)
	}
	file := lines[len(lines)-1]
	store, err := objectstore.New(withPrefix(cfg, prefix))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	e2eutil.Eventually(t, archiveBound, file+", written to and not switched, archived whole", func() (bool, string) {
		objects, err := store.List(context.Background(), fmt.Sprintf("%s/ledger/%s/wal", ns, db.UID))
		if err != nil {
			return false, err.Error()
		}
		listed = listed[:0]
		found := false
		for _, o := range objects {
			listed = append(listed, fmt.Sprintf("%s (%d)", o.Key[strings.LastIndex(o.Key, "/")+1:], o.Size))
			found = found || strings.HasSuffix(o.Key, "/wal/"+file) && o.Size == 16<<20
		}
		return found, "the store holds " + strings.Join(listed, ", ")
	})
	t.Logf("%s archived %.0f s after the write; the store holds %s", file, time.Since(written).Seconds(), strings.Join(listed, ", "))
	db = waitArchiving(t, ns, "ledger", "Archiving")
	if a := db.Status.Archive; a == nil || a.LastArchivedWAL < file || a.LastArchivedTime == nil {
		t.Errorf("status.archive %+v, want %s or later archived, with its time", a, file)
	}
}

func withPrefix(cfg objectstore.Config, prefix string) objectstore.Config {
	cfg.Prefix = prefix
	return cfg
}

// archivesAcrossAFailover: a replicated Database that archives takes a base
// backup; a client writes while the primary's pod is deleted, and the
// replica is promoted at once. The new primary archives the history file
// of its timeline and its files, the last rows' file within
// archive_timeout with no switch asked for. New Databases restore from the
// base backup across the change of timeline: to a time after the failover
// and to the latest point, each with exactly the rows the Database held
// then (count and checksum); what a restore misses of the acknowledged
// writes is only what the failover itself lost, which the test reports.
func archivesAcrossAFailover(t *testing.T, ns string, cfg objectstore.Config, prefix string) {
	e2eutil.KubectlIn(t, archivingYAML("ledger", 2, cfg, prefix)+"  replication:\n    failoverDelaySeconds: 0\n", "-n", ns, "create", "-f", "-")
	db := waitReplicating(t, ns, "ledger", "two replicas, one primary and one streaming")
	runClient(t, ns, "ledger", postgresImage, psql+`-c "CREATE TABLE w (n int PRIMARY KEY)"`)
	e2eutil.KubectlIn(t, "apiVersion: dbcontroller.io/v1alpha1\nkind: DatabaseBackup\nmetadata:\n  name: before\nspec:\n  database: ledger\n",
		"-n", ns, "create", "-f", "-")
	waitBackupCompleted(t, ns, "before")

	old := db.Status.Replication.Primary
	writer := startWriter(t, ns, "ledger", writerBound)
	writer.waitAcknowledged(t, 3)
	e2eutil.Kubectl(t, "-n", ns, "delete", "pod", old, "--wait=false")
	e2eutil.Eventually(t, converge, "a replica promoted in place of "+old, func() (bool, string) {
		rs := e2eutil.GetDB(t, ns, "ledger").Status.Replication
		return rs != nil && rs.Primary != "" && rs.Primary != old && rs.TargetPrimary == "", fmt.Sprintf("%+v", rs)
	})
	w := parseWrites(t, writer.finish(t, 20))
	w.report(t, "the primary's pod deleted mid-write", w.lost(t, ns, "ledger"), 20)
	afterFailover := wSum(t, ns, "ledger")

	// A time after the failover, then rows after it; the file that holds
	// them reaches the store by archive_timeout, unasked.
	target := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(target.Add(1500 * time.Millisecond)))
	out := runClient(t, ns, "ledger", postgresImage, psql+`-c "INSERT INTO w SELECT generate_series(1000001, 1000100)" -c "SELECT pg_walfile_name(pg_current_wal_lsn())"`)
	wrote := time.Now()
	last := walFileIn(t, out)
	if !strings.HasPrefix(last, "00000002") {
		t.Fatalf("the new primary writes WAL file %q (psql said %q), want one of timeline 2", last, out)
	}
	latest := wSum(t, ns, "ledger")
	store, err := objectstore.New(withPrefix(cfg, prefix))
	if err != nil {
		t.Fatal(err)
	}
	e2eutil.Eventually(t, archiveBound, "the history file of timeline 2 and the last rows' file "+last+" in the store", func() (bool, string) {
		objects, err := store.List(context.Background(), fmt.Sprintf("%s/ledger/%s/wal", ns, db.UID))
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, o := range objects {
			names = append(names, path.Base(o.Key))
		}
		return slices.Contains(names, "00000002.history") && slices.Contains(names, last), fmt.Sprintf("the store holds %v", names)
	})
	t.Logf("the last rows' file %s archived %s after they were written (archiveTimeoutSeconds 10)", last, time.Since(wrote).Round(time.Second))

	restoreAtOnce(t, ns, "before", false, wSum, []restoreCase{
		{"after-the-failover", fmt.Sprintf("    database: ledger\n    targetTime: %s\n", target.Format(time.RFC3339)), afterFailover},
		{"latest", "    database: ledger\n", latest},
	})
}

// wSum is the count of the Database's table w and a checksum of its rows,
// read through its Secret's URI.
func wSum(t *testing.T, ns, db string) string {
	t.Helper()
	return strings.TrimSpace(runClient(t, ns, db, postgresImage, psql+
		`-c "SELECT count(*) || ' ' || md5(string_agg(n::text, ',' ORDER BY n)) FROM w"`))
}

// archivesOnceTheStoreIsBack: the Database's store is the local one behind
// a proxy of the test's, which it stops, as a store that is down: the
// server serves on, the condition says the store cannot be reached, and
// the server keeps the files it could not archive. Once the store is back,
// the archive catches up: it holds every file from the first to the last
// written, none missing.
func archivesOnceTheStoreIsBack(t *testing.T, ns string, cfg objectstore.Config, prefix string) {
	proxy := startStoreProxy(t, cfg.Endpoint)
	behind := cfg
	behind.Endpoint = proxy.endpoint
	e2eutil.KubectlIn(t, archivingYAML("ledger", 1, behind, prefix), "-n", ns, "create", "-f", "-")
	db := e2eutil.WaitRunning(t, ns, "ledger", converge)
	// Rows, and their file completed at once, as archive_timeout would.
	write := func(rows int) string {
		out := runClient(t, ns, "ledger", postgresImage, psql+fmt.Sprintf(
			`-c "CREATE TABLE IF NOT EXISTS w (n int)" -c "INSERT INTO w SELECT generate_series(1, %d)" -c "SELECT pg_walfile_name(pg_current_wal_lsn())" -c "SELECT pg_switch_wal()"`, rows))
		return walFileIn(t, out)
	}
	write(1000)
	waitArchiving(t, ns, "ledger", "Archiving")

	proxy.stop()
	kept := write(1000)
	db = waitArchiving(t, ns, "ledger", "ArchivingFailed")
	c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionContinuousArchiving)
	t.Logf("the store stopped: %s", c.Message)
	if !strings.Contains(c.Message, "connection refused") || db.Status.Phase != dbv1alpha1.PhaseRunning {
		t.Errorf("phase %s, condition %q: want Running, and the store named as unreachable (connection refused)", db.Status.Phase, c.Message)
	}
	last := write(1000)
	if got := strings.TrimSpace(runClient(t, ns, "ledger", postgresImage, psql+`-c "SELECT count(*) FROM w"`)); got != "3000" {
		t.Errorf("with the store stopped the Database holds %s rows, want 3000: it serves and takes writes", got)
	}

	back := time.Now()
	proxy.start(t)
	store, err := objectstore.New(withPrefix(cfg, fmt.Sprintf("%s/%s/ledger/%s", prefix, ns, db.UID)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	e2eutil.Eventually(t, converge, "the files kept while the store was stopped, "+kept+" to "+last+", archived", func() (bool, string) {
		objects, err := store.List(context.Background(), "wal")
		if err != nil {
			return false, err.Error()
		}
		names = names[:0]
		for _, o := range objects {
			names = append(names, path.Base(o.Key))
		}
		return slices.Contains(names, kept) && slices.Contains(names, last), "the store holds " + strings.Join(names, ", ")
	})
	t.Logf("the store back: %s to %s archived %s later", kept, last, time.Since(back).Round(time.Second))
	// None missing: every segment of timeline 1 up to the last.
	end, _ := wal.ParseSegment(last, wal.DefaultSegmentSize)
	for no := uint64(1); no <= end.No; no++ {
		if name := (wal.Segment{Timeline: 1, No: no}).Name(wal.DefaultSegmentSize); !slices.Contains(names, name) {
			t.Errorf("the archive lacks %s: it holds %v", name, names)
		}
	}
	waitArchiving(t, ns, "ledger", "Archiving")
}

// storeProxy forwards TCP connections from an address the pods reach to
// the local object store, and can be stopped and started again on the
// same address, as a store that goes down and comes back.
type storeProxy struct {
	endpoint, target string
	mu               sync.Mutex
	ln               net.Listener
	conns            map[net.Conn]bool
}

// startStoreProxy listens on a free port of the store's host address.
func startStoreProxy(t *testing.T, storeEndpoint string) *storeProxy {
	u, err := url.Parse(storeEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &storeProxy{target: u.Host, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), "0"))
	if err != nil {
		t.Fatalf("listening beside the store: %v", err)
	}
	p.endpoint = u.Scheme + "://" + ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

// start listens again on the same address.
func (p *storeProxy) start(t *testing.T) {
	ln, err := net.Listen("tcp", strings.TrimPrefix(p.endpoint, "http://"))
	if err != nil {
		t.Fatalf("listening again: %v", err)
	}
	p.serve(ln)
}

func (p *storeProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *storeProxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// stop closes the listener and every connection through it: what a
// client then sees is a refused connection.
func (p *storeProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// walFileIn is the name of the WAL file that psql printed in out (as
// pg_walfile_name's answer); the test fails when out holds none.
func walFileIn(t *testing.T, out string) string {
	t.Helper()
	for _, f := range strings.Fields(out) {
		if _, ok := wal.ParseSegment(f, wal.DefaultSegmentSize); ok {
			return f
		}
	}
	t.Fatalf("no WAL file name in %q", out)
	return ""
}
