// Package reconcile holds the sync pass of one Database: it plans the
// desired state (package plan), brings the children to it step by step, and
// writes the status once, at the end. The loop that feeds it (controller.go)
// only reads the Database from its lister and sorts the outcome.
//
// The steps, in order, one file each, each returning what it found:
//   - credentials.go: the credentials Secret, made once, never rewritten;
//   - children.go: the Services, the StatefulSet and a replicated
//     Database's PodDisruptionBudgets, created or repaired;
//   - podmonitor.go: a monitored Database's PodMonitor, where the cluster
//     has the Prometheus Operator's API;
//   - replication.go: a replicated Database's roles (package ha decides);
//   - pods.go: pods of an earlier revision that were never scheduled,
//     replaced so that a rolling update can go on;
//   - storage.go: the data volume claims, grown to spec.storage.size;
//   - feature_compatibility.go: MongoDB's featureCompatibilityVersion,
//     set by a Job after an upgrade;
//   - monitoring.go: the account the exporters log in as, on the primary;
//   - deletion.go: the finalizer, and a deletion the controller holds;
//   - status_writer.go: the status, from what the steps found, written only
//     when it changed; with credentials_check.go, whether the servers take
//     the Secret's credentials (package login logs in, off the pass).
//
// A pass reads the cluster from the informer caches through a reader that
// records what it read (reads.go), for the settled check (settled.go).
//
// Every step returns one outcome: nil, a *status.Problem (a person must
// act), a *WaitingError (the informer cache has not caught up with a
// create), the API server's refusal to create in a namespace being deleted
// (NamespaceDeleting), or any other error, which is transient. Sync adds
// one: a *RecheckError, when the status it wrote may change unseen.
package reconcile

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/login"
	"github.com/dbcontroller/database-controller/pkg/mysqlsql"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/pgsql"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/status"
	"github.com/dbcontroller/database-controller/pkg/ttl"
)

// FieldManager names every write of the controller, and is the source of its events.
const FieldManager = "database-controller"

// Reasons of Normal events.
const (
	ReasonCreated = "Created"
	ReasonUpdated = "Updated"
	ReasonRunning = "Running"
	ReasonAdopted = "Adopted"
)

// Config is what a Reconciler reads and writes through.
type Config struct {
	// KubeClient writes Secrets, Services, StatefulSets and claims.
	KubeClient kubernetes.Interface
	// DBClient writes Database status.
	DBClient clientset.Interface
	// Caches are what a pass reads the cluster from.
	Caches Caches
	// Recorder emits events on Databases.
	Recorder record.EventRecorder
	// Clock stamps condition transitions and ages the expectations.
	Clock clock.PassiveClock
	// Random is the source of generated passwords: crypto/rand in production.
	Random io.Reader
	// Replication talks to the servers of replicated Databases, by
	// engine; {postgresql: pgsql.New(), mysql: mysqlsql.New()} when nil.
	Replication map[dbv1alpha1.Engine]ha.Client
	// Logins logs in to the servers with the Secrets' credentials
	// (credentials_check.go); nil for none.
	Logins *login.Checker
	// ToolsImage is the controller's own image, whose binary the pods run
	// beside the server to reach an object store (package podtools).
	ToolsImage string
	// Archiver asks a primary how its WAL archiving goes; package pgsql's
	// Archiver when nil.
	Archiver Archiver
	// Parameters checks and sets spec.parameters on the servers, by
	// engine; {postgresql: pgsql.NewParameters(), mysql:
	// mysqlsql.NewParameters(), mongodb: AtStartOnly{}} when nil.
	Parameters map[dbv1alpha1.Engine]ParameterClient
	// Certificates asks the servers which certificate they present, by
	// engine; pgsql's and mysqlsql's PresentCertificate when nil.
	Certificates map[dbv1alpha1.Engine]CertificatePresenter
	// TrustPeriod is how long a new certificate authority is trusted
	// beside the old one, in the Secrets clients read, before it signs the
	// servers' certificate; DefaultTrustPeriod when 0.
	TrustPeriod time.Duration
	// PrimaryChanges is told each change of a replicated Database's
	// primary (the metrics count them); nothing when nil.
	PrimaryChanges PrimaryChangeObserver
	// Dynamic writes the Prometheus Operator's PodMonitors, when
	// Caches.PodMonitors is set.
	Dynamic dynamic.Interface
	// Monitoring makes the monitoring user on the primaries of monitored
	// Databases, by engine; {postgresql: pgsql.NewMonitoring(), mysql:
	// mysqlsql.NewMonitoring()} when nil.
	Monitoring map[dbv1alpha1.Engine]MonitoringClient
}

