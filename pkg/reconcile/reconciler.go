// Package reconcile holds the sync pass of one Database: it plans the
// desired state (package plan), brings the children to it step by step, and
// writes the status. The loop that feeds it (controller.go) only reads the
// Database from its lister and sorts the outcome.
//
// The steps, in order, one file each:
//   - credentials.go: the credentials Secret, made once, never rewritten;
//   - children.go: the Services and the StatefulSet, created or repaired;
//   - pods.go: pods of an earlier revision that were never scheduled,
//     replaced so that a rolling update can go on;
//   - storage.go: the data volume claims, grown to spec.storage.size;
//   - feature_compatibility.go: MongoDB's featureCompatibilityVersion,
//     set by a Job after an upgrade;
//   - status_writer.go: the status, written only when it changed.
//
// Every step returns one outcome: nil, a *status.Problem (a person must
// act), a *WaitingError (the informer cache has not caught up with a
// create), or any other error, which is transient. Sync adds one: a
// *RecheckError, when the status it wrote may change unseen.
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
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	dblisters "github.com/dbcontroller/database-controller/pkg/generated/listers/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/pgsql"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/status"
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
	// The listers of the children, from informers limited to objects
	// labelled as managed by this controller. The Secret lister holds no data.
	StatefulSets appslisters.StatefulSetLister
	Services     corelisters.ServiceLister
	Secrets      corelisters.SecretLister
	Jobs         batchlisters.JobLister
	// Backups lists DatabaseBackups: the final one, and the one restored.
	Backups dblisters.DatabaseBackupLister
	// The indexers of the claims, pods and Jobs informers (limited as the
	// listers are), with IndexInstance, and of the DatabaseBackups
	// informer, with backup.IndexDatabase: a Database's own objects are
	// read through them.
	ClaimIndex, PodIndex, JobIndex, BackupIndex cache.Indexer
	// ClaimEventIndex is the indexer of an informer of the events about
	// claims, with IndexClaim: why a claim waits for its volume.
	ClaimEventIndex cache.Indexer
	// Recorder emits events on Databases.
	Recorder record.EventRecorder
	// Clock stamps condition transitions and ages the expectations.
	Clock clock.PassiveClock
	// Random is the source of generated passwords: crypto/rand in production.
	Random io.Reader
	// SQL talks to the servers of replicated Databases; pgsql.New() when nil.
	SQL pgsql.Client
}

// Reconciler runs sync passes. It is safe for concurrent use by several
// workers, each on its own Database.
type Reconciler struct {
	kube         kubernetes.Interface
	dbs          clientset.Interface
	statefulSets statefulSetAdapter
	services     serviceAdapter
	secrets      corelisters.SecretLister
	jobs         batchlisters.JobLister
	backups      dblisters.DatabaseBackupLister
	index        indexes
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	random       io.Reader
	// expectations remembers the children this process created that the
	// informers have not shown yet, so a lagging cache is not mistaken for
	// a missing or a foreign object.
	expectations *Expectations
	// conflicts remembers children whose name another owner's object took,
	// so that the next look is a read, not a create that fails.
	conflicts *ttlSet[ChildKey, struct{}]
	// refusedGrowth remembers the claims the cluster refused to grow, so
	// that the refused patch is not sent again until something that could
	// change the answer changes.
	refusedGrowth *ttlSet[ChildKey, refusedGrowth]
	// settled remembers, for each Database whose last pass settled, the
	// fingerprint of what that pass read (settled.go).
	settled *ttlSet[settledKey, uint64]
	// sql talks to the servers of replicated Databases, with the
	// credentials creds read from their Secrets (by the Secret's UID) when
	// they change; an entry goes after memoryTTL, so that those of deleted
	// Databases do not stay.
	sql   pgsql.Client
	creds *ttlSet[types.UID, cachedCredentials]
}

// memoryTTL bounds how long a conflict or a refused growth is remembered:
// past it, the write is tried again once.
const memoryTTL = time.Hour

// New returns a Reconciler over cfg.
func New(cfg Config) *Reconciler {
	if cfg.SQL == nil {
		cfg.SQL = pgsql.New()
	}
	return &Reconciler{
		kube:         cfg.KubeClient,
		dbs:          cfg.DBClient,
		statefulSets: statefulSetAdapter{client: cfg.KubeClient, lister: cfg.StatefulSets},
		services:     serviceAdapter{client: cfg.KubeClient, lister: cfg.Services},
		secrets:      cfg.Secrets,
		jobs:         cfg.Jobs,
		backups:      cfg.Backups,
		index: indexes{claims: cfg.ClaimIndex, pods: cfg.PodIndex, jobs: cfg.JobIndex, backups: cfg.BackupIndex,
			claimEvents: cfg.ClaimEventIndex},
		recorder:     cfg.Recorder,
		clock:        cfg.Clock,
		random:       cfg.Random,
		expectations: NewExpectations(cfg.Clock, ExpectationsTTL),

		conflicts:     newTTLSet[ChildKey, struct{}](cfg.Clock, memoryTTL),
		refusedGrowth: newTTLSet[ChildKey, refusedGrowth](cfg.Clock, memoryTTL),
		settled:       newTTLSet[settledKey, uint64](cfg.Clock, SettledTTL),
		sql:           cfg.SQL,
		creds:         newTTLSet[types.UID, cachedCredentials](cfg.Clock, memoryTTL),
	}
}

