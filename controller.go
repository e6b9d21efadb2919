package main

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/cached"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	dbscheme "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/scheme"
	dbinformers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions"
	listers "github.com/dbcontroller/database-controller/pkg/generated/listers/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/login"
	"github.com/dbcontroller/database-controller/pkg/mysqlsql"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/pgsql"
	"github.com/dbcontroller/database-controller/pkg/queue"
	"github.com/dbcontroller/database-controller/pkg/reconcile"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// controllerAgentName is the component name on events and the field manager
// of every write.
const controllerAgentName = reconcile.FieldManager

// followUpBatch is how long the pass that follows an update of a coming-up
// Database's children waits (Controller.followUpBatch). As its server
// starts, its claim is bound, its pod scheduled, started and ready, and its
// StatefulSet counts it, each change a few milliseconds after the last: at
// 300 Databases, 880 of the 1,482 passes of Databases not yet Running came
// within 500 ms of the one before, most within 50 ms, one pass for each
// change. Waiting this long makes them one pass, as kube-controller-
// manager's Job controller batches the changes of a Job's pods. A Database
// that runs (its failover above all) is never made to wait.
const followUpBatch = 250 * time.Millisecond

// The pace of rechecks of a problem that may clear by itself.
const (
	recheckBaseDelay = 5 * time.Second
	recheckMaxDelay  = time.Minute
)

// preferredRun is how many Databases whose child changed are handed to the
// workers in a row while another Database waits: one, so that while both
// wait the two take turns, and neither gets less than half of the workers'
// turns. With 8, new Databases got as little as one turn in nine: at QPS
// 1000 their StatefulSets were created 1.5-1.7x later than the floor's,
// against 1.16x first in, first out.
const preferredRun = 1

// Config is what NewController needs. Only the clients and the informer
// factories are required.
type Config struct {
	// KubeClient writes Secrets, Services, StatefulSets and claims.
	KubeClient kubernetes.Interface
	// EventsClient writes events; KubeClient when nil. A client of its own
	// keeps events off the rate limiter of the creates.
	EventsClient kubernetes.Interface
	// DBClient writes Database status.
	DBClient clientset.Interface
	// KubeInformers should be limited to the objects labelled as managed by
	// this controller (see newInformerFactories); DBInformers watches Databases.
	KubeInformers kubeinformers.SharedInformerFactory
	DBInformers   dbinformers.SharedInformerFactory
	// ClaimEventInformers should be limited to the events about claims (see
	// newClaimEventInformerFactory): they tell why a claim waits for its
	// volume.
	ClaimEventInformers kubeinformers.SharedInformerFactory
	// NodeInformers, when set, watches the nodes (newNodeInformerFactory):
	// a cordoned node whose pod is a primary leads to a switchover before
	// a drain evicts it. Without it, no node reads as cordoned.
	NodeInformers kubeinformers.SharedInformerFactory
	// ParametersConfigMapInformers, when set, watches the ConfigMaps
	// labelled dbcontroller.io/parameters: "true"
	// (newParametersConfigMapInformerFactory), which Databases name in
	// spec.parametersConfigMap. Without it, none is found.
	ParametersConfigMapInformers kubeinformers.SharedInformerFactory
	// TLSSecretInformers, when set, watches the Secrets labelled
	// dbcontroller.io/tls: "true" (newLabelledInformerFactory), which
	// Databases name in spec.tls.secretName. Without it, none is found.
	TLSSecretInformers kubeinformers.SharedInformerFactory
	// PodMonitors, when set, watches the Prometheus Operator's PodMonitors
	// labelled as managed by this controller (newPodMonitorInformer), and
	// Dynamic writes them: each monitored Database gets one. Without it
	// (the cluster has not their API), none is made.
	PodMonitors cache.SharedIndexInformer
	Dynamic     dynamic.Interface
	// Recorder emits events on Databases; when nil, one that writes through
	// EventsClient.
	Recorder record.EventRecorder
	// Clock is the real clock when nil.
	Clock clock.PassiveClock
	// Random is the source of generated passwords; crypto/rand when nil.
	Random io.Reader
	// Metrics is told the outcome of every sync; nothing when nil.
	Metrics SyncObserver
	// PrimaryChanges is told each change of a replicated Database's
	// primary; nothing when nil.
	PrimaryChanges reconcile.PrimaryChangeObserver
	// Replication talks to the servers of replicated Databases, by engine;
	// package pgsql's client for PostgreSQL and package mysqlsql's for MySQL when nil.
	Replication map[dbv1alpha1.Engine]ha.Client
	// CredentialsCheckInterval is how often the controller logs in to each
	// Database's ready servers with its Secret's credentials (package
	// login); 0 for never.
	CredentialsCheckInterval time.Duration
	// TLSTrustPeriod is how long a new certificate authority is trusted
	// beside the old one before it signs (reconcile.Config.TrustPeriod).
	TLSTrustPeriod time.Duration
	// Logins log in to the servers of each engine, by engine name: package
	// pgsql's for PostgreSQL and package mysqlsql's for MySQL when nil.
	Logins map[string]login.Func
	// ToolsImage is the controller's own image: the pods that reach an
	// object store run its binary (package podtools). Without it, backups
	// to and restores from an object store are refused, saying why.
	ToolsImage string
}

