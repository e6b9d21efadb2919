//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// kwok completes the Jobs' pods without running them: these tests follow
// the orchestration (phases, retention, finalizers), not the data; the
// real node's suite backs up and restores real rows.

func listBackups(t testing.TB, ns string) []dbv1alpha1.DatabaseBackup {
	t.Helper()
	var list dbv1alpha1.DatabaseBackupList
	e2eutil.GetJSON(t, &list, "-n", ns, "get", "databasebackups")
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

func backupYAML(name, database string) string {
	return `apiVersion: dbcontroller.io/v1alpha1
kind: DatabaseBackup
metadata:
  name: ` + name + `
spec:
  database: ` + database + "\n"
}

func waitBackupPhase(t testing.TB, ns, name string, phase dbv1alpha1.BackupPhase, timeout time.Duration) *dbv1alpha1.DatabaseBackup {
	t.Helper()
	var b *dbv1alpha1.DatabaseBackup
	e2eutil.Eventually(t, timeout, "DatabaseBackup "+name+" to be "+string(phase), func() (bool, string) {
		b = e2eutil.GetBackup(t, ns, name)
		return b.Status.Phase == phase, "phase " + string(b.Status.Phase) + ": " + b.Status.Message
	})
	return b
}

// An on-demand backup runs as a Job on the backup volume, and is listed by
// kubectl get dbbackup; deleting it deletes its file first, with a Job.
func TestOnDemandBackup(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	c := startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("orders", "postgresql", "16", 1, ""))
	e2eutil.WaitRunning(t, ns, "orders", converge)
	perDatabase := `database="orders",namespace="` + ns + `"`
	// The metrics are read from the controller's cache, which sees the
	// Database Running a moment after the API server does.
	e2eutil.Eventually(t, converge, "before a backup: no last_backup_timestamp_seconds, database_ready 1", func() (bool, string) {
		m := c.metrics()
		last, ready := sum(m, "database_controller_last_backup_timestamp_seconds", perDatabase), sum(m, "database_controller_database_ready", perDatabase)
		return last == 0 && ready == 1, fmt.Sprintf("last_backup_timestamp_seconds %v, database_ready %v", last, ready)
	})
	e2eutil.KubectlIn(t, backupYAML("now", "orders"), "-n", ns, "create", "-f", "-")

	b := waitBackupPhase(t, ns, "now", dbv1alpha1.BackupCompleted, converge)
	// The controller's metrics say when the Database's newest backup
	// completed, and when its certificate and authority expire.
	// They are read from its cache when scraped, which shows the backup's
	// completion a moment after the API server does.
	if b.Status.CompletionTime == nil {
		t.Fatalf("a Completed backup with no completion time: %+v", b.Status)
	}
	e2eutil.Eventually(t, converge, "last_backup_timestamp_seconds at the backup's completion", func() (bool, string) {
		got := sum(c.metrics(), "database_controller_last_backup_timestamp_seconds", perDatabase)
		return got == float64(b.Status.CompletionTime.Unix()), fmt.Sprintf("%v, want %v", got, b.Status.CompletionTime.Unix())
	})
	db := e2eutil.GetDB(t, ns, "orders")
	m := c.metrics()
	if tls := db.Status.TLS; tls == nil || tls.NotAfter == nil || tls.AuthorityNotAfter == nil ||
		sum(m, "database_controller_tls_not_after_timestamp_seconds", perDatabase, `certificate="server"`) != float64(tls.NotAfter.Unix()) ||
		sum(m, "database_controller_tls_not_after_timestamp_seconds", perDatabase, `certificate="authority"`) != float64(tls.AuthorityNotAfter.Unix()) {
		t.Errorf("tls_not_after_timestamp_seconds: server %v, authority %v; status.tls %+v",
			sum(m, "database_controller_tls_not_after_timestamp_seconds", perDatabase, `certificate="server"`),
			sum(m, "database_controller_tls_not_after_timestamp_seconds", perDatabase, `certificate="authority"`), db.Status.TLS)
	}
	if b.Status.Engine != "postgresql" || b.Status.Version != "16" || b.Status.Volume != "orders-backups" ||
		b.Status.Path != "now.pgdump" || b.Status.StartTime == nil || b.Status.CompletionTime == nil || b.Status.Image != "postgres:16" {
		t.Errorf("status %+v", b.Status)
	}
	var job batchv1.Job
	e2eutil.GetJSON(t, &job, "-n", ns, "get", "job", "now")
	if c := job.Spec.Template.Spec.Containers[0]; c.Image != "postgres:16" || !strings.Contains(strings.Join(c.Command, " "), "pg_dump") {
		t.Errorf("backup Job runs %s %v", c.Image, c.Command)
	}
	var claim corev1.PersistentVolumeClaim
	e2eutil.GetJSON(t, &claim, "-n", ns, "get", "pvc", "orders-backups")
	if len(claim.OwnerReferences) != 0 {
		t.Errorf("the backup volume has owners %v: it must outlive the Database", claim.OwnerReferences)
	}
	if out := e2eutil.Kubectl(t, "-n", ns, "get", "dbbackup"); !strings.Contains(out, "now") || !strings.Contains(out, "Completed") {
		t.Errorf("kubectl get dbbackup:\n%s", out)
	}

	e2eutil.Kubectl(t, "-n", ns, "delete", "dbbackup", "now", "--wait=false")
	// The delete Job is read while it exists: once the DatabaseBackup has
	// gone, the garbage collector deletes it, its owner's Job, at any time.
	var del *batchv1.Job
	e2eutil.Eventually(t, converge, "the DatabaseBackup to go, after its file", func() (bool, string) {
		if del == nil {
			var job batchv1.Job
			if out, err := e2eutil.KubectlRun("", "-n", ns, "get", "job", "now-delete", "-o", "json"); err == nil && json.Unmarshal(out, &job) == nil {
				del = &job
			}
		}
		_, err := e2eutil.KubectlRun("", "-n", ns, "get", "dbbackup", "now")
		return err != nil, "still there"
	})
	if del == nil {
		t.Fatal("the DatabaseBackup went, and no delete Job now-delete was seen while it existed")
	}
	if cmd := strings.Join(del.Spec.Template.Spec.Containers[0].Command, " "); !strings.Contains(cmd, "now.pgdump") {
		t.Errorf("the delete Job runs %q, not a delete of now.pgdump", cmd)
	}
	// With no completed backup left, the series goes.
	e2eutil.Eventually(t, converge, "no last_backup_timestamp_seconds", func() (bool, string) {
		got := sum(c.metrics(), "database_controller_last_backup_timestamp_seconds", perDatabase)
		return got == 0, fmt.Sprint(got)
	})
	c.expectNoFailedSyncs()
}