// pass is one sync of one Database: what was planned and observed.
type pass struct {
	r  *Reconciler
	db *dbv1alpha1.Database
	// plan is the desired state.
	plan *plan.Plan
	// statefulSet observed (or returned by the last write), nil if none.
	statefulSet *appsv1.StatefulSet
	// claims and pods observed: every one with the Database's selector labels.
	claims []*corev1.PersistentVolumeClaim
	pods   []*corev1.Pod
	// created lists the children this pass created, as "Kind name", for one
	// event at the end of the pass.
	created []string
	// featureCompatibility is the FeatureCompatibility condition to report,
	// and featureCompatibilitySet a featureCompatibilityVersion just set.
	featureCompatibility    *metav1.Condition
	featureCompatibilitySet string
	// recheck, when set, says why to look again soon although no informer
	// will say that anything changed.
	recheck string
	// terminating, when set, is the state of a deletion the controller
	// holds with its finalizer; released says it let the Database go.
	terminating *status.Termination
	released    bool
	// replication and replicating are, for a replicated Database, its
	// replication status and Replicating condition; pollAfter is when to
	// ask its servers again.
	replication *dbv1alpha1.ReplicationStatus
	replicating *metav1.Condition
	pollAfter   time.Duration
}

// Sync brings db's children to its spec and writes its status when it
// changed. It reads only from the listers, except where a step says so.
// It returns nil, a *status.Problem or a *RecheckError once the status is
// written, a *WaitingError, or a transient error. It reports skipped when
// db was settled and nothing it depends on changed, so no pass ran.
func (r *Reconciler) Sync(ctx context.Context, db *dbv1alpha1.Database) (skipped bool, err error) {
	if db.DeletionTimestamp != nil && !slices.Contains(db.Finalizers, dbv1alpha1.FinalizerDatabase) {
		// Being deleted, and nothing to do first: the garbage collector
		// removes the children through their owner references.
		klog.FromContext(ctx).V(4).Info("Database is being deleted")
		return false, nil
	}
	key := settledKey{Namespace: db.Namespace, Name: db.Name}
	fingerprint, known := r.fingerprint(db)
	if last, settled := r.settled.get(key); settled && known && last == fingerprint && db.DeletionTimestamp == nil {
		klog.FromContext(ctx).V(5).Info("Settled, and nothing it depends on changed: skipping the pass")
		return true, nil
	}
	r.settled.remove(key)
	err = r.sync(ctx, db)
	if err == nil && known && db.DeletionTimestamp == nil {
		r.settled.put(key, fingerprint)
	}
	return false, err
}

// sync is one pass over db, and its status.
func (r *Reconciler) sync(ctx context.Context, db *dbv1alpha1.Database) error {
	p := &pass{r: r, db: db}
	err := p.run(ctx)
	if p.released {
		// The finalizer is gone, and the Database with it: no status to write.
		return err
	}
	if len(p.created) > 0 {
		// One event for everything a pass created, also when a later step
		// failed: four events per new Database would double its writes.
		r.recorder.Event(db, corev1.EventTypeNormal, ReasonCreated, "Created "+strings.Join(p.created, ", "))
	}
	var problem *status.Problem
	if err != nil && !errors.As(err, &problem) {
		// Transient, or waiting for the cache: writing status now would
		// report a state that is already stale.
		return err
	}
	if werr := r.writeStatus(ctx, p, problem); werr != nil {
		return werr
	}
	if err == nil && p.recheck != "" {
		return &RecheckError{Why: p.recheck}
	}
	if err == nil && p.pollAfter > 0 {
		return &RecheckError{Why: "asking the replicated servers again", After: p.pollAfter}
	}
	return err
}

// run plans, then converges the children in dependency order: the Secret
// the pods read, the Services, the StatefulSet and its pods, its claims,
// then what follows a rollout. It stops at the first step that does not
// succeed, touching nothing after it.
func (p *pass) run(ctx context.Context) error {
	observed, err := p.observe()
	if err != nil {
		return err
	}
	p.statefulSet = observed.StatefulSet
	p.claims = observed.Claims
	if p.pods, err = p.r.index.ownPods(p.db); err != nil {
		return err
	}
	if p.db.DeletionTimestamp == nil {
		if observed.Restore, err = p.restoreSource(); err != nil {
			p.plan = plan.Compute(p.db, observed)
			return err
		}
	}
	p.plan = plan.Compute(p.db, observed)
	if p.db.DeletionTimestamp != nil {
		return p.runDeleting(ctx, observed)
	}
	if err := p.ensureFinalizer(ctx); err != nil {
		return err
	}
	if p.plan.Problem != nil {
		if p.plan.Problem.Reason == engine.ReasonFeatureCompatibilityPending {
			// The refusal waits for this step: it must go on.
			if err := p.ensureFeatureCompatibility(ctx); err != nil {
				return err
			}
		}
		return p.plan.Problem
	}
	for _, step := range []func(context.Context) error{
		p.ensureSecret,
		p.ensureServices,
		p.ensureStatefulSet,
		p.ensureReplication,
		p.replaceUnscheduledPods,
		p.growClaims,
		p.ensureFeatureCompatibility,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// observe reads what the plan needs from the listers.
func (p *pass) observe() (plan.Observed, error) {
	var observed plan.Observed
	sts, err := p.r.statefulSets.cached(p.db.Namespace, names.StatefulSetName(p.db))
	switch {
	case err == nil && metav1.IsControlledBy(sts, p.db):
		observed.StatefulSet = sts
	case err != nil && !apierrors.IsNotFound(err):
		return observed, err
	}
	claims, err := p.r.index.ownClaims(p.db)
	if err != nil {
		return observed, err
	}
	observed.Claims = claims
	return observed, nil
}