// credentialsCheckWorkers is how many Databases' servers are logged in to
// at once: a login that waits for a server that does not answer takes up
// to login.Timeout.
const credentialsCheckWorkers = 8

// Controller feeds Databases to the reconciler: shared informers put their
// keys on a rate-limited work queue, and workers take them off one at a time.
type Controller struct {
	databasesLister listers.DatabaseLister
	claimsLister    corelisters.PersistentVolumeClaimLister
	// cachesSynced report whether each informer cache has synced.
	cachesSynced []cache.InformerSynced
	// cached is each informer cache by the kind it holds (Cached).
	cached map[string][]cache.Store
	// workqueue holds the Databases to sync. It is rate limited, so that a
	// failing Database is retried with backoff, and it never holds a key twice.
	workqueue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// order is the workqueue's storage: a Database whose child changed is
	// handed out before the others (see queue.Prioritized).
	order *queue.Prioritized[cache.ObjectName]
	// followUpBatch is how long a coming-up Database waits on an update of
	// its children before its pass (see the constant of the same name).
	followUpBatch time.Duration
	// recheck paces the looks at a problem that may clear by itself (an
	// object in the way): 5 s, doubling, at most a minute apart.
	recheck workqueue.TypedRateLimiter[cache.ObjectName]
	// reconciler runs the sync pass of one Database, and backups runs its
	// DatabaseBackups.
	reconciler Reconciler
	backups    *backup.Runner
	// logins logs in to the Databases' servers with their Secrets'
	// credentials, and brings back a Database whose answer changed; nil
	// when they are not checked.
	logins  *login.Checker
	clock   clock.PassiveClock
	metrics SyncObserver
}

// Reconciler runs the sync pass of one Database (reconcile.Reconciler).
type Reconciler interface {
	// Sync brings db to its spec; see reconcile.Reconciler.Sync for what
	// it returns.
	Sync(ctx context.Context, db *dbv1alpha1.Database) (skipped bool, err error)
	// Forget drops what is remembered of a Database that no longer exists.
	Forget(namespace, name string)
	// Observed tells it the Database's cache now holds db.
	Observed(db *dbv1alpha1.Database)
	// ListCredentials reads the credentials Secrets of a namespace's
	// Databases at once, for their first passes, and says how many it
	// kept.
	ListCredentials(ctx context.Context, namespace string, dbs []*dbv1alpha1.Database) (int, error)
	// Echo reports whether an informer's add of the child k at
	// resourceVersion is only the echo of this process's own create,
	// which no pass needs.
	Echo(k reconcile.ChildKey, resourceVersion string) bool
}

// SyncObserver is told the outcome of every sync, and why each Database
// was put on the work queue.
type SyncObserver interface {
	ObserveSync(result string, duration time.Duration)
	// ObserveQueued is told that a Database was put on the queue because
	// an object of kind by had change (add, update, delete, resync), or
	// because a timer of the controller's own came due (by "timer",
	// change what it waited for). A Database already queued is not queued
	// twice, so there are at least as many of these as syncs.
	ObserveQueued(by, change string)
}

type noopObserver struct{}

func (noopObserver) ObserveSync(string, time.Duration) {}
func (noopObserver) ObserveQueued(string, string)      {}

