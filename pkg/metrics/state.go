package metrics

import (
	"bufio"
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	listers "github.com/dbcontroller/database-controller/pkg/generated/listers/dbcontroller/v1alpha1"
)

// RegisterDatabaseState exposes each Database's state as the controller
// last wrote it in its status, and the time of its newest completed
// backup: read from the listers when scraped, so it costs nothing between
// scrapes and a deleted Database leaves no series. The labels are bounded
// per Database (namespace, database) and per server (instance, the pod's
// name, which a restart keeps), never per backup or per pod UID.
//
// These series are not in the Registry: Handler writes them as text after
// the Registry's, straight from the listers (stateWriter).
func (m *Metrics) RegisterDatabaseState(dbs listers.DatabaseLister, backups listers.DatabaseBackupLister) {
	m.state = &stateWriter{dbs: dbs, backups: backups, changes: &m.primaryChanges}
}

// PrimaryChanged counts a change of a replicated Database's primary, by a
// failover or a switchover (reconcile.PrimaryChangeObserver).
func (m *Metrics) PrimaryChanged(namespace, database string, failover bool) {
	m.primaryChanges.add(namespace, database, failover)
}

// primaryChanges counts the changes of each Database's primary since the
// controller started; the collector exports those of the Databases that
// exist, and forgets the others.
type primaryChanges struct {
	mu     sync.Mutex
	counts map[changeKey]float64
}

type changeKey struct {
	namespace, database string
	failover            bool
}

func (p *primaryChanges) add(namespace, database string, failover bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts == nil {
		p.counts = map[changeKey]float64{}
	}
	p.counts[changeKey{namespace, database, failover}]++
}

// stateWriter writes the Databases' state in Prometheus' text format
// (version 0.0.4), as kube-state-metrics writes the state of the objects
// it watches: line by line from the listers, with no metric objects made.
// Through the client library, each series was a const metric of some 560
// bytes made, sorted by the registry and encoded at every scrape: at 1,000
// Databases, with the benchmark scraping every second, a third of all the
// bytes the controller allocated (docs/benchmarks.md).
//
// A series' labels are in the order of their names, as the client library
// writes them (a check that matches `database="a",namespace="b"` in the
// text still does); a family's series come in the order of their
// Databases' namespaces, then names, and a family with no series is not
// written. The values are all whole numbers (0 or 1, bytes, counts,
// seconds since the epoch), written as such.
type stateWriter struct {
	dbs     listers.DatabaseLister
	backups listers.DatabaseBackupLister
	changes *primaryChanges
}

// The families, in the order they are written (that of their names).
const (
	readyFamily             = namespace + "_database_ready"
	readyReasonFamily       = namespace + "_database_ready_reason"
	roleFamily              = namespace + "_instance_role"
	streamingFamily         = namespace + "_instance_streaming"
	lastArchivedFamily      = namespace + "_last_archived_wal_timestamp_seconds"
	lastBackupFamily        = namespace + "_last_backup_timestamp_seconds"
	lastFailedArchiveFamily = namespace + "_last_failed_archive_timestamp_seconds"
	lastFailedBackupFamily  = namespace + "_last_failed_backup_timestamp_seconds"
	primaryChangesFamily    = namespace + "_primary_changes_total"
	lagFamily               = namespace + "_replication_lag_bytes"
	tlsNotAfterFamily       = namespace + "_tls_not_after_timestamp_seconds"
)

