package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/apply"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	dbapply "github.com/dbcontroller/database-controller/pkg/generated/applyconfiguration/dbcontroller/v1alpha1"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	dbscheme "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/scheme"
	informers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions/dbcontroller/v1alpha1"
	listers "github.com/dbcontroller/database-controller/pkg/generated/listers/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/status"
)

const (
	// controllerAgentName is the component name on events and the field
	// manager of every write.
	controllerAgentName = "database-controller"

	// Reasons of Normal events.
	ReasonCreated = "Created"
	ReasonUpdated = "Updated"
	ReasonRunning = "Running"

	// createdTTL bounds how long a create this process made waits to show up
	// in the informer cache before the controller stops trusting it.
	createdTTL = time.Minute

	// passwordLength and passwordAlphabet shape generated passwords: 24
	// characters of 62 give about 143 bits, and need no escaping in a URI.
	passwordLength   = 24
	passwordAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// Controller keeps each Database's Secret, Services and StatefulSet in the
// shape its spec asks for, and reports what it observes in its status.
type Controller struct {
	// kubeclientset writes Secrets, Services, StatefulSets and events.
	kubeclientset kubernetes.Interface
	// dbclientset writes Database status.
	dbclientset clientset.Interface

	// databasesLister reads Databases from the shared informer's cache.
	databasesLister listers.DatabaseLister
	// databasesSynced reports whether the Database cache has synced.
	databasesSynced cache.InformerSynced
	// statefulSetsLister reads the StatefulSets this controller manages.
	statefulSetsLister appslisters.StatefulSetLister
	// statefulSetsSynced reports whether the StatefulSet cache has synced.
	statefulSetsSynced cache.InformerSynced
	// servicesLister reads the Services this controller manages.
	servicesLister corelisters.ServiceLister
	// servicesSynced reports whether the Service cache has synced.
	servicesSynced cache.InformerSynced
	// secretsLister reads the Secrets this controller manages, without their data.
	secretsLister corelisters.SecretLister
	// secretsSynced reports whether the Secret cache has synced.
	secretsSynced cache.InformerSynced
	// claimsLister reads the PersistentVolumeClaims made from the
	// StatefulSets' claim templates, to grow them with spec.storage.size.
	claimsLister corelisters.PersistentVolumeClaimLister
	// claimsSynced reports whether the PersistentVolumeClaim cache has synced.
	claimsSynced cache.InformerSynced

	// workqueue holds the Databases to sync. It is rate limited, so that a
	// failing Database is retried with backoff, and it never holds a key twice.
	workqueue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// recorder emits events on Databases.
	recorder record.EventRecorder
	// clock stamps condition transitions and ages the created set.
	clock clock.PassiveClock
	// random is the source of generated passwords: crypto/rand in production.
	random io.Reader
	// created remembers the children this process created that the
	// informers have not shown yet, so a lagging cache is not mistaken for
	// a missing or a foreign object.
	created *createdSet
	// metrics records the outcome and duration of each sync.
	metrics syncObserver
	// services and statefulSets read and write those children for ensureChild.
	services     childKind[*corev1.Service, *corev1ac.ServiceApplyConfiguration]
	statefulSets childKind[*appsv1.StatefulSet, *appsv1ac.StatefulSetApplyConfiguration]
}

// syncObserver is told the outcome of every sync.
type syncObserver interface {
	ObserveSync(result string, duration time.Duration)
}

type noopObserver struct{}

func (noopObserver) ObserveSync(string, time.Duration) {}

// NewController returns a controller fed by the given informers. The child
// informers should be limited to objects labelled as managed by this
// controller. Events are written with eventsclientset.
func NewController(
	ctx context.Context,
	kubeclientset kubernetes.Interface,
	eventsclientset kubernetes.Interface,
	dbclientset clientset.Interface,
	statefulSetInformer appsinformers.StatefulSetInformer,
	serviceInformer coreinformers.ServiceInformer,
	secretInformer coreinformers.SecretInformer,
	claimInformer coreinformers.PersistentVolumeClaimInformer,
	databaseInformer informers.DatabaseInformer,
	random io.Reader,
	clk clock.PassiveClock,
) (*Controller, error) {
	logger := klog.FromContext(ctx)

	utilruntime.Must(dbscheme.AddToScheme(scheme.Scheme))
	eventBroadcaster := record.NewBroadcaster(record.WithContext(ctx))
	eventBroadcaster.StartStructuredLogging(0)
	// Events go through a client of their own, so that they never wait on
	// the rate limiter of the creates (the benchmark saw them take a fifth
	// of it) and never overflow the broadcaster's queue while they wait.
	eventBroadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: eventsclientset.CoreV1().Events("")})
	recorder := eventBroadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controllerAgentName})

	c := &Controller{
		kubeclientset:      kubeclientset,
		dbclientset:        dbclientset,
		databasesLister:    databaseInformer.Lister(),
		databasesSynced:    databaseInformer.Informer().HasSynced,
		statefulSetsLister: statefulSetInformer.Lister(),
		statefulSetsSynced: statefulSetInformer.Informer().HasSynced,
		servicesLister:     serviceInformer.Lister(),
		servicesSynced:     serviceInformer.Informer().HasSynced,
		secretsLister:      secretInformer.Lister(),
		secretsSynced:      secretInformer.Informer().HasSynced,
		claimsLister:       claimInformer.Lister(),
		claimsSynced:       claimInformer.Informer().HasSynced,
		workqueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "databases"},
		),
		recorder: recorder,
		clock:    clk,
		random:   random,
		created:  newCreatedSet(clk),
		metrics:  noopObserver{},
	}
	c.services, c.statefulSets = serviceKind(c), statefulSetKind(c)

	logger.Info("Setting up event handlers")
	if _, err := databaseInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueDatabase,
		UpdateFunc: func(old, new interface{}) {
			if databaseChangeNeedsSync(old.(*dbv1alpha1.Database), new.(*dbv1alpha1.Database)) {
				c.enqueueDatabase(new)
			}
		},
	}); err != nil {
		return nil, err
	}
	childHandler := cache.ResourceEventHandlerFuncs{
		AddFunc: c.handleObject,
		UpdateFunc: func(old, new interface{}) {
			if old.(metav1.Object).GetResourceVersion() == new.(metav1.Object).GetResourceVersion() {
				// A periodic resync of an unchanged child: the Database's own
				// resync already covers it.
				return
			}
			c.handleObject(new)
		},
		DeleteFunc: c.handleObject,
	}
	for _, inf := range []cache.SharedIndexInformer{statefulSetInformer.Informer(), serviceInformer.Informer(), secretInformer.Informer()} {
		if _, err := inf.AddEventHandler(childHandler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// databaseChangeNeedsSync filters Database updates. A resync (same
// resourceVersion) is kept: it is the periodic check for what the filtered
// informers cannot see. A change of status alone, such as the controller's
// own status write, is dropped: nothing to converge changed.
func databaseChangeNeedsSync(old, new *dbv1alpha1.Database) bool {
	if old.ResourceVersion == new.ResourceVersion {
		return true
	}
	return old.Generation != new.Generation ||
		!equality.Semantic.DeepEqual(old.DeletionTimestamp, new.DeletionTimestamp) ||
		old.UID != new.UID
}

// Run waits for the caches, starts workers and blocks until ctx is done.
// Then it stops handing out work, lets in-flight syncs finish for up to
// drainTimeout, and returns.
func (c *Controller) Run(ctx context.Context, workers int, drainTimeout time.Duration) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)

	logger.Info("Starting Database controller")
	logger.Info("Waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.databasesSynced, c.statefulSetsSynced, c.servicesSynced, c.secretsSynced, c.claimsSynced); !ok {
		c.workqueue.ShutDown()
		return fmt.Errorf("failed to wait for caches to sync")
	}

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

// HasSynced reports whether every informer cache has synced.
func (c *Controller) HasSynced() bool {
	return c.databasesSynced() && c.statefulSetsSynced() && c.servicesSynced() && c.secretsSynced() && c.claimsSynced()
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
	err := c.syncHandler(ctx, objRef)
	if err == nil {
		c.metrics.ObserveSync("success", c.clock.Since(start))
		c.workqueue.Forget(objRef)
		return true
	}
	c.metrics.ObserveSync("error", c.clock.Since(start))
	utilruntime.HandleErrorWithContext(ctx, err, "Error syncing; requeuing for later retry", "objectReference", objRef)
	c.workqueue.AddRateLimited(objRef)
	return true
}

// syncHandler brings one Database's children to the desired state and
// writes its status when it changed. It reads only from the listers.
func (c *Controller) syncHandler(ctx context.Context, objectRef cache.ObjectName) error {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "database", objectRef)
	ctx = klog.NewContext(ctx, logger)

	db, err := c.databasesLister.Databases(objectRef.Namespace).Get(objectRef.Name)
	if apierrors.IsNotFound(err) {
		// Deleted: the garbage collector removes the children through their
		// owner references, and the PVC retention policy decides the data.
		logger.V(4).Info("Database no longer exists")
		return nil
	}
	if err != nil {
		return err
	}
	if db.DeletionTimestamp != nil {
		// Being deleted: creating children now would only race the collector.
		return nil
	}

	s := c.newSync(db)
	err = s.run(ctx)
	if len(s.created) > 0 {
		// One event for everything a pass created, also when a later step
		// failed: four events per new Database would double its writes.
		c.recorder.Event(db, corev1.EventTypeNormal, ReasonCreated, "Created "+strings.Join(s.created, ", "))
	}
	if err != nil {
		return err
	}
	if s.waiting {
		// A child this process created is not in the cache yet; its informer
		// event will bring the Database back. Writing status now would
		// report a state that is already stale.
		return nil
	}
	return c.updateStatus(ctx, db, s)
}