// The words ObserveQueued is told: by is a kind of object, queuedByTimer
// (then change is queuedRetry, queuedRecheck, queuedPoll or
// queuedSchedule) or queuedByLogin; change is one of the change* words.
const (
	queuedByTimer    = "timer"
	queuedRetry      = "retry"
	queuedRecheck    = "recheck"
	queuedPoll       = "poll"
	queuedSchedule   = "backup schedule"
	queuedByLogin    = "credentials check"
	changeAdd        = "add"
	changeUpdate     = "update"
	changeDelete     = "delete"
	changeResync     = "resync"
	changeLoginFound = "verdict changed"
)

// NewController returns a controller fed by cfg's informer factories. Start
// the factories before Run.
func NewController(ctx context.Context, cfg Config) (*Controller, error) {
	logger := klog.FromContext(ctx)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noopObserver{}
	}
	if cfg.Recorder == nil {
		cfg.Recorder = newRecorder(ctx, cfg.EventsClient, cfg.KubeClient)
	}

	caches, cachesSynced, err := reconcile.NewCaches(cfg.KubeInformers, cfg.DBInformers, cfg.ClaimEventInformers, cfg.NodeInformers,
		cfg.ParametersConfigMapInformers, cfg.TLSSecretInformers, cfg.PodMonitors)
	if err != nil {
		return nil, err
	}
	databases := cfg.DBInformers.Dbcontroller().V1alpha1().Databases()
	if err := databases.Informer().AddIndexers(cache.Indexers{reconcile.IndexParametersConfigMap: reconcile.IndexByParametersConfigMap,
		reconcile.IndexTLSSecret: reconcile.IndexByTLSSecret}); err != nil {
		return nil, err
	}
	claims := cfg.KubeInformers.Core().V1().PersistentVolumeClaims().Informer()

	order := queue.NewPrioritized[cache.ObjectName](preferredRun)
	var c *Controller
	var logins *login.Checker
	if cfg.CredentialsCheckInterval > 0 {
		if cfg.Logins == nil {
			cfg.Logins = map[string]login.Func{string(dbv1alpha1.EnginePostgreSQL): pgsql.Login, string(dbv1alpha1.EngineMySQL): mysqlsql.Login}
		}
		logins = login.New(login.Config{Logins: cfg.Logins, Interval: cfg.CredentialsCheckInterval, Clock: cfg.Clock, Workers: credentialsCheckWorkers,
			Changed: func(db types.NamespacedName) {
				c.metrics.ObserveQueued(queuedByLogin, changeLoginFound)
				c.workqueue.Add(cache.ObjectName{Namespace: db.Namespace, Name: db.Name})
			}})
	}
	c = &Controller{
		databasesLister: databases.Lister(),
		claimsLister:    cached.PersistentVolumeClaimLister(caches.Claims),
		cachesSynced:    append(cachesSynced, databases.Informer().HasSynced),
		workqueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{
				Name: "databases",
				DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[cache.ObjectName]{
					Name:  "databases",
					Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[cache.ObjectName]{Name: "databases", Queue: order}),
				}),
			},
		),
		order:         order,
		followUpBatch: followUpBatch,
		recheck:       workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](recheckBaseDelay, recheckMaxDelay),
		reconciler: reconcile.New(reconcile.Config{KubeClient: cfg.KubeClient, DBClient: cfg.DBClient, Caches: caches,
			Recorder: cfg.Recorder, Clock: cfg.Clock, Random: cfg.Random, Replication: cfg.Replication, Logins: logins, ToolsImage: cfg.ToolsImage,
			TrustPeriod: cfg.TLSTrustPeriod, PrimaryChanges: cfg.PrimaryChanges, Dynamic: cfg.Dynamic}),
		logins: logins,
		backups: backup.New(backup.Config{KubeClient: cfg.KubeClient, DBClient: cfg.DBClient, Backups: caches.Backups,
			Jobs: batchlisters.NewJobLister(caches.Jobs), Pods: cached.PodLister(caches.Pods), Claims: cached.PersistentVolumeClaimLister(caches.Claims),
			Recorder: cfg.Recorder, Clock: cfg.Clock, FieldManager: reconcile.FieldManager, ToolsImage: cfg.ToolsImage}),
		clock:   cfg.Clock,
		metrics: cfg.Metrics,
	}

	logger.Info("Setting up event handlers")
	if _, err := databases.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			c.metrics.ObserveQueued("Database", changeAdd)
			c.enqueueDatabase(obj)
		},
		UpdateFunc: func(old, new interface{}) {
			// The controller's own status write reaching the cache, most
			// often: what is remembered of it until then can go.
			oldDB, newDB := old.(*dbv1alpha1.Database), new.(*dbv1alpha1.Database)
			c.reconciler.Observed(newDB)
			if databaseChangeNeedsSync(oldDB, newDB) {
				c.metrics.ObserveQueued("Database", changeOf(oldDB, newDB))
				c.enqueueDatabase(new)
			}
		},
	}); err != nil {
		return nil, err
	}
	statefulSets := cfg.KubeInformers.Apps().V1().StatefulSets().Informer()
	services := cfg.KubeInformers.Core().V1().Services().Informer()
	secrets := cfg.KubeInformers.Core().V1().Secrets().Informer()
	pods := cfg.KubeInformers.Core().V1().Pods().Informer()
	jobs := cfg.KubeInformers.Batch().V1().Jobs().Informer()
	budgets := cfg.KubeInformers.Policy().V1().PodDisruptionBudgets().Informer()
	// Children lead to the Database that owns them.
	children := []cache.SharedIndexInformer{statefulSets, services, secrets, jobs, budgets}
	if cfg.PodMonitors != nil {
		children = append(children, cfg.PodMonitors)
	}
	for _, inf := range children {
		if _, err := inf.AddEventHandler(onChange(c.handleObject)); err != nil {
			return nil, err
		}
	}
	// Pods belong to the StatefulSet, and claims to no one: both lead back
	// to their Database by its instance label, so that the Ready condition
	// can name what blocks them. So do the Jobs of backups, which belong to
	// DatabaseBackups, and may outlive their Database.
	for _, inf := range []cache.SharedIndexInformer{pods, claims, jobs} {
		if _, err := inf.AddEventHandler(onChange(c.enqueueByLabel)); err != nil {
			return nil, err
		}
	}
	// An event about a claim that waits for its volume may name why it
	// waits: it leads to the claim's Database.
	if _, err := cfg.ClaimEventInformers.Core().V1().Events().Informer().AddEventHandler(onChange(c.enqueueClaimEvent)); err != nil {
		return nil, err
	}
	// A node cordoned, or uncordoned, leads to the Databases of its pods.
	if cfg.NodeInformers != nil {
		if _, err := cfg.NodeInformers.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, new interface{}) {
				if old.(*corev1.Node).Spec.Unschedulable != new.(*corev1.Node).Spec.Unschedulable {
					c.enqueueNodesDatabases(pods.GetIndexer(), new.(*corev1.Node).Name)
				}
			},
		}); err != nil {
			return nil, err
		}
	}
	// A ConfigMap of parameters, and a Secret of a user's certificate, lead
	// to the Databases that name them (each by its index).
	named := map[string]cache.SharedIndexInformer{}
	if cfg.ParametersConfigMapInformers != nil {
		named[reconcile.IndexParametersConfigMap] = cfg.ParametersConfigMapInformers.Core().V1().ConfigMaps().Informer()
	}
	if cfg.TLSSecretInformers != nil {
		named[reconcile.IndexTLSSecret] = cfg.TLSSecretInformers.Core().V1().Secrets().Informer()
	}
	for index, informer := range named {
		indexer := databases.Informer().GetIndexer()
		if _, err := informer.AddEventHandler(onChange(func(obj interface{}, change string) { c.enqueueIndexed(indexer, index, obj, change) })); err != nil {
			return nil, err
		}
	}
	c.cached = caches.ByKind()
	c.cached["Database"] = []cache.Store{databases.Informer().GetStore()}
	// A DatabaseBackup leads to the Database it backs up, which need not exist.
	if _, err := cfg.DBInformers.Dbcontroller().V1alpha1().DatabaseBackups().Informer().AddEventHandler(onChange(c.enqueueBackupsDatabase)); err != nil {
		return nil, err
	}
	return c, nil
}

