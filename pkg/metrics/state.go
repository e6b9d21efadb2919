package metrics

import (
	"cmp"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
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
func (m *Metrics) RegisterDatabaseState(dbs listers.DatabaseLister, backups listers.DatabaseBackupLister) {
	m.Registry.MustRegister(newStateCollector(dbs, backups, &m.primaryChanges))
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

type stateCollector struct {
	dbs     listers.DatabaseLister
	backups listers.DatabaseBackupLister
	changes *primaryChanges

	ready, readyReason, role, streaming, lag, lastBackup, lastFailedBackup, lastArchived, lastFailedArchive, tlsNotAfter, primaryChanged *prometheus.Desc
}

func newStateCollector(dbs listers.DatabaseLister, backups listers.DatabaseBackupLister, changes *primaryChanges) *stateCollector {
	perDatabase := []string{"namespace", "database"}
	perInstance := []string{"namespace", "database", "instance"}
	return &stateCollector{
		dbs: dbs, backups: backups, changes: changes,
		primaryChanged: prometheus.NewDesc(namespace+"_primary_changes_total",
			"Changes of a replicated Database's primary since the controller started, by kind: failover (the primary was lost) or switchover.",
			[]string{"namespace", "database", "kind"}, nil),
		ready: prometheus.NewDesc(namespace+"_database_ready",
			"1 when the Database's Ready condition is True (its servers serve), else 0.", perDatabase, nil),
		readyReason: prometheus.NewDesc(namespace+"_database_ready_reason",
			"1 for each Database, labelled with the reason of its Ready condition: what it waits for or what went wrong (CrashLooping, ImagePullFailed, NoPrimary, ...), or why it is ready.",
			[]string{"namespace", "database", "reason"}, nil),
		role: prometheus.NewDesc(namespace+"_instance_role",
			"1 for each server of a replicated Database, with its role (primary or replica) as the controller last saw it.",
			[]string{"namespace", "database", "instance", "role"}, nil),
		streaming: prometheus.NewDesc(namespace+"_instance_streaming",
			"1 when a replica of a replicated Database receives from the primary, else 0.", perInstance, nil),
		lag: prometheus.NewDesc(namespace+"_replication_lag_bytes",
			"Bytes of WAL the primary wrote that a streaming PostgreSQL replica has not replayed yet, as the controller last measured (MySQL's replicas report none).",
			perInstance, nil),
		lastBackup: prometheus.NewDesc(namespace+"_last_backup_timestamp_seconds",
			"When the Database's newest completed DatabaseBackup completed, in seconds since the epoch.", perDatabase, nil),
		lastFailedBackup: prometheus.NewDesc(namespace+"_last_failed_backup_timestamp_seconds",
			"When the Database's newest failed DatabaseBackup failed, in seconds since the epoch.", perDatabase, nil),
		lastArchived: prometheus.NewDesc(namespace+"_last_archived_wal_timestamp_seconds",
			"When the Database's primary last archived a WAL file to the object store, in seconds since the epoch.", perDatabase, nil),
		lastFailedArchive: prometheus.NewDesc(namespace+"_last_failed_archive_timestamp_seconds",
			"When the Database's primary last failed to archive a WAL file, in seconds since the epoch.", perDatabase, nil),
		tlsNotAfter: prometheus.NewDesc(namespace+"_tls_not_after_timestamp_seconds",
			"When the Database's TLS certificate (certificate=\"server\") or its authority (certificate=\"authority\") expires, in seconds since the epoch.",
			[]string{"namespace", "database", "certificate"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.ready, c.readyReason, c.role, c.streaming, c.lag, c.lastBackup, c.lastFailedBackup, c.lastArchived, c.lastFailedArchive,
		c.tlsNotAfter, c.primaryChanged} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	dbs, err := c.dbs.List(labels.Everything())
	if err != nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	// The registry sorts each family's series by their label values, the
	// labels in the order of their names (database before namespace); in
	// that order already, the sort only checks it: it was a quarter of a
	// scrape's time at 1,000 Databases (BenchmarkScrape).
	slices.SortFunc(dbs, func(a, b *dbv1alpha1.Database) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Namespace, b.Namespace))
	})
	exists := make(map[types.NamespacedName]bool, len(dbs))
	for _, db := range dbs {
		ns, name := db.Namespace, db.Name
		exists[types.NamespacedName{Namespace: ns, Name: name}] = true
		ready := 0.0
		if meta.IsStatusConditionTrue(db.Status.Conditions, dbv1alpha1.ConditionReady) {
			ready = 1
		}
		gauge(c.ready, ready, ns, name)
		if r := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionReady); r != nil && r.Reason != "" {
			gauge(c.readyReason, 1, ns, name, r.Reason)
		}
		if rs := db.Status.Replication; rs != nil {
			for _, i := range rs.Instances {
				if i.Role != "" {
					gauge(c.role, 1, ns, name, i.Name, i.Role)
				}
				if i.Role != dbv1alpha1.RoleReplica {
					continue
				}
				streaming := 0.0
				if i.Streaming {
					streaming = 1
				}
				gauge(c.streaming, streaming, ns, name, i.Name)
				if i.LagBytes != nil {
					gauge(c.lag, float64(*i.LagBytes), ns, name, i.Name)
				}
			}
		}
		if a := db.Status.Archive; a != nil {
			if a.LastArchivedTime != nil {
				gauge(c.lastArchived, float64(a.LastArchivedTime.Unix()), ns, name)
			}
			if a.LastFailedTime != nil {
				gauge(c.lastFailedArchive, float64(a.LastFailedTime.Unix()), ns, name)
			}
		}
		if t := db.Status.TLS; t != nil && t.AuthorityNotAfter != nil {
			gauge(c.tlsNotAfter, float64(t.AuthorityNotAfter.Unix()), ns, name, "authority")
		}
	}
	// The servers' certificates after every authority: certificate is the
	// label its series sort by first.
	for _, db := range dbs {
		if t := db.Status.TLS; t != nil && t.NotAfter != nil {
			gauge(c.tlsNotAfter, float64(t.NotAfter.Unix()), db.Namespace, db.Name, "server")
		}
	}
	c.collectBackups(ch, exists)
	c.collectPrimaryChanges(ch, exists)
}