// PrimaryChangeObserver is told that the primary of a replicated Database
// changed: by a failover (its primary was lost) or a switchover.
type PrimaryChangeObserver interface {
	PrimaryChanged(namespace, database string, failover bool)
}

// DefaultTrustPeriod is Config.TrustPeriod's default: a mounted Secret's
// change reaches the pods that mount it within about two minutes.
const DefaultTrustPeriod = 10 * time.Minute

// Reconciler runs sync passes. It is safe for concurrent use by several
// workers, each on its own Database.
type Reconciler struct {
	kube         kubernetes.Interface
	dbs          clientset.Interface
	caches       [numSources]cache.Indexer
	statefulSets statefulSetAdapter
	services     serviceAdapter
	budgets      budgetAdapter
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	random       io.Reader
	// expectations remembers the children this process created that the
	// informers have not shown yet, so a lagging cache is not mistaken for
	// a missing or a foreign object.
	expectations *Expectations
	// conflicts remembers children whose name another owner's object took,
	// so that the next look is a read, not a create that fails.
	conflicts *ttl.Set[ChildKey, struct{}]
	// covered remembers the children last found to hold every field of
	// their desired state, by the content found and the digest of what was
	// desired (children.go), so that a pass brought by another object's
	// change does not compare them again. Held by the hash of their
	// ChildKey (ChildKey.sum: 8 bytes, where a ChildKey takes 48, for
	// every child of every Database).
	covered *ttl.Set[uint64, coveredChild]
	// refusedGrowth remembers the claims the cluster refused to grow, so
	// that the refused patch is not sent again until something that could
	// change the answer changes.
	refusedGrowth *ttl.Set[ChildKey, refusedGrowth]
	// restarted remembers the pods of replicas restarted because they
	// cannot replicate, or seeded again (their UIDs), so that a pass that
	// reads the caches before they show the deletes does not restart or
	// seed the same one again, with a second Warning.
	restarted *ttl.Set[types.UID, struct{}]
	// settled remembers, for each Database whose last pass settled, what
	// that pass read (settled.go).
	settled *ttl.Set[types.NamespacedName, settledPass]
	// replication talks to the servers of replicated Databases, with the
	// credentials creds read from their Secrets (by the Secret's UID) when
	// they change; an entry goes after memoryTTL, so that those of deleted
	// Databases do not stay.
	replication map[dbv1alpha1.Engine]ha.Client
	creds       *ttl.Set[types.UID, cachedCredentials]
	// listed holds the credentials Secrets ListCredentials read, by UID,
	// until the first pass of their Database takes them (listedTTL at
	// most).
	listed *ttl.Set[types.UID, *corev1.Secret]
	// logins logs in to the servers with the Secrets' credentials; nil
	// when they are not checked.
	logins *login.Checker
	// toolsImage is Config.ToolsImage.
	toolsImage string
	archiver   Archiver
	parameters map[dbv1alpha1.Engine]ParameterClient
	// written remembers the status last written to each Database until
	// the cache shows it (written.go); tlsWritten, the Secrets the TLS step
	// wrote (tls.go).
	written    *ttl.Set[types.UID, writtenStatus]
	tlsWritten writtenSecrets
	// presenters asks the servers which certificate they present; presented
	// remembers, by pod, the serial number of the one a server presented
	// when it was the TLS Secret's (tls.go).
	presenters map[dbv1alpha1.Engine]CertificatePresenter
	presented  *ttl.Set[types.UID, string]
	// reloaded remembers, by pod, when a server was last made to reload its
	// certificate, and for which serial number.
	reloaded *ttl.Set[types.UID, reload]
	// trustPeriod is Config.TrustPeriod.
	trustPeriod time.Duration
	// primaryChanges is Config.PrimaryChanges, or nil.
	primaryChanges PrimaryChangeObserver
	// monitoring is Config.Monitoring; monitoringUsers remembers the
	// Databases (by UID) whose primary has the monitoring user, and
	// monitoringFailures the last failure said of each in an event.
	monitoring         map[dbv1alpha1.Engine]MonitoringClient
	dynamic            dynamic.Interface
	monitoringUsers    *ttl.Set[types.UID, struct{}]
	monitoringFailures *ttl.Set[types.UID, string]
}