// onChange is the event handler that hands every object added, changed or
// deleted to enqueue, with which of those it was, and drops the periodic
// resync of an unchanged one (the same resourceVersion): the Database's own
// resync already covers it. It drops too an update of which the cache's
// compact form kept nothing (cached.Unchanged): no reader sees it.
func onChange(enqueue func(obj interface{}, change string)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { enqueue(obj, changeAdd) },
		UpdateFunc: func(old, new interface{}) {
			if old.(metav1.Object).GetResourceVersion() != new.(metav1.Object).GetResourceVersion() && !cached.Unchanged(old, new) {
				enqueue(new, changeUpdate)
			}
		},
		DeleteFunc: func(obj interface{}) { enqueue(obj, changeDelete) },
	}
}

// changeOf names a Database update for ObserveQueued: a resync when its
// resourceVersion is the same.
func changeOf(old, new *dbv1alpha1.Database) string {
	if old.ResourceVersion == new.ResourceVersion {
		return changeResync
	}
	return changeUpdate
}

// kindOf is the kind of an object an informer handed over, for
// ObserveQueued: its Go type's name (a cache's compact form is named as the
// kind it stands for, cached.Pod), or an unstructured object's kind.
func kindOf(obj interface{}) string {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	t := reflect.TypeOf(obj)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "unknown"
	}
	return t.Name()
}

