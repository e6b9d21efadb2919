//go:build e2e

package realnode

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// postgres17Image is PostgreSQL 17 from Debian trixie (hack/images/names.sh).
const postgres17Image = "localhost/dbc/postgresql:17"

// seedForUpgrade writes 100,000 rows that use three extensions the Debian
// packages include (hstore, pgcrypto, pg_trgm and its index), and the table
// w of the writer.
const seedForUpgrade = psql + `-c "CREATE EXTENSION hstore" -c "CREATE EXTENSION pgcrypto" -c "CREATE EXTENSION pg_trgm" \
  -c "CREATE TABLE items (id bigserial PRIMARY KEY, v text, h hstore, d bytea)" \
  -c "INSERT INTO items (v, h, d) SELECT md5(i::text), hstore('k', i::text), digest(i::text, 'sha256') FROM generate_series(1, 100000) i" \
  -c "CREATE INDEX items_v ON items USING gin (v gin_trgm_ops)" -c "CREATE TABLE w (n int PRIMARY KEY)"`

// fingerprint reads what must be the same after an upgrade: the rows'
// digest, the sequence, a search through the trigram index, and the
// extensions.
const fingerprint = psql + `-c "SELECT count(*) || ' ' || md5(string_agg(id || v || h::text || encode(d, 'hex'), ',' ORDER BY id)) FROM items" \
  -c "SELECT last_value FROM items_id_seq" \
  -c "SET enable_seqscan = off" -c "SELECT count(*) FROM items WHERE v LIKE '%abc%'" \
  -c "SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension"`

// setVersion sets spec.version and spec.image of the Database name, as a
// user asks for an upgrade.
func setVersion(t *testing.T, ns, name, version, image string) {
	t.Helper()
	e2eutil.Kubectl(t, "-n", ns, "patch", "db", name, "--type=merge", "-p",
		fmt.Sprintf(`{"spec":{"version":%q,"image":%q}}`, version, image))
}

// serverMajor reads the server's major version.
const serverMajor = psql + `-c "SELECT current_setting('server_version_num')::int / 10000"`

// A single PostgreSQL 15 server, with 100,000 rows and extensions' objects,
// is upgraded in place to 17 when spec.version says so, while a client
// writes: a backup first, then pg_upgrade with the server stopped, then 17
// serves the same rows with the same credentials, and every acknowledged
// write is there. The seconds writes failed are reported against a dump
// and restore of the same data.
func TestPostgreSQLMajorUpgradeInPlace(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("up", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "up", converge)
	runClient(t, ns, "up", postgresImage, seedForUpgrade)
	before := runClient(t, ns, "up", postgresImage, fingerprint)
	password := secretValue(t, ns, "up", "password")

	writer := startWriter(t, ns, "up", writerBound)
	writer.waitAcknowledged(t, 20)
	stop := make(chan struct{})
	states := watchStates(t, ns, "up", stop)
	asked := time.Now()
	setVersion(t, ns, "up", "17", postgres17Image)
	var phases []dbv1alpha1.MajorUpgradePhase
	e2eutil.Eventually(t, 3*converge, "PostgreSQL 17 Running, the upgrade ended", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "up")
		if u := db.Status.MajorUpgrade; u != nil && (len(phases) == 0 || phases[len(phases)-1] != u.Phase) {
			phases = append(phases, u.Phase)
		}
		running, why := e2eutil.IsRunning(db)
		return running && db.Status.CurrentVersion == "17" && db.Status.MajorUpgrade == nil,
			fmt.Sprintf("%s; currentVersion %s; majorUpgrade %+v", why, db.Status.CurrentVersion, db.Status.MajorUpgrade)
	})
	took := time.Since(asked)
	close(stop)
	t.Logf("upgrade phases seen: %v; Database states: %s", phases, strings.Join(<-states, " → "))
	if want := []dbv1alpha1.MajorUpgradePhase{"BackingUp", "Upgrading", "Analyzing"}; fmt.Sprint(phases) != fmt.Sprint(want) {
		t.Errorf("upgrade phases %v, want %v", phases, want)
	}

	if got := strings.TrimSpace(runClient(t, ns, "up", postgresImage, serverMajor)); got != "17" {
		t.Errorf("server major version after the upgrade = %q, want 17", got)
	}
	if after := runClient(t, ns, "up", postgresImage, fingerprint); after != before {
		t.Errorf("the data changed across the upgrade:\nbefore %s\nafter  %s", before, after)
	}
	if got := secretValue(t, ns, "up", "password"); got != password {
		t.Errorf("the password changed across the upgrade")
	}
	events := strings.Join(dbEvents(t, ns, "up"), "\n")
	for _, want := range []string{"Upgrading the data from postgresql 15 to 17 in place", "Upgraded the data from 15 to 17", "postgresql 17 serves the upgraded data, and Job up-after-upgrade-17 ran after it"} {
		if !strings.Contains(events, want) {
			t.Errorf("no event %q among:\n%s", want, events)
		}
	}
	var backups dbv1alpha1.DatabaseBackupList
	e2eutil.GetJSON(t, &backups, "-n", ns, "get", "dbbackup", "-l", dbv1alpha1.LabelBackupTrigger+"="+dbv1alpha1.BackupTriggerMajorUpgrade)
	if len(backups.Items) != 1 || backups.Items[0].Status.Phase != dbv1alpha1.BackupCompleted || backups.Items[0].Status.Version != "15" {
		t.Errorf("the backup before the upgrade: %+v, want one Completed of version 15", backups.Items)
	}
	if len(backups.Items) == 1 {
		// It restores into a new Database of the old version: the way back.
		e2eutil.KubectlIn(t, dbYAML("back", "postgresql", "15", postgresImage, 1)+"  restore:\n    backup: "+backups.Items[0].Name+"\n", "-n", ns, "create", "-f", "-")
		e2eutil.WaitRunning(t, ns, "back", converge)
		if got := runClient(t, ns, "back", postgresImage, fingerprint); got != before {
			t.Errorf("the backup before the upgrade, restored into PostgreSQL 15:\n got %s\nwant %s", got, before)
		}
	}
	if out, err := e2eutil.KubectlRun("", "-n", ns, "get", "jobs", "-o", "name"); err != nil || strings.Contains(string(out), "upgrade") {
		t.Errorf("the upgrade's Jobs are left: %v %s", err, out)
	}
	// The planner's statistics were rebuilt.
	if got := strings.TrimSpace(runClient(t, ns, "up", postgresImage, psql+`-c "SELECT count(*) FROM pg_stats WHERE tablename = 'items'"`)); got == "0" || got == "" {
		t.Errorf("no statistics of items after the upgrade: %q", got)
	}

	t.Logf("in-place upgrade 15 → 17 of 100,000 rows: %s from the change of spec.version to Running", took.Round(time.Second))
	parseWrites(t, writer.finish(t, 20)).across(t, ns, "up", "the in-place upgrade", asked)

	// What the other way costs: a dump of the same data and its restore
	// into a new database on the same server, the downtime of a move to a
	// new Database (without the time to create it).
	out := runClient(t, ns, "up", postgres17Image, `set -e
export PGPASSWORD="$PASSWORD"
start=$(date +%s.%N)
pg_dump -Fc -d "$URI" -f dump
dumped=$(date +%s.%N)
psql "$URI" -qc "CREATE DATABASE restored"
pg_restore -h "$HOST" -p "$PORT" -U "$USERNAME" -d restored dump
restored=$(date +%s.%N)
awk -v a="$start" -v b="$dumped" -v c="$restored" 'BEGIN { printf "dump %.1f s, restore %.1f s\n", b - a, c - b }'`)
	t.Logf("a dump and restore of the same data: %s", strings.TrimSpace(out))
}