// writeTo writes every family of the Databases' state to w, and flushes
// it. An error is w's: the first write that failed. (A lister's List of
// everything cannot fail; if it did, there would be no state to write.)
func (s *stateWriter) writeTo(w *bufio.Writer) error {
	dbs, err := s.dbs.List(labels.Everything())
	if err != nil {
		return w.Flush()
	}
	slices.SortFunc(dbs, func(a, b *dbv1alpha1.Database) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	t := &text{w: w}
	eachDB := func(f func(db *dbv1alpha1.Database)) {
		for _, db := range dbs {
			f(db)
		}
	}
	each := func(f func(db *dbv1alpha1.Database, i dbv1alpha1.InstanceStatus)) {
		for _, db := range dbs {
			if rs := db.Status.Replication; rs != nil {
				for _, i := range rs.Instances {
					f(db, i)
				}
			}
		}
	}

	t.family(readyFamily, "gauge", "1 when the Database's Ready condition is True (its servers serve), else 0.", "database", "namespace")
	eachDB(func(db *dbv1alpha1.Database) {
		t.series(bit(meta.IsStatusConditionTrue(db.Status.Conditions, dbv1alpha1.ConditionReady)), db.Name, db.Namespace)
	})
	t.family(readyReasonFamily, "gauge", "1 for each Database, labelled with the reason of its Ready condition: what it waits for or what went wrong (CrashLooping, ImagePullFailed, NoPrimary, ...), or why it is ready.",
		"database", "namespace", "reason")
	eachDB(func(db *dbv1alpha1.Database) {
		if r := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionReady); r != nil && r.Reason != "" {
			t.series(1, db.Name, db.Namespace, r.Reason)
		}
	})
	t.family(roleFamily, "gauge", "1 for each server of a replicated Database, with its role (primary or replica) as the controller last saw it.",
		"database", "instance", "namespace", "role")
	each(func(db *dbv1alpha1.Database, i dbv1alpha1.InstanceStatus) {
		if i.Role != "" {
			t.series(1, db.Name, i.Name, db.Namespace, i.Role)
		}
	})
	t.family(streamingFamily, "gauge", "1 when a replica of a replicated Database receives from the primary, else 0.", "database", "instance", "namespace")
	each(func(db *dbv1alpha1.Database, i dbv1alpha1.InstanceStatus) {
		if i.Role == dbv1alpha1.RoleReplica {
			t.series(bit(i.Streaming), db.Name, i.Name, db.Namespace)
		}
	})
	t.family(lastArchivedFamily, "gauge", "When the Database's primary last archived a WAL file to the object store, in seconds since the epoch.", "database", "namespace")
	eachDB(func(db *dbv1alpha1.Database) {
		if a := db.Status.Archive; a != nil && a.LastArchivedTime != nil {
			t.series(a.LastArchivedTime.Unix(), db.Name, db.Namespace)
		}
	})
	completed, failed := s.newestBackups(dbs)
	t.family(lastBackupFamily, "gauge", "When the Database's newest completed DatabaseBackup completed, in seconds since the epoch.", "database", "namespace")
	eachDB(func(db *dbv1alpha1.Database) {
		if at, ok := completed[types.NamespacedName{Namespace: db.Namespace, Name: db.Name}]; ok {
			t.series(at, db.Name, db.Namespace)
		}
	})
	t.family(lastFailedArchiveFamily, "gauge", "When the Database's primary last failed to archive a WAL file, in seconds since the epoch.", "database", "namespace")
	eachDB(func(db *dbv1alpha1.Database) {
		if a := db.Status.Archive; a != nil && a.LastFailedTime != nil {
			t.series(a.LastFailedTime.Unix(), db.Name, db.Namespace)
		}
	})
	t.family(lastFailedBackupFamily, "gauge", "When the Database's newest failed DatabaseBackup failed, in seconds since the epoch.", "database", "namespace")
	eachDB(func(db *dbv1alpha1.Database) {
		if at, ok := failed[types.NamespacedName{Namespace: db.Namespace, Name: db.Name}]; ok {
			t.series(at, db.Name, db.Namespace)
		}
	})
	t.family(primaryChangesFamily, "counter", "Changes of a replicated Database's primary since the controller started, by kind: failover (the primary was lost) or switchover.",
		"database", "kind", "namespace")
	changes := s.primaryChangeCounts(dbs)
	eachDB(func(db *dbv1alpha1.Database) {
		for _, kind := range []struct {
			failover bool
			name     string
		}{{true, "failover"}, {false, "switchover"}} {
			if n, ok := changes[changeKey{db.Namespace, db.Name, kind.failover}]; ok {
				t.series(n, db.Name, kind.name, db.Namespace)
			}
		}
	})
	t.family(lagFamily, "gauge", "Bytes of WAL the primary wrote that a streaming PostgreSQL replica has not replayed yet, as the controller last measured (MySQL's replicas report none).",
		"database", "instance", "namespace")
	each(func(db *dbv1alpha1.Database, i dbv1alpha1.InstanceStatus) {
		if i.Role == dbv1alpha1.RoleReplica && i.LagBytes != nil {
			t.series(*i.LagBytes, db.Name, i.Name, db.Namespace)
		}
	})
	t.family(tlsNotAfterFamily, "gauge", `When the Database's TLS certificate (certificate="server") or its authority (certificate="authority") expires, in seconds since the epoch.`,
		"certificate", "database", "namespace")
	eachDB(func(db *dbv1alpha1.Database) {
		if tls := db.Status.TLS; tls != nil && tls.NotAfter != nil {
			t.series(tls.NotAfter.Unix(), "server", db.Name, db.Namespace)
		}
		if tls := db.Status.TLS; tls != nil && tls.AuthorityNotAfter != nil {
			t.series(tls.AuthorityNotAfter.Unix(), "authority", db.Name, db.Namespace)
		}
	})
	return w.Flush()
}