// eventCorrelatorKeys is how many keys each of the event correlator's three
// memories holds (the spam filter's token bucket per object, the similar
// events of an object to fold into one, the count of an identical event to
// patch): client-go's 4,096 held 2.5 MiB of heap at 1,000 Databases with
// two events each, and 5.7 MiB at 5,000; 512 hold 0.8 and 0.9 MiB
// (BenchmarkEventCorrelator). The controller emits an event when something
// changes, not at every pass, so what the correlator folds is a burst on
// one object, which 512 recent keys still see.
const eventCorrelatorKeys = 512

// newEventBroadcaster returns an event broadcaster whose correlator
// remembers keys event keys in each of its memories.
func newEventBroadcaster(ctx context.Context, keys int) record.EventBroadcaster {
	return record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: keys}))
}

// newRecorder returns a recorder that writes events through eventsClient, or
// kubeClient when it is nil.
func newRecorder(ctx context.Context, eventsClient, kubeClient kubernetes.Interface) record.EventRecorder {
	if eventsClient == nil {
		eventsClient = kubeClient
	}
	utilruntime.Must(dbscheme.AddToScheme(scheme.Scheme))
	eventBroadcaster := newEventBroadcaster(ctx, eventCorrelatorKeys)
	eventBroadcaster.StartStructuredLogging(0)
	// Events go through a client of their own, so that they never wait on
	// the rate limiter of the creates (the benchmark saw them take a fifth
	// of it) and never overflow the broadcaster's queue while they wait.
	eventBroadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: eventsClient.CoreV1().Events("")})
	return eventBroadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controllerAgentName})
}

// databaseChangeNeedsSync filters Database updates. A resync (same
// resourceVersion) is kept: it is the periodic check for what the filtered
// informers cannot see. A change of status alone, such as the controller's
// own status write, is dropped: nothing to converge changed. Except the
// version the data runs and its featureCompatibilityVersion: the version
// rules read them, so a change may allow what was refused; the restore:
// once it has completed, the pods no longer mount the backup; and the
// parameters read at start: the pods' command line is built from them.
func databaseChangeNeedsSync(old, new *dbv1alpha1.Database) bool {
	if old.ResourceVersion == new.ResourceVersion {
		return true
	}
	return old.Generation != new.Generation ||
		!equality.Semantic.DeepEqual(old.DeletionTimestamp, new.DeletionTimestamp) ||
		old.UID != new.UID ||
		!equality.Semantic.DeepEqual(old.Status.Restore, new.Status.Restore) ||
		old.Status.CurrentVersion != new.Status.CurrentVersion ||
		old.Status.FeatureCompatibilityVersion != new.Status.FeatureCompatibilityVersion ||
		!equality.Semantic.DeepEqual(startParameters(old), startParameters(new))
}

// startParameters are status.parameters.start, nil without them.
func startParameters(db *dbv1alpha1.Database) map[string]string {
	if db.Status.Parameters == nil {
		return nil
	}
	return db.Status.Parameters.Start
}

// Cached is each of the controller's informer caches by the kind of
// object it holds: what it keeps in memory (the metric of it,
// metrics.RegisterCached).
func (c *Controller) Cached() map[string][]cache.Store { return c.cached }