// An upgrade that pg_upgrade refuses (a column of type regproc, whose
// values name system OIDs that an upgrade does not keep) leaves the data
// as it was: PostgreSQL 15 serves it again, with its rows, and the Ready
// condition says why in pg_upgrade's words. Setting spec.version back
// ends the upgrade.
func TestPostgreSQLMajorUpgradeThatFailsKeepsTheData(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("stuck", "postgresql", "15", postgresImage, 1), "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, "stuck", converge)
	rows := psql + `-c "SELECT count(*) || ':' || sum(n) FROM kept"`
	runClient(t, ns, "stuck", postgresImage, psql+`-c "CREATE TABLE kept (n int, f regproc)" -c "INSERT INTO kept SELECT i, 'now' FROM generate_series(1, 1000) i"`)

	setVersion(t, ns, "stuck", "17", postgres17Image)
	var db *dbv1alpha1.Database
	e2eutil.Eventually(t, 3*converge, "the upgrade to fail", func() (bool, string) {
		db = e2eutil.GetDB(t, ns, "stuck")
		u := db.Status.MajorUpgrade
		return u != nil && u.Phase == dbv1alpha1.MajorUpgradeFailed, fmt.Sprintf("majorUpgrade %+v", u)
	})
	msg := db.Status.MajorUpgrade.Message
	t.Logf("status.majorUpgrade.message: %s", msg)
	for _, want := range []string{"pg_upgrade from PostgreSQL 15 to 17 failed", "reg* data types", "public.kept.f", "set spec.version back to 15"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure's message does not say %q: %s", want, msg)
		}
	}
	// PostgreSQL 15 serves the data again, and the condition says why 17 does not.
	e2eutil.Eventually(t, converge, "PostgreSQL 15 to serve again", func() (bool, string) {
		out, err := tryClient(t, ns, "stuck", postgresImage, serverMajor)
		return err == nil && strings.TrimSpace(out) == "15", strings.TrimSpace(out)
	})
	if got := strings.TrimSpace(runClient(t, ns, "stuck", postgresImage, rows)); got != "1000:500500" {
		t.Errorf("rows after the failed upgrade: %q", got)
	}
	db = e2eutil.GetDB(t, ns, "stuck")
	ready := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionReady)
	if db.Status.Phase != dbv1alpha1.PhaseFailed || ready == nil || ready.Reason != "MajorUpgradeFailed" || ready.Message != msg || db.Status.CurrentVersion != "15" {
		t.Errorf("after the failed upgrade: phase %s, Ready %+v, currentVersion %s", db.Status.Phase, ready, db.Status.CurrentVersion)
	}
	if n, _ := warnings(t, ns, "stuck", "MajorUpgradeFailed"); n != 1 {
		t.Errorf("%d Warning events MajorUpgradeFailed, want 1", n)
	}

	setVersion(t, ns, "stuck", "15", postgresImage)
	e2eutil.Eventually(t, converge, "Running on 15, the upgrade ended", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "stuck")
		running, why := e2eutil.IsRunning(db)
		return running && db.Status.MajorUpgrade == nil, fmt.Sprintf("%s; majorUpgrade %+v", why, db.Status.MajorUpgrade)
	})
	if got := strings.TrimSpace(runClient(t, ns, "stuck", postgresImage, rows)); got != "1000:500500" {
		t.Errorf("rows after going back to 15: %q", got)
	}
}