// collectPrimaryChanges counts the changes of the primary of each Database
// that exists, and forgets those of the others.
func (c *stateCollector) collectPrimaryChanges(ch chan<- prometheus.Metric, exists map[types.NamespacedName]bool) {
	c.changes.mu.Lock()
	defer c.changes.mu.Unlock()
	for k, n := range c.changes.counts {
		if !exists[types.NamespacedName{Namespace: k.namespace, Name: k.database}] {
			delete(c.changes.counts, k) // deleted: its series goes
			continue
		}
		kind := "switchover"
		if k.failover {
			kind = "failover"
		}
		ch <- prometheus.MustNewConstMetric(c.primaryChanged, prometheus.CounterValue, n, k.namespace, k.database, kind)
	}
}

// collectBackups gives each Database that exists the time of its newest
// completed backup, and of its newest failed one.
func (c *stateCollector) collectBackups(ch chan<- prometheus.Metric, exists map[types.NamespacedName]bool) {
	backups, err := c.backups.List(labels.Everything())
	if err != nil {
		return
	}
	newest := map[dbv1alpha1.BackupPhase]map[types.NamespacedName]int64{dbv1alpha1.BackupCompleted: {}, dbv1alpha1.BackupFailed: {}}
	for _, b := range backups {
		k := types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.Database}
		of, ended := newest[b.Status.Phase]
		// The backups of a deleted Database are no Database's state.
		if !ended || b.Status.CompletionTime == nil || !exists[k] {
			continue
		}
		if t := b.Status.CompletionTime.Unix(); t > of[k] {
			of[k] = t
		}
	}
	for phase, d := range map[dbv1alpha1.BackupPhase]*prometheus.Desc{dbv1alpha1.BackupCompleted: c.lastBackup, dbv1alpha1.BackupFailed: c.lastFailedBackup} {
		for k, t := range newest[phase] {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(t), k.Namespace, k.Name)
		}
	}
}