// Run waits for the caches, starts workers and blocks until ctx is done.
// Then it stops handing out work, lets in-flight syncs finish for up to
// drainTimeout, and returns.
func (c *Controller) Run(ctx context.Context, workers int, drainTimeout time.Duration) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)

	logger.Info("Starting Database controller")
	logger.Info("Waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.cachesSynced...); !ok {
		// It waits until ctx is done: a stop, not a failure. Why the
		// caches did not fill (an API server that does not answer, a
		// permission missing) is what the informers log.
		c.workqueue.ShutDown()
		logger.Info("Stopped before the informer caches synced")
		return nil
	}

	c.listCredentials(ctx)

	// Syncs run on a context that outlives ctx by drainTimeout, so that a
	// shutdown does not cut a sync off between two writes.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	logger.Info("Starting workers", "count", workers)
	for range workers {
		wg.Go(func() { c.runWorker(workCtx) })
	}
	logger.Info("Started workers")
	if c.logins != nil {
		wg.Go(func() { c.logins.Run(ctx) })
	}
	<-ctx.Done()

	logger.Info("Shutting down workers", "drainTimeout", drainTimeout)
	c.workqueue.ShutDown()
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
		logger.Info("Workers finished")
	case <-time.After(drainTimeout):
		logger.Info("In-flight syncs did not finish in time; cancelling them")
		cancelWork()
		<-drained
	}
	return nil
}

// listCredentials has the reconciler read the credentials Secrets of the
// cached Databases, one paged LIST per namespace, before the first passes:
// each first pass over a Database with a ready server would otherwise read
// its own, and at a restart over many Databases those reads queue behind
// the client's rate limit. A namespace whose LIST fails is only logged:
// its passes read their Secrets one by one, as before.
func (c *Controller) listCredentials(ctx context.Context) {
	logger := klog.FromContext(ctx)
	dbs, err := c.databasesLister.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing the cached Databases")
		return
	}
	byNamespace := map[string][]*dbv1alpha1.Database{}
	for _, db := range dbs {
		byNamespace[db.Namespace] = append(byNamespace[db.Namespace], db)
	}
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		start := c.clock.Now()
		kept, err := c.reconciler.ListCredentials(ctx, ns, byNamespace[ns])
		if err != nil {
			logger.Error(err, "Reading the credentials Secrets before the first passes; each pass reads its own", "namespace", ns)
			continue
		}
		logger.V(2).Info("Read the credentials Secrets before the first passes", "namespace", ns, "secrets", kept, "duration", c.clock.Since(start))
	}
}

// HasSynced reports whether every informer cache has synced.
func (c *Controller) HasSynced() bool {
	for _, synced := range c.cachesSynced {
		if !synced() {
			return false
		}
	}
	return true
}

// runWorker processes work items until the queue shuts down.
func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one Database. A transient error requeues it with
// rate limiting; success forgets its failure history.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	objRef, shutdown := c.workqueue.Get()
	if shutdown {
		return false
	}
	defer c.workqueue.Done(objRef)

	start := c.clock.Now()
	skipped, err := c.syncHandler(ctx, objRef)
	if err == nil {
		result := "success"
		if skipped {
			result = "skipped"
		}
		c.metrics.ObserveSync(result, c.clock.Since(start))
		c.workqueue.Forget(objRef)
		return true
	}
	c.metrics.ObserveSync("error", c.clock.Since(start))
	utilruntime.HandleErrorWithContext(ctx, err, "Error syncing; requeuing for later retry", "objectReference", objRef)
	c.metrics.ObserveQueued(queuedByTimer, queuedRetry)
	c.workqueue.AddRateLimited(objRef)
	return true
}