// memoryTTL bounds how long a conflict or a refused growth is remembered:
// past it, the write is tried again once.
const memoryTTL = time.Hour

// New returns a Reconciler over cfg.
func New(cfg Config) *Reconciler {
	if cfg.Replication == nil {
		cfg.Replication = map[dbv1alpha1.Engine]ha.Client{dbv1alpha1.EnginePostgreSQL: pgsql.New(), dbv1alpha1.EngineMySQL: mysqlsql.New()}
	}
	if cfg.Parameters == nil {
		cfg.Parameters = map[dbv1alpha1.Engine]ParameterClient{dbv1alpha1.EnginePostgreSQL: pgsql.NewParameters(), dbv1alpha1.EngineMySQL: mysqlsql.NewParameters(),
			dbv1alpha1.EngineMongoDB: AtStartOnly{}}
	}
	if cfg.Certificates == nil {
		cfg.Certificates = map[dbv1alpha1.Engine]CertificatePresenter{dbv1alpha1.EnginePostgreSQL: pgsql.PresentCertificate, dbv1alpha1.EngineMySQL: mysqlsql.PresentCertificate}
	}
	if cfg.TrustPeriod == 0 {
		cfg.TrustPeriod = DefaultTrustPeriod
	}
	if cfg.Archiver == nil {
		cfg.Archiver = pgsql.Archiver
	}
	if cfg.Monitoring == nil {
		cfg.Monitoring = map[dbv1alpha1.Engine]MonitoringClient{dbv1alpha1.EnginePostgreSQL: pgsql.NewMonitoring(), dbv1alpha1.EngineMySQL: mysqlsql.NewMonitoring()}
	}
	return &Reconciler{
		kube:         cfg.KubeClient,
		dbs:          cfg.DBClient,
		caches:       cfg.Caches.indexers(),
		statefulSets: statefulSetAdapter{client: cfg.KubeClient},
		services:     serviceAdapter{client: cfg.KubeClient},
		budgets:      budgetAdapter{client: cfg.KubeClient},
		recorder:     cfg.Recorder,
		clock:        cfg.Clock,
		random:       cfg.Random,
		expectations: NewExpectations(cfg.Clock, ExpectationsTTL),

		conflicts:     ttl.NewSet[ChildKey, struct{}](cfg.Clock, memoryTTL),
		covered:       ttl.NewSet[uint64, coveredChild](cfg.Clock, memoryTTL),
		refusedGrowth: ttl.NewSet[ChildKey, refusedGrowth](cfg.Clock, memoryTTL),
		restarted:     ttl.NewSet[types.UID, struct{}](cfg.Clock, memoryTTL),
		settled:       ttl.NewSet[types.NamespacedName, settledPass](cfg.Clock, SettledTTL),
		replication:   cfg.Replication,
		creds:         ttl.NewSet[types.UID, cachedCredentials](cfg.Clock, memoryTTL),
		listed:        ttl.NewSet[types.UID, *corev1.Secret](cfg.Clock, listedTTL),
		written:       ttl.NewSet[types.UID, writtenStatus](cfg.Clock, writtenTTL),
		tlsWritten:    writtenSecrets{ttl.NewSet[ChildKey, *corev1.Secret](cfg.Clock, writtenTTL)},
		presenters:    cfg.Certificates,
		presented:     ttl.NewSet[types.UID, string](cfg.Clock, memoryTTL),
		reloaded:      ttl.NewSet[types.UID, reload](cfg.Clock, memoryTTL),
		trustPeriod:   cfg.TrustPeriod,
		logins:        cfg.Logins,
		toolsImage:    cfg.ToolsImage,
		archiver:      cfg.Archiver,
		parameters:    cfg.Parameters,

		primaryChanges: cfg.PrimaryChanges,

		monitoring:         cfg.Monitoring,
		dynamic:            cfg.Dynamic,
		monitoringUsers:    ttl.NewSet[types.UID, struct{}](cfg.Clock, memoryTTL),
		monitoringFailures: ttl.NewSet[types.UID, string](cfg.Clock, memoryTTL),
	}
}