// primaryChangeCounts returns the counts of the changes of the primary of
// each Database of dbs, and forgets those of the Databases that are gone.
func (s *stateWriter) primaryChangeCounts(dbs []*dbv1alpha1.Database) map[changeKey]int64 {
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	if len(s.changes.counts) == 0 {
		return nil
	}
	exists := make(map[types.NamespacedName]bool, len(dbs))
	for _, db := range dbs {
		exists[types.NamespacedName{Namespace: db.Namespace, Name: db.Name}] = true
	}
	counts := make(map[changeKey]int64, len(s.changes.counts))
	for k, n := range s.changes.counts {
		if !exists[types.NamespacedName{Namespace: k.namespace, Name: k.database}] {
			delete(s.changes.counts, k) // deleted: its series goes
			continue
		}
		counts[k] = int64(n)
	}
	return counts
}

// newestBackups returns, by Database, when its newest completed backup
// completed and when its newest failed one failed, in seconds since the
// epoch. The backups of a Database that is gone are no Database's state:
// the writer asks only for the Databases of the lister.
func (s *stateWriter) newestBackups(dbs []*dbv1alpha1.Database) (completed, failed map[types.NamespacedName]int64) {
	completed, failed = map[types.NamespacedName]int64{}, map[types.NamespacedName]int64{}
	if len(dbs) == 0 {
		return completed, failed
	}
	backups, err := s.backups.List(labels.Everything())
	if err != nil {
		return completed, failed
	}
	for _, b := range backups {
		of := completed
		switch b.Status.Phase {
		case dbv1alpha1.BackupCompleted:
		case dbv1alpha1.BackupFailed:
			of = failed
		default:
			continue
		}
		if b.Status.CompletionTime == nil {
			continue
		}
		k := types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.Database}
		if at := b.Status.CompletionTime.Unix(); at > of[k] {
			of[k] = at
		}
	}
	return completed, failed
}

func bit(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// text writes one family after another in Prometheus' text format: a
// family's HELP and TYPE lines come with its first series, so that a
// family with none is not written.
type text struct {
	w               *bufio.Writer
	name, typ, help string
	labels          []string
	started         bool
	number          [20]byte // room for an int64
}

// family starts the family name, of type typ, whose series have the
// labels given, in this order.
func (t *text) family(name, typ, help string, labels ...string) {
	t.name, t.typ, t.help, t.labels, t.started = name, typ, help, labels, false
}

// series writes a series of the family: its labels' values, in the
// family's order, and its value.
func (t *text) series(value int64, labelValues ...string) {
	w := t.w
	if !t.started {
		t.started = true
		w.WriteString("# HELP ")
		w.WriteString(t.name)
		w.WriteByte(' ')
		writeEscaped(w, t.help, false)
		w.WriteString("\n# TYPE ")
		w.WriteString(t.name)
		w.WriteByte(' ')
		w.WriteString(t.typ)
		w.WriteByte('\n')
	}
	w.WriteString(t.name)
	w.WriteByte('{')
	for i, l := range t.labels {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString(l)
		w.WriteString(`="`)
		writeEscaped(w, labelValues[i], true)
		w.WriteByte('"')
	}
	w.WriteString("} ")
	w.Write(strconv.AppendInt(t.number[:0], value, 10))
	w.WriteByte('\n')
}

// writeEscaped writes s escaped as the text format wants a HELP text (a
// backslash and a line feed) or, quoted, a label's value (a double quote
// too).
func writeEscaped(w *bufio.Writer, s string, quoted bool) {
	special := "\\\n"
	if quoted {
		special = "\\\n\""
	}
	for {
		i := strings.IndexAny(s, special)
		if i < 0 {
			w.WriteString(s)
			return
		}
		w.WriteString(s[:i])
		switch s[i] {
		case '\\':
			w.WriteString(`\\`)
		case '\n':
			w.WriteString(`\n`)
		case '"':
			w.WriteString(`\"`)
		}
		s = s[i+1:]
	}
}