// updateStatus writes the computed status when it differs from the stored
// one, and emits events for the transitions that matter to a person.
func (c *Controller) updateStatus(ctx context.Context, db *dbv1alpha1.Database, s *databaseSync) error {
	newStatus := status.Compute(status.Input{
		Database:    db,
		Profile:     s.profile,
		StatefulSet: s.statefulSet,
		Image:       s.image,
		Problem:     s.problem,
		Now:         metav1.NewTime(c.clock.Now()),
	})
	if equality.Semantic.DeepEqual(db.Status, newStatus) {
		return nil
	}
	// Server-side apply of the whole status: the controller owns every
	// status field, and an apply needs no resourceVersion, so a lister that
	// lags behind the last status write causes no conflict.
	st := &dbapply.DatabaseStatusApplyConfiguration{}
	if err := apply.ToObject(newStatus, st); err != nil {
		return err
	}
	ac := dbapply.Database(db.Name, db.Namespace).WithStatus(st)
	if _, err := c.dbclientset.DbcontrollerV1alpha1().Databases(db.Namespace).ApplyStatus(ctx, ac, applyOptions); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}

	oldReady := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionReady)
	newReady := meta.FindStatusCondition(newStatus.Conditions, dbv1alpha1.ConditionReady)
	if p := s.problem; p != nil && (oldReady == nil || oldReady.Reason != p.Reason || oldReady.Message != p.Message) {
		c.recorder.Event(db, corev1.EventTypeWarning, p.Reason, p.Message)
	}
	if newStatus.Phase == dbv1alpha1.PhaseRunning && db.Status.Phase != dbv1alpha1.PhaseRunning && newReady != nil {
		c.recorder.Eventf(db, corev1.EventTypeNormal, ReasonRunning, "%s %s is running: %s", db.Spec.Engine, newStatus.CurrentVersion, newReady.Message)
	}
	return nil
}