// Scheduled backups are made on the schedule and pruned to the retention;
// the on-demand one is never pruned.
func TestScheduledBackupsAndRetention(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	c := startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("ticks", "mysql", "8.4", 1, "  backup:\n    schedule: \"* * * * *\"\n    retention: 1\n"))
	e2eutil.WaitRunning(t, ns, "ticks", converge)
	e2eutil.KubectlIn(t, backupYAML("keep-me", "ticks"), "-n", ns, "create", "-f", "-")

	seen := map[string]bool{}
	e2eutil.Eventually(t, 4*time.Minute, "two scheduled backups, the older pruned", func() (bool, string) {
		var scheduled []string
		for _, b := range listBackups(t, ns) {
			if b.Labels[dbv1alpha1.LabelBackupTrigger] == dbv1alpha1.BackupTriggerSchedule {
				seen[b.Name] = true
				scheduled = append(scheduled, b.Name+"="+string(b.Status.Phase))
			}
		}
		return len(seen) >= 2 && len(scheduled) == 1 && strings.HasSuffix(scheduled[0], "=Completed"),
			"seen " + strings.Join(keys(seen), ",") + "; now " + strings.Join(scheduled, ",")
	})
	if b := e2eutil.GetBackup(t, ns, "keep-me"); b.Status.Phase != dbv1alpha1.BackupCompleted {
		t.Errorf("on-demand backup %s", b.Status.Phase)
	}
	db := e2eutil.GetDB(t, ns, "ticks")
	if s, r, m := e2eutil.Condition(db, "Backup"); s != "True" || r != "BackupsReady" {
		t.Errorf("Backup condition %s %s %q", s, r, m)
	}
	if db.Status.LastScheduleTime == nil {
		t.Error("no status.lastScheduleTime")
	}
	// Three backups started, finished, one pruned: each start's status
	// was written from a cache behind the finalizer's patch, and refused,
	// until the runner wrote over the patch's answer and waited for the
	// cache to show its writes.
	c.expectNoFailedSyncs()
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Deleting a Database with backups takes a final backup first, and keeps
// the credentials under Retain; a Database made again with the same name
// adopts them, password and all.
func TestFinalBackupAndRetainedCredentials(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("last", "postgresql", "16", 1, "  backup: {}\n"))
	db := e2eutil.WaitRunning(t, ns, "last", converge)
	password := secretData(t, ns, "last-credentials", "password")

	e2eutil.Kubectl(t, "-n", ns, "delete", "db", "last", "--wait=false")
	final := "last-final-" + string(db.UID)[:8]
	var phases []string
	e2eutil.Eventually(t, converge, "the Database to go after its final backup", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "get", "db", "last", "-o", "jsonpath={.status.phase}")
		if err != nil {
			return true, ""
		}
		if p := strings.TrimSpace(string(out)); len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
		return false, "phases " + strings.Join(phases, " → ")
	})
	if !strings.Contains(strings.Join(phases, " "), "Terminating") {
		t.Errorf("phases seen %v, want Terminating among them", phases)
	}
	b := e2eutil.GetBackup(t, ns, final)
	if b.Status.Phase != dbv1alpha1.BackupCompleted || b.Labels[dbv1alpha1.LabelBackupTrigger] != dbv1alpha1.BackupTriggerFinal {
		t.Errorf("final backup %s: phase %s labels %v", final, b.Status.Phase, b.Labels)
	}
	var secret corev1.Secret
	e2eutil.GetJSON(t, &secret, "-n", ns, "get", "secret", "last-credentials")
	if len(secret.OwnerReferences) != 0 || secret.Labels["app.kubernetes.io/instance"] != "last" {
		t.Errorf("kept Secret: owners %v labels %v", secret.OwnerReferences, secret.Labels)
	}

	createDB(t, ns, dbYAML("last", "postgresql", "16", 1, "  backup: {}\n"))
	again := e2eutil.WaitRunning(t, ns, "last", converge)
	e2eutil.GetJSON(t, &secret, "-n", ns, "get", "secret", "last-credentials")
	if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != again.UID {
		t.Errorf("the Secret was not adopted: owners %v", secret.OwnerReferences)
	}
	if got := secretData(t, ns, "last-credentials", "password"); got != password {
		t.Error("the Database made again has a new password; it must keep the one the data was made with")
	}
	waitEvent(t, ns, "last", "Normal Adopted", converge)
}