// A replicated PostgreSQL 15 Database, three servers, is upgraded in place
// to 17 while a client writes: the primary's data is upgraded, the
// replicas' data, which 17 cannot follow, is seeded again from it, and the
// three stream from the upgraded primary. No pod is ever labelled primary
// twice, and no acknowledged write is lost.
func TestPostgreSQLMajorUpgradeOfAReplicatedDatabase(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("ring", "postgresql", "15", postgresImage, 3), "-n", ns, "create", "-f", "-")
	waitReplicating(t, ns, "ring", "three replicas, one primary and two streaming")
	runClient(t, ns, "ring", postgresImage, strings.Replace(seedForUpgrade, "generate_series(1, 100000)", "generate_series(1, 20000)", 1))
	before := runClient(t, ns, "ring", postgresImage, fingerprint)
	roles := watchRoles(t, ns, "ring")
	defer roles.finish(t)

	writer := startWriter(t, ns, "ring", writerBound)
	writer.waitAcknowledged(t, 20)
	asked := time.Now()
	setVersion(t, ns, "ring", "17", postgres17Image)
	e2eutil.Eventually(t, 2*converge, "the upgrade to begin", func() (bool, string) {
		u := e2eutil.GetDB(t, ns, "ring").Status.MajorUpgrade
		return u != nil, fmt.Sprintf("majorUpgrade %+v", u)
	})
	db := waitReplicating(t, ns, "ring", "PostgreSQL 17 on three servers, two streaming")
	e2eutil.Eventually(t, 2*converge, "the upgrade to end", func() (bool, string) {
		db = e2eutil.GetDB(t, ns, "ring")
		return db.Status.MajorUpgrade == nil && db.Status.CurrentVersion == "17", fmt.Sprintf("currentVersion %s, majorUpgrade %+v", db.Status.CurrentVersion, db.Status.MajorUpgrade)
	})
	took := time.Since(asked)
	if db.Status.Replication.Primary != "ring-0" {
		t.Errorf("primary after the upgrade: %s, want ring-0", db.Status.Replication.Primary)
	}
	if after := runClient(t, ns, "ring", postgresImage, fingerprint); after != before {
		t.Errorf("the primary's data changed across the upgrade:\nbefore %s\nafter  %s", before, after)
	}
	// Each replica serves 17 and the same rows, read on it.
	for _, pod := range []string{"ring-1", "ring-2"} {
		out := runClient(t, ns, "ring", postgres17Image, fmt.Sprintf(`set -e
export PGPASSWORD="$PASSWORD"
host=%s
for i in $(seq 60); do pg_isready -q -h "$host" && break; sleep 1; done
psql -h "$host" -U "$USERNAME" -d "$DATABASE" -tA -c "SELECT pg_is_in_recovery(), current_setting('server_version_num')::int / 10000" \
  -c "SELECT count(*) || ' ' || md5(string_agg(id || v || h::text || encode(d, 'hex'), ',' ORDER BY id)) FROM items"`, podHost(ns, "ring", pod)))
		first := strings.SplitN(strings.TrimSpace(before), "\n", 2)[0]
		if !strings.Contains(out, "t|17\n") || !strings.Contains(out, first) {
			t.Errorf("replica %s after the upgrade: %s, want in recovery, 17, and %s", pod, out, first)
		}
	}
	events := strings.Join(dbEvents(t, ns, "ring"), "\n")
	if want := "the replicas' data of 15, which 17 cannot follow, is discarded and seeded again from ring-0"; !strings.Contains(events, want) {
		t.Errorf("no event says %q:\n%s", want, events)
	}

	t.Logf("in-place upgrade 15 → 17 of three servers, 20,000 rows: %s from the change of spec.version to the upgrade's end", took.Round(time.Second))
	parseWrites(t, writer.finish(t, 20)).across(t, ns, "ring", "the in-place upgrade of a replicated Database", asked)
}