// databaseSync is one pass over one Database: what was decided and observed.
type databaseSync struct {
	c  *Controller
	db *dbv1alpha1.Database
	// profile of the engine, nil when the engine is unknown.
	profile *engine.Profile
	// image the StatefulSet should run, "" when the spec is invalid.
	image string
	// statefulSet observed (or returned by the last write), nil if none.
	statefulSet *appsv1.StatefulSet
	// problem blocks progress until a person acts.
	problem *status.Problem
	// waiting is set when a child this process created is not cached yet.
	waiting bool
	// created lists the children this pass created, as "Kind name", for one
	// event at the end of the pass.
	created []string
}

func (c *Controller) newSync(db *dbv1alpha1.Database) *databaseSync {
	return &databaseSync{c: c, db: db}
}

// run validates what the schema cannot, then converges the children in
// dependency order: the Secret the pods read, the Services, the StatefulSet.
// It stops at the first problem, touching nothing after it.
func (s *databaseSync) run(ctx context.Context) error {
	c, db := s.c, s.db
	// The StatefulSet as observed, for status, whatever happens next.
	if sts, err := c.statefulSetsLister.StatefulSets(db.Namespace).Get(builder.StatefulSetName(db)); err == nil {
		if metav1.IsControlledBy(sts, db) {
			s.statefulSet = sts
		}
	} else if !apierrors.IsNotFound(err) {
		return err
	}

	if s.problem = s.validate(); s.problem != nil {
		return nil
	}
	if err := s.ensureSecret(ctx); err != nil || s.problem != nil || s.waiting {
		return err
	}
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{builder.NewHeadlessService(db, s.profile), builder.NewService(db, s.profile)} {
		if _, err := ensureChild(ctx, s, c.services, svc, *svc.Name); err != nil || s.problem != nil || s.waiting {
			return err
		}
	}
	storage := builder.StorageOf(db)
	if s.statefulSet != nil {
		// The claim template cannot change once created; keep what is there.
		if existing, ok := builder.StorageOfStatefulSet(s.statefulSet); ok {
			storage = existing
		}
	}
	desired := builder.NewStatefulSet(db, s.profile, s.image, storage)
	sts, err := ensureChild(ctx, s, c.statefulSets, desired, *desired.Name)
	if err != nil || s.problem != nil || s.waiting {
		return err
	}
	s.statefulSet = sts
	return s.growClaims(ctx)
}