// pass is one sync of one Database: what it was given and planned. The
// steps read it and write nothing to it; what each finds, it returns.
type pass struct {
	r *Reconciler
	// db is the Database as read from the lister.
	db *dbv1alpha1.Database
	// read reads the cluster from the caches, and records what it read.
	read *reader
	// plan is the desired state.
	plan *plan.Plan
	// stored is the Database as last written: db until a status write of
	// this pass, which the next write compares with.
	stored *dbv1alpha1.Database
	// asked is what spec.parameters and its ConfigMap ask for, read once
	// by observe for the plan and the parameters step.
	asked askedParameters
}

// findings is what the steps of one pass found, for the status. Each
// field is the value one step returned, set by run alone: what a step
// depends on is a parameter of it, and what the status reads is here.
type findings struct {
	// statefulSet is the StatefulSet observed, or returned by the last
	// write; nil if none. claims and pods are every one with the
	// Database's selector labels, as observed.
	statefulSet *appsv1.StatefulSet
	claims      []*corev1.PersistentVolumeClaim
	pods        []*corev1.Pod
	// created lists the children this pass created, as "Kind name", for
	// one event at the end of the pass.
	created []string
	// replication is what the replication step found of a replicated
	// Database; nil when the pass did not reach it.
	replication *replicationFindings
	// archive is what the archiving step found.
	archive archiveFindings
	// parameters is what the parameters step decided.
	parameters parameterFindings
	// tls is what the TLS step found.
	tls tlsFindings
	// monitoring is what the monitoring user's step found.
	monitoring monitoringFindings
	// upgrade is what the major upgrade step decided.
	upgrade upgradeFindings
	// featureCompatibility is what the featureCompatibilityVersion step did.
	featureCompatibility featureCompatibilityFindings
	// termination, when set, is the state of a deletion the controller
	// holds with its finalizer; released says it let the Database go.
	termination *status.Termination
	released    bool
}

// Sync brings db's children to its spec and writes its status when it
// changed. It reads only from the caches, except where a step says so.
// It returns nil, a *status.Problem or a *RecheckError once the status is
// written, a *WaitingError, a refusal of its namespace being deleted
// (NamespaceDeleting), or a transient error. It reports skipped when db
// was settled and nothing it depends on changed, so no pass ran.
func (r *Reconciler) Sync(ctx context.Context, db *dbv1alpha1.Database) (skipped bool, err error) {
	skipped, _, err = r.sync(ctx, db)
	return skipped, err
}

// sync is Sync, which also returns the reader of the pass it ran (nil
// when it ran none): what the pass read.
func (r *Reconciler) sync(ctx context.Context, db *dbv1alpha1.Database) (bool, *reader, error) {
	if db.DeletionTimestamp != nil && !slices.Contains(db.Finalizers, dbv1alpha1.FinalizerDatabase) {
		// Being deleted, and nothing to do first: the garbage collector
		// removes the children through their owner references.
		klog.FromContext(ctx).V(4).Info("Database is being deleted")
		return false, nil, nil
	}
	db = r.asWritten(db)
	if r.unchangedSinceSettled(db) {
		klog.FromContext(ctx).V(5).Info("Settled, and nothing it depends on changed: skipping the pass")
		return true, nil, nil
	}
	p := &pass{r: r, db: db, stored: db, read: newReader(&r.caches)}
	err := p.converge(ctx)
	if err == nil {
		r.settle(db, p.read)
	}
	return false, p.read, err
}