// syncHandler reads one Database from the lister, hands it to the
// reconciler, and sorts the outcome once: a problem that needs a person is
// already in the status and a Warning event, and is not retried until
// something changes, except one that may clear by itself, which is looked
// at again on a capped backoff, as is a status that may change unseen;
// waiting for the cache ends quietly; anything else is returned, to be
// retried with rate limiting. It reports skipped when the Database was
// settled and nothing it depends on changed (reconcile.Reconciler.Sync).
func (c *Controller) syncHandler(ctx context.Context, objectRef cache.ObjectName) (skipped bool, err error) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "database", objectRef)
	ctx = klog.NewContext(ctx, logger)

	db, err := c.databasesLister.Databases(objectRef.Namespace).Get(objectRef.Name)
	if apierrors.IsNotFound(err) {
		// Deleted: the garbage collector removes the children through their
		// owner references, and the PVC retention policy decides the data.
		// Its backups remain, and are deleted with their files when asked.
		logger.V(4).Info("Database no longer exists")
		c.reconciler.Forget(objectRef.Namespace, objectRef.Name)
		return false, c.syncBackups(ctx, objectRef, nil)
	}
	if err != nil {
		return false, err
	}

	skipped, err = c.reconciler.Sync(ctx, db)
	if berr := c.syncBackups(ctx, objectRef, db); berr != nil && (err == nil || !isTransient(err)) {
		if reconcile.NamespaceDeleting(berr) {
			logger.V(2).Info("Its namespace is being deleted: no backup is made in it", "refused", berr.Error())
			return false, nil
		}
		return false, berr
	}
	var (
		problem *status.Problem
		recheck *reconcile.RecheckError
	)
	switch {
	case errors.As(err, &recheck) && recheck.After > 0:
		// A steady pace, not a backoff: a replicated Database's servers;
		// or once, when a cause falls due.
		c.recheck.Forget(objectRef)
		change := queuedPoll
		if recheck.Due {
			change = queuedRecheck
		}
		c.metrics.ObserveQueued(queuedByTimer, change)
		c.workqueue.AddAfter(objectRef, recheck.After)
	case recheck != nil || (errors.As(err, &problem) && problem.Recheck):
		c.metrics.ObserveQueued(queuedByTimer, queuedRecheck)
		c.workqueue.AddAfter(objectRef, c.recheck.When(objectRef))
	default:
		c.recheck.Forget(objectRef)
	}
	switch {
	case err == nil:
		return skipped, nil
	case recheck != nil:
		logger.V(4).Info("Looking again soon", "why", recheck.Why)
		return false, nil
	case problem != nil:
		logger.V(2).Info("Needs a person", "reason", problem.Reason, "message", problem.Message)
		return false, nil
	case reconcile.IsWaiting(err):
		logger.V(4).Info("Waiting", "for", err.Error())
		return false, nil
	case reconcile.NamespaceDeleting(err):
		logger.V(2).Info("Its namespace is being deleted: nothing more is made in it", "refused", err.Error())
		return false, nil
	default:
		return false, err
	}
}

// syncBackups runs the Database's backups, and looks again at the schedule's
// next tick.
func (c *Controller) syncBackups(ctx context.Context, objectRef cache.ObjectName, db *dbv1alpha1.Database) error {
	next, err := c.backups.Sync(ctx, objectRef.Namespace, objectRef.Name, db)
	if next > 0 {
		c.metrics.ObserveQueued(queuedByTimer, queuedSchedule)
		c.workqueue.AddAfter(objectRef, next)
	}
	return err
}

// isTransient reports whether err is to be retried with rate limiting: not
// a problem for a person, a recheck, or a wait for the cache.
func isTransient(err error) bool {
	var (
		problem *status.Problem
		recheck *reconcile.RecheckError
	)
	return !errors.As(err, &problem) && !errors.As(err, &recheck) && !reconcile.IsWaiting(err) && !reconcile.NamespaceDeleting(err)
}

// enqueueBackupsDatabase puts the key of the Database a DatabaseBackup
// backs up on the work queue. It accepts tombstones.
func (c *Controller) enqueueBackupsDatabase(obj interface{}, change string) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if b, ok := obj.(*dbv1alpha1.DatabaseBackup); ok {
		c.metrics.ObserveQueued("DatabaseBackup", change)
		c.workqueue.Add(cache.ObjectName{Namespace: b.Namespace, Name: b.Spec.Database})
	}
}

// enqueueDatabase puts a Database's key on the work queue.
func (c *Controller) enqueueDatabase(obj interface{}) {
	if objectRef, err := cache.ObjectToName(obj); err != nil {
		utilruntime.HandleError(err)
	} else {
		c.workqueue.Add(objectRef)
	}
}

// enqueueByLabel enqueues the Database named by obj's instance label,
// whether it exists or not: the backups of a deleted Database are still
// synced. It accepts tombstones.
func (c *Controller) enqueueByLabel(obj interface{}, change string) {
	c.enqueueByLabelFor(obj, kindOf(obj), change)
}

// enqueueByLabelFor is enqueueByLabel for a change of an object of kind by,
// which need not be obj's.
func (c *Controller) enqueueByLabelFor(obj interface{}, by, change string) {
	object, ok := metaObject(obj)
	if !ok {
		return
	}
	name := object.GetLabels()[names.LabelInstance]
	if name == "" {
		return
	}
	c.enqueueFollowUp(cache.ObjectName{Namespace: object.GetNamespace(), Name: name}, by, change)
}