// growClaims raises the storage request of every data volume claim of the
// StatefulSet that is below spec.storage.size. Claim templates cannot
// change, so this is how a volume grows; it never shrinks one. A claim the
// cluster refuses to resize (its StorageClass does not allow expansion) is
// a problem for a person.
func (s *databaseSync) growClaims(ctx context.Context) error {
	c, db := s.c, s.db
	want := db.Spec.Storage.Size
	claims, err := c.claimsLister.PersistentVolumeClaims(db.Namespace).List(labels.SelectorFromSet(builder.SelectorLabels(db)))
	if err != nil {
		return err
	}
	prefix := builder.DataVolume + "-" + builder.StatefulSetName(db) + "-"
	for _, claim := range claims {
		if !strings.HasPrefix(claim.Name, prefix) {
			continue
		}
		have := claim.Spec.Resources.Requests[corev1.ResourceStorage]
		if want.Cmp(have) <= 0 {
			continue
		}
		patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{"storage":%q}}}}`, want.String())
		_, err := c.kubeclientset.CoreV1().PersistentVolumeClaims(db.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: controllerAgentName})
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			s.problem = &status.Problem{Reason: status.ReasonStorageResizeFailed, Message: fmt.Sprintf(
				"cannot grow PersistentVolumeClaim %s from %s to %s: %s; the database keeps running on its current volumes",
				claim.Name, have.String(), want.String(), apiMessage(err))}
			return nil
		case err != nil:
			return fmt.Errorf("growing PersistentVolumeClaim %s: %w", claim.Name, err)
		}
		c.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Requested %s for PersistentVolumeClaim %s (was %s)", want.String(), claim.Name, have.String())
	}
	return nil
}

// validate checks what the schema cannot: that the version is in the
// catalog (or an image is given), and that it is not a downgrade.
func (s *databaseSync) validate() *status.Problem {
	db := s.db
	p, err := engine.Lookup(db.Spec.Engine)
	if err != nil {
		return &status.Problem{Reason: status.ReasonUnknownVersion, Message: err.Error()}
	}
	s.profile = p
	image, err := p.Image(db.Spec.Version, db.Spec.Image)
	if err != nil {
		return &status.Problem{Reason: status.ReasonUnknownVersion, Message: err.Error()}
	}
	if p.IsDowngrade(db.Status.CurrentVersion, db.Spec.Version) {
		return &status.Problem{Reason: status.ReasonDowngradeRefused, Message: fmt.Sprintf(
			"version %s is older than the running version %s; %s cannot be downgraded in place: set spec.version back to %s or later",
			db.Spec.Version, db.Status.CurrentVersion, db.Spec.Engine, db.Status.CurrentVersion)}
	}
	s.image = image
	return nil
}

func conflict(db *dbv1alpha1.Database, kind, name string) *status.Problem {
	return &status.Problem{Reason: status.ReasonResourceConflict, Message: fmt.Sprintf(
		"%s %s/%s already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name",
		kind, db.Namespace, name)}
}

// ensureSecret creates the credentials Secret once. It never rewrites an
// existing Secret, so users may rotate the password, and it never makes a
// new password for a database whose StatefulSet already exists: that data
// was initialised with the old one.
func (s *databaseSync) ensureSecret(ctx context.Context) error {
	c, db := s.c, s.db
	name := builder.SecretName(db)
	key := childKey{kind: "Secret", namespace: db.Namespace, name: name}
	existing, err := c.secretsLister.Secrets(db.Namespace).Get(name)
	if err == nil {
		c.created.observed(key)
		if !metav1.IsControlledBy(existing, db) {
			s.problem = conflict(db, "Secret", name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	if c.created.pending(key) {
		s.waiting = true
		return nil
	}
	secrets := c.kubeclientset.CoreV1().Secrets(db.Namespace)
	if s.statefulSet == nil {
		password, err := c.newPassword()
		if err != nil {
			return err
		}
		var secret corev1.Secret
		if err := apply.ToObject(builder.NewSecret(db, s.profile, password), &secret); err != nil {
			return err
		}
		_, err = secrets.Create(ctx, &secret, metav1.CreateOptions{FieldManager: controllerAgentName})
		if err == nil {
			c.created.add(key)
			s.created = append(s.created, "Secret "+name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", name, err)
		}
	}
	// Not in the cache, but it exists or the database was initialised:
	// look once at the live object before deciding.
	live, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s.problem = &status.Problem{Reason: status.ReasonCredentialsMissing, Message: fmt.Sprintf(
			"Secret %s/%s is gone but the database was initialised with its password; restore the Secret (keys username, password, database, host, port, uri) and the controller will continue. It will not generate a new password",
			db.Namespace, name)}
		return nil
	case err != nil:
		return err
	case !metav1.IsControlledBy(live, db):
		s.problem = conflict(db, "Secret", name)
	}
	return nil
}

// apiMessage is the API server's own message for err, else err's text.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

func (c *Controller) newPassword() (string, error) {
	out := make([]byte, 0, passwordLength)
	buf := make([]byte, 64)
	// Rejection sampling keeps every character equally likely.
	limit := byte(256 - 256%len(passwordAlphabet))
	for len(out) < passwordLength {
		if _, err := io.ReadFull(c.random, buf); err != nil {
			return "", fmt.Errorf("generating a password: %w", err)
		}
		for _, b := range buf {
			if b < limit && len(out) < passwordLength {
				out = append(out, passwordAlphabet[int(b)%len(passwordAlphabet)])
			}
		}
	}
	return string(out), nil
}

// childKind is how ensureChild reads and writes one kind of child.
type childKind[T metav1.Object, AC any] struct {
	kind   string
	cached func(namespace, name string) (T, error)
	live   func(ctx context.Context, namespace, name string) (T, error)
	create func(ctx context.Context, desired AC) (T, error)
	apply  func(ctx context.Context, desired AC) (T, error)
}

var (
	applyOptions  = metav1.ApplyOptions{FieldManager: controllerAgentName, Force: true}
	createOptions = metav1.CreateOptions{FieldManager: controllerAgentName}
)

func serviceKind(c *Controller) childKind[*corev1.Service, *corev1ac.ServiceApplyConfiguration] {
	client := func(ns string) typedcorev1.ServiceInterface { return c.kubeclientset.CoreV1().Services(ns) }
	return childKind[*corev1.Service, *corev1ac.ServiceApplyConfiguration]{
		kind: "Service",
		cached: func(ns, name string) (*corev1.Service, error) {
			return c.servicesLister.Services(ns).Get(name)
		},
		live: func(ctx context.Context, ns, name string) (*corev1.Service, error) {
			return client(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, ac *corev1ac.ServiceApplyConfiguration) (*corev1.Service, error) {
			obj := &corev1.Service{}
			if err := apply.ToObject(ac, obj); err != nil {
				return nil, err
			}
			return client(*ac.Namespace).Create(ctx, obj, createOptions)
		},
		apply: func(ctx context.Context, ac *corev1ac.ServiceApplyConfiguration) (*corev1.Service, error) {
			return client(*ac.Namespace).Apply(ctx, ac, applyOptions)
		},
	}
}

func statefulSetKind(c *Controller) childKind[*appsv1.StatefulSet, *appsv1ac.StatefulSetApplyConfiguration] {
	client := c.kubeclientset.AppsV1().StatefulSets
	return childKind[*appsv1.StatefulSet, *appsv1ac.StatefulSetApplyConfiguration]{
		kind: "StatefulSet",
		cached: func(ns, name string) (*appsv1.StatefulSet, error) {
			return c.statefulSetsLister.StatefulSets(ns).Get(name)
		},
		live: func(ctx context.Context, ns, name string) (*appsv1.StatefulSet, error) {
			return client(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, ac *appsv1ac.StatefulSetApplyConfiguration) (*appsv1.StatefulSet, error) {
			obj := &appsv1.StatefulSet{}
			if err := apply.ToObject(ac, obj); err != nil {
				return nil, err
			}
			return client(*ac.Namespace).Create(ctx, obj, createOptions)
		},
		apply: func(ctx context.Context, ac *appsv1ac.StatefulSetApplyConfiguration) (*appsv1.StatefulSet, error) {
			return client(*ac.Namespace).Apply(ctx, ac, applyOptions)
		},
	}
}

// ensureChild makes one child match desired and returns it as it now is.
// A child that is missing is created; one that drifted in a field the
// controller owns is repaired with server-side apply, which leaves fields
// that others set alone; one that another owner controls is reported as a
// conflict and left untouched.
func ensureChild[T metav1.Object, AC any](ctx context.Context, s *databaseSync, k childKind[T, AC], desired AC, name string) (T, error) {
	var zero T
	c, db := s.c, s.db
	key := childKey{kind: k.kind, namespace: db.Namespace, name: name}

	existing, err := k.cached(db.Namespace, name)
	switch {
	case err == nil:
		c.created.observed(key)
	case !apierrors.IsNotFound(err):
		return zero, err
	case c.created.pending(key):
		s.waiting = true
		return zero, nil
	default:
		created, err := k.create(ctx, desired)
		if err == nil {
			c.created.add(key)
			s.created = append(s.created, k.kind+" "+name)
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return zero, fmt.Errorf("creating %s %s: %w", k.kind, name, err)
		}
		// It exists but the filtered cache cannot see it: it is someone
		// else's, or ours with its labels removed. Look once to tell.
		if existing, err = k.live(ctx, db.Namespace, name); err != nil {
			return zero, err
		}
	}

	if !metav1.IsControlledBy(existing, db) {
		s.problem = conflict(db, k.kind, name)
		return zero, nil
	}
	field, err := apply.FirstDifference(existing, desired)
	if err != nil || field == "" {
		return existing, err
	}
	klog.FromContext(ctx).V(2).Info("Repairing drift", "kind", k.kind, "name", name, "field", field)
	updated, err := k.apply(ctx, desired)
	if err != nil {
		return zero, fmt.Errorf("applying %s %s: %w", k.kind, name, err)
	}
	c.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Updated %s %s to match the Database spec", k.kind, name)
	return updated, nil
}

// enqueueDatabase puts a Database's key on the work queue.
func (c *Controller) enqueueDatabase(obj interface{}) {
	if objectRef, err := cache.ObjectToName(obj); err != nil {
		utilruntime.HandleError(err)
	} else {
		c.workqueue.Add(objectRef)
	}
}

// handleObject enqueues the Database that controls obj, if any. It accepts
// tombstones, so a deleted child brings its Database back to be repaired.
func (c *Controller) handleObject(obj interface{}) {
	object, ok := obj.(metav1.Object)
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			utilruntime.HandleError(errors.New("error decoding object, invalid type"))
			return
		}
		if object, ok = tombstone.Obj.(metav1.Object); !ok {
			utilruntime.HandleError(errors.New("error decoding object tombstone, invalid type"))
			return
		}
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
	c.enqueueDatabase(db)
}

// childKey names one child object.
type childKey struct {
	kind, namespace, name string
}

// createdSet remembers children this process created until the informers
// show them, for at most createdTTL. Entries whose Database went away
// before its next sync are swept out at most once a TTL.
type createdSet struct {
	clock     clock.PassiveClock
	mu        sync.Mutex
	at        map[childKey]time.Time
	lastSweep time.Time
}

func newCreatedSet(clk clock.PassiveClock) *createdSet {
	return &createdSet{clock: clk, at: map[childKey]time.Time{}, lastSweep: clk.Now()}
}

func (s *createdSet) add(k childKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.at[k] = now
	if now.Sub(s.lastSweep) > createdTTL {
		for key, t := range s.at {
			if now.Sub(t) > createdTTL {
				delete(s.at, key)
			}
		}
		s.lastSweep = now
	}
}

func (s *createdSet) observed(k childKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, k)
}

func (s *createdSet) pending(k childKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[k]
	if ok && s.clock.Since(t) > createdTTL {
		delete(s.at, k)
		return false
	}
	return ok
}