// converge is one pass over db, ending with its status.
func (p *pass) converge(ctx context.Context) error {
	f, err := p.run(ctx)
	if f.released {
		// The finalizer is gone, and the Database with it: no status to write.
		return err
	}
	if len(f.created) > 0 {
		// One event for everything a pass created, also when a later step
		// failed: four events per new Database would double its writes.
		p.r.recorder.Event(p.db, corev1.EventTypeNormal, ReasonCreated, "Created "+strings.Join(f.created, ", "))
	}
	var problem *status.Problem
	if err != nil && !errors.As(err, &problem) {
		// Transient, or waiting for the cache: writing status now would
		// report a state that is already stale.
		return err
	}
	recheck, werr := p.writeStatus(ctx, f, problem)
	if werr != nil {
		return werr
	}
	switch {
	case err != nil:
		return err
	case recheck != nil && recheck.After == 0:
		return recheck
	}
	// The soonest of the steps that ask the servers again, and of a cause
	// falling due.
	var poll *RecheckError
	if recheck != nil {
		poll = recheck
	}
	for _, step := range []RecheckError{
		{Why: "asking the replicated servers again", After: f.replication.pollInterval()},
		{Why: "asking the primary how its archiving goes", After: f.archive.pollAfter},
		{Why: "asking the servers again to take spec.parameters", After: f.parameters.pollAfter},
		{Why: "asking the servers again to present the TLS Secret's certificate", After: f.tls.pollAfter},
		{Why: "asking the primary again to make the monitoring user", After: f.monitoring.pollAfter},
	} {
		if step.After > 0 && (poll == nil || step.After < poll.After) {
			poll = &step
		}
	}
	if poll != nil {
		return poll
	}
	return nil
}

// run plans, then converges the children in dependency order: the Secret
// the pods read, the Services, the StatefulSet and its pods, its claims,
// then what follows a rollout. It stops at the first step that does not
// succeed, touching nothing after it, and returns what the steps found.
func (p *pass) run(ctx context.Context) (*findings, error) {
	// Until the step asks the primary, the status keeps what it last said.
	f := &findings{archive: archiveFindings{wanted: archiveWanted(p.db)}}
	observed, err := p.observe()
	if err != nil {
		return f, err
	}
	f.statefulSet, f.claims = observed.StatefulSet, observed.Claims
	if f.pods, err = p.read.ownPods(p.db); err != nil {
		return f, err
	}
	observed.Stranded = p.stranded(f.pods)
	if p.db.DeletionTimestamp == nil {
		if observed.Restore, err = p.restoreSource(observed.StatefulSet); err != nil {
			p.plan = plan.Compute(p.db, observed)
			return f, err
		}
		if e, lerr := registry.Lookup(string(p.db.Spec.Engine)); lerr == nil {
			f.upgrade, err = p.majorUpgrade(ctx, e, observed.StatefulSet, f.pods)
			f.created = append(f.created, f.upgrade.created...)
			observed.MajorUpgrade = f.upgrade.upgrade
			if err != nil {
				p.plan = plan.Compute(p.db, observed)
				return f, err
			}
		}
	} else {
		// Deleting: the StatefulSet stays at the version its data is.
		observed.MajorUpgrade = p.db.Status.MajorUpgrade
	}
	p.plan = plan.Compute(p.db, observed)
	if p.db.DeletionTimestamp != nil {
		d, err := p.runDeleting(ctx, observed)
		f.termination, f.released, f.created = d.termination, d.released, d.created
		if d.statefulSet != nil {
			f.statefulSet = d.statefulSet
		}
		return f, err
	}
	if err := p.ensureFinalizer(ctx); err != nil {
		return f, err
	}
	if p.plan.Problem != nil {
		if p.plan.Problem.Reason == engine.ReasonFeatureCompatibilityPending {
			// The refusal waits for this step: it must go on.
			fc, err := p.ensureFeatureCompatibility(ctx, f.statefulSet)
			f.featureCompatibility = fc
			f.created = append(f.created, fc.created...)
			if err != nil {
				return f, err
			}
		}
		return f, p.plan.Problem
	}

	// The TLS Secrets first: a new credentials Secret holds the
	// authorities (ca.crt) from the start.
	f.tls, err = p.ensureTLS(ctx, f.pods)
	f.created = append(f.created, f.tls.created...)
	if err != nil {
		return f, err
	}
	if t := p.plan.Engine.Runtime().TLS; t != nil && t.RestartToRenew && f.tls.serial != "" && f.tls.serial != observed.CertificateSerial {
		// Its servers read the certificate at start only: their pods carry
		// its serial number, the one this pass issued.
		observed.CertificateSerial = f.tls.serial
		p.plan = plan.Compute(p.db, observed)
	}
	created, err := p.ensureSecret(ctx, f.statefulSet != nil, f.tls)
	f.created = append(f.created, created...)
	if err != nil {
		return f, err
	}
	if err := p.ensureAuthorityInSecret(ctx, f.tls); err != nil {
		return f, err
	}
	created, err = p.ensureServices(ctx)
	f.created = append(f.created, created...)
	if err != nil {
		return f, err
	}
	sts, created, err := p.ensureStatefulSet(ctx, p.plan)
	f.created = append(f.created, created...)
	if err != nil {
		return f, err
	}
	f.statefulSet = sts
	created, err = p.ensureDisruptionBudgets(ctx)
	f.created = append(f.created, created...)
	if err != nil {
		return f, err
	}
	created, err = p.ensurePodMonitor(ctx)
	f.created = append(f.created, created...)
	if err != nil {
		return f, err
	}
	if f.upgrade.stopsServers() {
		// Stopped on purpose, the primary stays the primary: nothing to
		// ask, and no failover.
		f.replication = p.stoppedForUpgrade()
	} else if f.replication, err = p.ensureReplication(ctx, sts, f.pods, p.recordTarget(f)); err != nil {
		return f, err
	}
	if f.archive, err = p.archiving(ctx, observed.ToolsImage, f.pods, f.replication); err != nil {
		return f, err
	}
	if err := p.replaceStuckPods(ctx, sts, f.pods); err != nil {
		return f, err
	}
	if err := p.growClaims(ctx); err != nil {
		return f, err
	}
	fc, err := p.ensureFeatureCompatibility(ctx, sts)
	f.featureCompatibility = fc
	f.created = append(f.created, fc.created...)
	if err != nil {
		return f, err
	}
	if f.parameters, err = p.ensureParameters(ctx, sts, f.pods, f.replication); err != nil {
		return f, err
	}
	f.monitoring = p.ensureMonitoringUser(ctx, f.pods, f.replication)
	poll, err := p.presentCertificates(ctx, f.pods, f.tls)
	f.tls.pollAfter = soonest(f.tls.pollAfter, poll)
	if err == nil && f.upgrade.failed != nil {
		// The old version serves again: now say why the new one does not.
		return f, f.upgrade.failed
	}
	return f, err
}