// A namespace deletion completes, with Databases that hold finalizers for
// a final backup: that backup is skipped (the namespace takes the volumes).
func TestNamespaceDeletionCompletes(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("doomed", "postgresql", "16", 1, "  backup:\n    schedule: \"0 3 * * *\"\n"))
	e2eutil.WaitRunning(t, ns, "doomed", converge)
	e2eutil.KubectlIn(t, backupYAML("mine", "doomed"), "-n", ns, "create", "-f", "-")
	waitBackupPhase(t, ns, "mine", dbv1alpha1.BackupCompleted, converge)

	e2eutil.Kubectl(t, "delete", "namespace", ns, "--wait=false")
	e2eutil.Eventually(t, 3*time.Minute, "namespace "+ns+" to be gone", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "get", "namespace", ns, "-o", "json")
		if err != nil {
			return true, ""
		}
		var n corev1.Namespace
		_ = json.Unmarshal(out, &n)
		var why []string
		for _, c := range n.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				why = append(why, string(c.Type)+": "+c.Message)
			}
		}
		return false, strings.Join(why, "; ")
	})
}

func secretData(t testing.TB, ns, name, key string) string {
	t.Helper()
	var s corev1.Secret
	e2eutil.GetJSON(t, &s, "-n", ns, "get", "secret", name)
	return string(s.Data[key])
}

// Deleting a namespace with ten Databases in it is no error: the
// controller does not try to make again what the namespace deletion
// removes, logs no error line and emits no Warning event while they go.
func TestNamespaceDeletionIsQuiet(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	p := startController(t, controllerOptions{namespace: ns})
	engines := []struct{ engine, version, extra string }{
		{"postgresql", "16", ""},
		{"mysql", "8.4", ""},
		{"postgresql", "16", "  backup:\n    schedule: \"0 3 * * *\"\n"},
		{"mysql", "8.4", "  deletionPolicy: Delete\n"},
		{"mongodb", "7.0", ""},
	}
	var names []string
	for i := range 10 {
		e := engines[i%len(engines)]
		name := fmt.Sprintf("quiet-%d", i)
		createDB(t, ns, dbYAML(name, e.engine, e.version, 1, e.extra))
		names = append(names, name)
	}
	for _, name := range names {
		e2eutil.WaitRunning(t, ns, name, converge)
	}
	before, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}

	e2eutil.Kubectl(t, "delete", "namespace", ns, "--wait=false")
	e2eutil.Eventually(t, 3*time.Minute, "namespace "+ns+" to be gone", func() (bool, string) {
		_, err := e2eutil.KubectlRun("", "get", "namespace", ns)
		return err != nil, "still there"
	})
	// What the controller was still doing as the last objects went.
	time.Sleep(3 * time.Second)
	after, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	var noise []string
	for _, line := range strings.Split(string(after[len(before):]), "\n") {
		// klog's error lines start with E; the recorder logs each event it
		// emits, Warnings with type="Warning".
		if strings.HasPrefix(line, "E") || strings.Contains(line, `type="Warning"`) || strings.Contains(line, "Error syncing") {
			noise = append(noise, line)
		}
	}
	if len(noise) > 0 {
		t.Errorf("while namespace %s went, the controller logged %d error or Warning lines:\n%s", ns, len(noise), strings.Join(noise, "\n"))
	}
}