// enqueueNodesDatabases enqueues the Databases of the pods on node.
func (c *Controller) enqueueNodesDatabases(pods cache.Indexer, node string) {
	onNode, err := pods.ByIndex(reconcile.IndexNode, node)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, pod := range onNode {
		c.enqueueByLabelFor(pod, "Node", changeUpdate)
	}
}

// enqueueIndexed puts on the work queue the Databases that index holds
// under obj's namespace/name.
func (c *Controller) enqueueIndexed(databases cache.Indexer, index string, obj interface{}, change string) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	dbs, err := databases.ByIndex(index, o.GetNamespace()+"/"+o.GetName())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	by := kindOf(obj)
	for _, db := range dbs {
		c.metrics.ObserveQueued(by, change)
		c.enqueueDatabase(db)
	}
}

// enqueueClaimEvent puts on the work queue the Database of the Pending
// claim an event is about. Events about other claims, or about claims this
// controller does not manage (not in its filtered cache), are dropped.
func (c *Controller) enqueueClaimEvent(obj interface{}, change string) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	e, ok := obj.(*corev1.Event)
	if !ok || e.InvolvedObject.Kind != "PersistentVolumeClaim" {
		return
	}
	ref := reconcile.ClaimOf(e)
	claim, err := c.claimsLister.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil || claim.Status.Phase != corev1.ClaimPending {
		return
	}
	c.enqueueByLabelFor(claim, "Event", change)
}

// enqueueFollowUp puts a Database on the work queue, ahead of the Databases
// queued for other reasons, because one of its children, of kind by, had
// change.
func (c *Controller) enqueueFollowUp(key cache.ObjectName, by, change string) {
	c.metrics.ObserveQueued(by, change)
	c.order.Prefer(key)
	if change == changeUpdate && c.comingUp(key) && !c.order.Holds(key) {
		// The changes that come in the meantime join this one; one that
		// waits in the queue already is a pass to come, which sees them.
		// An add or a delete is not made to wait: the add of a child a
		// pass waits for is the next step of the Database's making.
		c.workqueue.AddAfter(key, c.followUpBatch)
		return
	}
	c.workqueue.Add(key)
}

// comingUp reports whether the Database key is being made and has never
// run: not acted on yet, or Provisioning, and not being deleted.
func (c *Controller) comingUp(key cache.ObjectName) bool {
	db, err := c.databasesLister.Databases(key.Namespace).Get(key.Name)
	if err != nil || db.DeletionTimestamp != nil {
		return false
	}
	switch db.Status.Phase {
	case "", dbv1alpha1.PhasePending, dbv1alpha1.PhaseProvisioning:
		return true
	}
	return false
}

// metaObject returns obj's metadata, unwrapping a tombstone.
func metaObject(obj interface{}) (metav1.Object, bool) {
	if object, ok := obj.(metav1.Object); ok {
		return object, true
	}
	tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
	if !ok {
		utilruntime.HandleError(errors.New("error decoding object, invalid type"))
		return nil, false
	}
	object, ok := tombstone.Obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(errors.New("error decoding object tombstone, invalid type"))
	}
	return object, ok
}

// handleObject enqueues the Database that controls obj, if any, unless obj
// is only the echo of this process's create. It accepts tombstones, so a
// deleted child brings its Database back to be repaired.
func (c *Controller) handleObject(obj interface{}, change string) {
	object, ok := metaObject(obj)
	if !ok {
		return
	}
	ownerRef := metav1.GetControllerOf(object)
	if ownerRef == nil || ownerRef.Kind != "Database" || ownerRef.APIVersion != dbv1alpha1.SchemeGroupVersion.String() {
		return
	}
	db, err := c.databasesLister.Databases(object.GetNamespace()).Get(ownerRef.Name)
	if err != nil || db.UID != ownerRef.UID {
		// Orphaned, or owned by an earlier Database of the same name.
		return
	}
	kind := kindOf(obj)
	if change == changeAdd && c.reconciler.Echo(reconcile.ChildKey{Kind: kind, Namespace: object.GetNamespace(), Name: object.GetName()}, object.GetResourceVersion()) {
		// The add of a child as this process created it: the pass that
		// created it went on with it, and no pass waits for it.
		return
	}
	c.enqueueFollowUp(cache.MetaObjectToName(db), kind, change)
}