// pollInterval is how soon the replication step asks the servers again; 0
// for a pass that did not reach it.
func (r *replicationFindings) pollInterval() time.Duration {
	if r == nil {
		return 0
	}
	return r.pollAfter
}

// recordTarget is the one status write a pass makes before its end: the
// target of a failover or switchover, recorded before anything is done for
// it, with what the pass found so far (see ha.ActionRecordTarget), so that
// a controller restarted from there on finishes this one, not another.
func (p *pass) recordTarget(f *findings) func(context.Context, *replicationFindings) error {
	return func(ctx context.Context, repl *replicationFindings) error {
		sofar := *f
		sofar.replication = repl
		_, err := p.writeStatus(ctx, &sofar, nil)
		return err
	}
}

// observe reads what the plan needs.
func (p *pass) observe() (plan.Observed, error) {
	observed := plan.Observed{ToolsImage: p.r.toolsImage}
	sts, err := p.read.statefulSet(p.db.Namespace, names.StatefulSetName(p.db))
	switch {
	case err == nil && metav1.IsControlledBy(sts, p.db):
		observed.StatefulSet = sts
		if observed.ToolsImage == "" {
			observed.ToolsImage = builder.ToolsImageOf(sts)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return observed, err
	}
	claims, err := p.read.ownClaims(p.db)
	if err != nil {
		return observed, err
	}
	observed.Claims = claims
	e, err := registry.Lookup(string(p.db.Spec.Engine))
	if err != nil {
		// The plan says so.
		return observed, nil
	}
	if e.Runtime().Parameters != nil {
		if p.asked.want, p.asked.refused, err = p.desiredParameters(e.Runtime().Parameters); err != nil {
			return observed, err
		}
		observed.Parameters = p.asked.want
	}
	if t := e.Runtime().TLS; t != nil && t.RestartToRenew {
		// The serial number the pods of such an engine carry, as the cache
		// (or this process's last write) has it; the TLS step may issue
		// another, and the pass plans again then.
		key := ChildKey{Kind: "Secret", Namespace: p.db.Namespace, Name: names.TLSSecretName(p.db)}
		if s, err := p.read.secret(key.Namespace, key.Name); err == nil && metav1.IsControlledBy(s, p.db) {
			observed.CertificateSerial = p.r.tlsWritten.newest(key, s).Annotations[builder.AnnotationSerial]
		}
	}
	return observed, nil
}
