package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/cached"
	"github.com/dbcontroller/database-controller/pkg/drift"
	"github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/fake"
	informers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/intern"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/podnet"
	"github.com/dbcontroller/database-controller/pkg/reconcile"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// The tests of the loop: its event handlers, its queue, how it sorts the
// outcome of a sync, and one sync where the reconciler and the backup
// runner meet. What a sync pass does is tested in pkg/reconcile, and what
// the backup runner does in pkg/backup.

var noResync = func() time.Duration { return 0 }()

// fixture seeds the informers and the fake clientsets, runs syncs through
// the controller, and compares the API actions (package actiontest), one
// by one, with the expected ones.
type fixture struct {
	t *testing.T

	client     *fake.Clientset
	kubeclient *k8sfake.Clientset

	// Objects to put in the informers' caches, and in the clientsets.
	objects     []runtime.Object // the Database API's
	kubeobjects []runtime.Object
	events      []*corev1.Event // about claims

	// Expected actions on each clientset, and events.
	actions, kubeactions []core.Action
	wantEvents           []string

	clock *testclock.FakePassiveClock
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, clock: testclock.NewFakePassiveClock(actiontest.Now)}
}

// seed puts objects in both the informers' caches and the fake clientsets.
// Like objects decoded by an informer, children carry no apiVersion and kind.
func (f *fixture) seed(objs ...runtime.Object) {
	for _, o := range objs {
		switch o := o.(type) {
		case *dbv1alpha1.Database, *dbv1alpha1.DatabaseBackup:
			f.objects = append(f.objects, o)
		case *corev1.Event:
			f.events = append(f.events, o)
		default:
			o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			f.kubeobjects = append(f.kubeobjects, o)
		}
	}
}

// converged seeds db as a Database that reached Running, with its children.
func (f *fixture) converged(db *dbv1alpha1.Database) {
	sts, headless, svc, secret := actiontest.Converged(f.t, db)
	f.seed(db, sts, headless, svc, secret)
}

// newController makes the clientsets and the informers from what was
// seeded, and a controller over them; its informers' caches hold what was
// seeded, and are never started.
func (f *fixture) newController(ctx context.Context) (*Controller, informers.SharedInformerFactory, kubeinformers.SharedInformerFactory, *record.FakeRecorder) {
	f.client = fake.NewSimpleClientset(f.objects...)
	actiontest.AcceptStatusApply(f.client)
	f.kubeclient = k8sfake.NewClientset(f.kubeobjects...)

	dbI := informers.NewSharedInformerFactory(f.client, noResync)
	kubeI := kubeinformers.NewSharedInformerFactory(f.kubeclient, noResync)
	eventsI := kubeinformers.NewSharedInformerFactory(f.kubeclient, noResync)
	recorder := record.NewFakeRecorder(100)
	c, err := NewController(ctx, Config{
		KubeClient:          f.kubeclient,
		DBClient:            f.client,
		KubeInformers:       kubeI,
		DBInformers:         dbI,
		ClaimEventInformers: eventsI,
		TLSSecretInformers:  kubeinformers.NewSharedInformerFactory(f.kubeclient, noResync),
		Recorder:            recorder,
		Clock:               f.clock,
		Random:              actiontest.PasswordSource(),
		Replication:         map[dbv1alpha1.Engine]ha.Client{dbv1alpha1.EnginePostgreSQL: &actiontest.Servers{}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	// The tests of what queues a Database see it queued at once, coming
	// up or not; TestFollowUpsOfAComingUpDatabaseAreBatched sets the wait.
	c.followUpBatch = 0
	for _, o := range f.objects {
		inf := dbI.Dbcontroller().V1alpha1().Databases().Informer()
		if _, ok := o.(*dbv1alpha1.DatabaseBackup); ok {
			inf = dbI.Dbcontroller().V1alpha1().DatabaseBackups().Informer()
		}
		f.add(inf, o)
	}
	for _, o := range f.kubeobjects {
		informer, err := kubeI.ForResource(resourceOf(f.t, o))
		if err != nil {
			f.t.Fatal(err)
		}
		f.add(informer.Informer(), o)
	}
	for _, e := range f.events {
		f.add(eventsI.Core().V1().Events().Informer(), e)
	}
	return c, dbI, kubeI, recorder
}

// add puts obj in inf's cache as the informer would: a copy, as
// stripForCache leaves it.
func (f *fixture) add(inf cache.SharedIndexInformer, obj runtime.Object) {
	cached, err := stripForCache(obj.DeepCopyObject())
	if err != nil {
		f.t.Fatal(err)
	}
	if err := inf.GetIndexer().Add(cached); err != nil {
		f.t.Fatal(err)
	}
}

// resourceOf is the resource of a seeded child.
func resourceOf(t *testing.T, o runtime.Object) schema.GroupVersionResource {
	switch o.(type) {
	case *appsv1.StatefulSet:
		return actiontest.StatefulSets
	case *corev1.Service:
		return actiontest.Services
	case *corev1.Secret:
		return actiontest.Secrets
	case *corev1.PersistentVolumeClaim:
		return actiontest.Claims
	case *corev1.Pod:
		return actiontest.Pods
	}
	t.Fatalf("cannot seed %T", o)
	return schema.GroupVersionResource{}
}

// syncAndCheck runs syncHandler on ref, and checks its error, the actions
// of each clientset and the events.
func (f *fixture) syncAndCheck(ctx context.Context, c *Controller, recorder *record.FakeRecorder, ref cache.ObjectName, expectError bool) {
	f.t.Helper()
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	_, err := c.syncHandler(ctx, ref)
	if !expectError && err != nil {
		f.t.Fatalf("error syncing database: %v", err)
	} else if expectError && err == nil {
		f.t.Fatal("expected error syncing database, got nil")
	}
	actiontest.CheckActions(f.t, "database clientset", f.actions, f.client.Actions())
	actiontest.CheckActions(f.t, "kube clientset", f.kubeactions, f.kubeclient.Actions())
	actiontest.CheckEvents(f.t, f.wantEvents, recorder)
}

func ref(db *dbv1alpha1.Database) cache.ObjectName { return cache.MetaObjectToName(db) }

// A sync that fails on a transient error is retried with rate limiting,
// and the retry does only what is left.
func TestTransientErrorIsRetried(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	c, _, kubeI, recorder := f.newController(ctx)
	failures := 1
	f.kubeclient.PrependReactor("create", "statefulsets", func(core.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewServiceUnavailable("etcd is busy")
		}
		return false, nil, nil
	})

	// First attempt: the StatefulSet create fails, the error is returned and
	// the key goes back on the queue with rate limiting.
	f.kubeactions = []core.Action{
		actiontest.Create(actiontest.Secrets, actiontest.Secret(t, db, actiontest.Password)),
		actiontest.Create(actiontest.Services, actiontest.HeadlessService(t, db)),
		actiontest.Create(actiontest.Services, actiontest.Service(t, db)),
		actiontest.Create(actiontest.StatefulSets, actiontest.StatefulSet(t, db)),
	}
	c.workqueue.Add(ref(db))
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	if !c.processNextWorkItem(ctx) {
		t.Fatal("processNextWorkItem returned false")
	}
	actiontest.CheckActions(t, "database clientset", nil, f.client.Actions())
	actiontest.CheckActions(t, "kube clientset", f.kubeactions, f.kubeclient.Actions())
	actiontest.CheckEvents(t, []string{"Normal Created Created Secret orders-credentials, Service orders-headless, Service orders"}, recorder)
	if n := c.workqueue.NumRequeues(ref(db)); n != 1 {
		t.Fatalf("NumRequeues = %d, want 1", n)
	}

	// The informers catch up with what was created.
	secrets, err := f.kubeclient.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range secrets.Items {
		f.add(kubeI.Core().V1().Secrets().Informer(), &secrets.Items[i])
	}
	services, err := f.kubeclient.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range services.Items {
		f.add(kubeI.Core().V1().Services().Informer(), &services.Items[i])
	}

	// The retry creates only what is missing, then writes status.
	f.kubeactions = []core.Action{actiontest.Create(actiontest.StatefulSets, actiontest.StatefulSet(t, db))}
	f.actions = []core.Action{actiontest.StatusApply(t, db, actiontest.Provisioning(db))}
	f.wantEvents = []string{"Normal Created Created StatefulSet orders"}
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
}

// A Database that no longer exists, or is being deleted with nothing for
// the controller to do, costs no write.
func TestDeletedDatabaseIsANoOp(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	c, _, _, recorder := f.newController(ctx)
	f.syncAndCheck(ctx, c, recorder, cache.ObjectName{Namespace: "default", Name: "gone"}, false)

	t.Run("being deleted without the controller's finalizer", func(t *testing.T) {
		f := newFixture(t)
		db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
		db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
		db.Finalizers = nil
		db.DeletionTimestamp = ptr.To(metav1.NewTime(actiontest.Now))
		f.seed(db)
		c, _, _, recorder := f.newController(ctx)
		f.syncAndCheck(ctx, c, recorder, ref(db), false)
	})
}

// The reconciler and the backup runner meet in one sync: a new Database
// with a backup schedule gets its children and its status from the
// reconciler, and its backup volume and the backup of the schedule's last
// tick from the runner, which asks to be woken at the next tick.
func TestReconcileAndBackupsMeet(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	db.CreationTimestamp = metav1.NewTime(actiontest.Now.Add(-48 * time.Hour))
	db.Spec.Backup = &dbv1alpha1.BackupSpec{Schedule: "0 3 * * *"}
	f.seed(db)
	c, _, _, recorder := f.newController(ctx)

	claim := actiontest.Object[corev1.PersistentVolumeClaim](t, builder.NewBackupClaim(db, db.Spec.Storage.Size))
	f.kubeactions = []core.Action{
		actiontest.Create(actiontest.Secrets, actiontest.Secret(t, db, actiontest.Password)),
		actiontest.Create(actiontest.Services, actiontest.HeadlessService(t, db)),
		actiontest.Create(actiontest.Services, actiontest.Service(t, db)),
		actiontest.Create(actiontest.StatefulSets, actiontest.StatefulSet(t, db)),
		actiontest.Create(actiontest.Claims, claim),
	}
	st := actiontest.Provisioning(db)
	st.Conditions = append(st.Conditions, metav1.Condition{Type: "Backup", Status: "True", Reason: "BackupsReady",
		Message:            `scheduled "0 3 * * *" (UTC), keeping the newest 7; a final backup is taken before the Database is deleted`,
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(actiontest.Now)})
	tick := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	scheduled := &dbv1alpha1.DatabaseBackup{
		ObjectMeta: metav1.ObjectMeta{Name: names.ScheduledBackupName(db.Name, tick), Namespace: "default",
			Labels:      map[string]string{names.LabelInstance: "orders", "app.kubernetes.io/managed-by": "database-controller", dbv1alpha1.LabelBackupTrigger: dbv1alpha1.BackupTriggerSchedule},
			Annotations: map[string]string{backup.AnnotationScheduledTime: "2026-11-22T03:00:00Z"}},
		Spec: dbv1alpha1.DatabaseBackupSpec{Database: "orders"},
	}
	f.actions = []core.Action{actiontest.StatusApply(t, db, st), actiontest.Create(actiontest.DatabaseBackups, scheduled)}
	f.wantEvents = []string{"Normal Created Created Secret orders-credentials, Service orders-headless, Service orders, StatefulSet orders"}
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
	// Woken at the next tick, tomorrow at 3:00, 17 h from now: not now.
	if n := c.workqueue.Len(); n != 0 {
		t.Errorf("queue length right after the sync = %d, want 0 (the next tick is 17h away)", n)
	}
}

// newQueuedController is a controller of one Database, seeded, whose
// reasons to queue it are recorded.
func newQueuedController(t *testing.T) (*Controller, *dbv1alpha1.Database, *queuedRecorder) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	c, _, _, _ := f.newController(ctx)
	queued := &queuedRecorder{}
	c.metrics = queued
	return c, db, queued
}

func TestHandleObjectEnqueuesTheOwner(t *testing.T) {
	c, db, queued := newQueuedController(t)

	owned := actiontest.Service(t, db)
	orphan := actiontest.Service(t, db)
	orphan.OwnerReferences = nil
	stale := actiontest.Service(t, db)
	stale.OwnerReferences[0].UID = "an-earlier-database"

	c.handleObject(orphan, changeUpdate)
	c.handleObject(stale, changeUpdate)
	if c.workqueue.Len() != 0 {
		t.Fatalf("queue has %d items after foreign objects, want 0", c.workqueue.Len())
	}
	c.handleObject(cache.DeletedFinalStateUnknown{Key: "default/orders", Obj: owned}, changeDelete)
	if c.workqueue.Len() != 1 {
		t.Fatalf("queue has %d items after a tombstone of an owned object, want 1", c.workqueue.Len())
	}
	got, _ := c.workqueue.Get()
	if got != ref(db) {
		t.Fatalf("enqueued %v, want %v", got, ref(db))
	}
	// Only what queued it is counted, by the kind and the change.
	if want := []string{"Service delete"}; !slices.Equal(queued.why, want) {
		t.Errorf("queued for %q, want %q", queued.why, want)
	}
}

// The updates of the children of a Database that is coming up, which come
// together as its server starts, are one pass after followUpBatch: the
// first waits, the next join it. A Database queued already sees them in
// its pass to come; one that runs is never made to wait (its failover),
// nor is the add of a child (the next step of the Database's making).
func TestFollowUpsOfAComingUpDatabaseAreBatched(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	comingUp := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	comingUp.Status.Phase = dbv1alpha1.PhaseProvisioning
	running := actiontest.NewDatabase("carts", "postgresql", "16", 1)
	running.Status.Phase = dbv1alpha1.PhaseRunning
	f.seed(comingUp, running)
	c, _, _, _ := f.newController(ctx)
	c.followUpBatch = 100 * time.Millisecond

	for _, by := range []string{"PersistentVolumeClaim", "Pod", "StatefulSet"} {
		c.enqueueFollowUp(ref(comingUp), by, changeUpdate)
	}
	if n := c.workqueue.Len(); n != 0 {
		t.Fatalf("queue has %d items right after changes of a coming-up Database, want 0: they wait", n)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.workqueue.Len() > 0, nil
	}); err != nil {
		t.Fatal("the changes of a coming-up Database never queued it")
	}
	got, _ := c.workqueue.Get()
	c.workqueue.Done(got)
	if got != ref(comingUp) {
		t.Fatalf("queued %v, want %v", got, ref(comingUp))
	}
	time.Sleep(3 * c.followUpBatch)
	if n := c.workqueue.Len(); n != 0 {
		t.Fatalf("queue has %d items after the batch was handed out, want 0: three changes, one pass", n)
	}

	// Queued already (its create, say): the change joins that pass now.
	c.workqueue.Add(ref(comingUp))
	c.enqueueFollowUp(ref(comingUp), "Pod", changeUpdate)
	if n := c.workqueue.Len(); n != 1 {
		t.Fatalf("queue has %d items, want the 1 that was there", n)
	}
	got, _ = c.workqueue.Get()
	c.workqueue.Done(got)
	time.Sleep(3 * c.followUpBatch)
	if n := c.workqueue.Len(); n != 0 {
		t.Fatalf("queue has %d items after the pass the change joined, want 0: no second pass", n)
	}

	c.enqueueFollowUp(ref(running), "Pod", changeUpdate)
	if n := c.workqueue.Len(); n != 1 {
		t.Fatalf("queue has %d items after a change of a running Database, want 1 at once", n)
	}
	got, _ = c.workqueue.Get()
	c.workqueue.Done(got)

	// The add of a child is the next step of the Database's making.
	c.enqueueFollowUp(ref(comingUp), "Secret", changeAdd)
	if n := c.workqueue.Len(); n != 1 {
		t.Fatalf("queue has %d items after a child of a coming-up Database was added, want 1 at once", n)
	}
}

// An update that changed only what the cache drops (kube-controller-
// manager's annotations on a claim it binds) queues no pass: no reader
// could see it. One that changes what the cache keeps (the claim's phase)
// queues one.
func TestUpdateOfWhatTheCacheDropsIsNotQueued(t *testing.T) {
	c, db, queued := newQueuedController(t)
	claim := func(version string, annotations map[string]string, phase corev1.PersistentVolumeClaimPhase) interface{} {
		t.Helper()
		stripped, err := stripForCache(&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data-orders-0", Namespace: db.Namespace, ResourceVersion: version,
				Labels: map[string]string{names.LabelInstance: db.Name}, Annotations: annotations},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}})
		if err != nil {
			t.Fatal(err)
		}
		return stripped
	}
	handler := onChange(c.enqueueByLabel)
	bound := map[string]string{"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"}
	handler.OnUpdate(claim("1", nil, corev1.ClaimPending), claim("2", bound, corev1.ClaimPending))
	if c.workqueue.Len() != 0 {
		t.Fatalf("queue has %d items after an update of what the cache drops, want 0", c.workqueue.Len())
	}
	handler.OnUpdate(claim("2", bound, corev1.ClaimPending), claim("3", bound, corev1.ClaimBound))
	if c.workqueue.Len() != 1 {
		t.Fatalf("queue has %d items after the claim was bound, want 1", c.workqueue.Len())
	}
	if want := []string{"PersistentVolumeClaim update"}; !slices.Equal(queued.why, want) {
		t.Errorf("queued for %q, want %q", queued.why, want)
	}
}

// The informer's add of a child as this process created it brings no
// pass: the pass that created it went on with what the create returned.
// The add a later pass waits for (it found the child missing from the
// cache), or an add at another resourceVersion, brings one.
func TestEchoOfACreateIsNotQueued(t *testing.T) {
	for _, tc := range []struct {
		name string
		// waitingPass runs a second pass before the adds, over caches that
		// still miss every child: it waits for the first one it reads.
		waitingPass bool
		// changed hands the StatefulSet's add at another resourceVersion.
		changed bool
		want    []string
	}{
		{name: "echoes only", want: nil},
		{name: "a pass waits for the Secret", waitingPass: true, want: []string{"Secret add"}},
		{name: "the StatefulSet changed since", changed: true, want: []string{"StatefulSet add"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
			f.seed(db)
			c, dbI, _, _ := f.newController(ctx)
			queued := &queuedRecorder{}
			c.metrics = queued
			// The fake clientset sets no resourceVersion; an API server does.
			version := 100
			f.kubeclient.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
				version++
				a.(core.CreateAction).GetObject().(metav1.Object).SetResourceVersion(strconv.Itoa(version))
				return false, nil, nil
			})
			if _, err := c.syncHandler(ctx, ref(db)); err != nil {
				t.Fatal(err)
			}
			var adds []runtime.Object
			for _, a := range f.kubeclient.Actions() {
				if create, ok := a.(core.CreateAction); ok {
					// As the API server stored it, as an informer hands it over.
					obj, err := f.kubeclient.Tracker().Get(a.GetResource(), a.GetNamespace(), create.GetObject().(metav1.Object).GetName())
					if err != nil {
						t.Fatal(err)
					}
					adds = append(adds, obj)
				}
			}
			if len(adds) != 4 {
				t.Fatalf("the pass created %d children, want 4 (the Secret, two Services, the StatefulSet)", len(adds))
			}
			if tc.waitingPass {
				// A new version of the Database, so that the pass is not
				// skipped as settled.
				changed := db.DeepCopy()
				changed.ResourceVersion = "2"
				changed.Labels = map[string]string{"team": "shop"}
				if err := dbI.Dbcontroller().V1alpha1().Databases().Informer().GetIndexer().Update(changed); err != nil {
					t.Fatal(err)
				}
				f.kubeclient.ClearActions()
				if _, err := c.syncHandler(ctx, ref(db)); err != nil {
					t.Fatal(err)
				}
				if n := len(f.kubeclient.Actions()); n != 0 {
					t.Fatalf("the waiting pass made %d API calls: %v", n, f.kubeclient.Actions())
				}
			}
			for _, obj := range adds {
				if sts, ok := obj.(*appsv1.StatefulSet); ok && tc.changed {
					obj = sts.DeepCopy()
					obj.(metav1.Object).SetResourceVersion("999")
				}
				c.handleObject(obj, changeAdd)
			}
			if !slices.Equal(queued.why, tc.want) {
				t.Errorf("queued for %q, want %q", queued.why, tc.want)
			}
			if c.workqueue.Len() != len(tc.want) {
				t.Errorf("queue length %d, want %d", c.workqueue.Len(), len(tc.want))
			}
		})
	}
}

// A Database whose child changed goes to a worker before the Databases
// queued for their own changes, such as a burst of new ones: its follow-up
// (most often its Running status) does not wait for their children to be
// created.
func TestChildChangesAreHandedOutFirst(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	running := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	fresh := []*dbv1alpha1.Database{actiontest.NewDatabase("new-1", "mysql", "8.4", 1), actiontest.NewDatabase("new-2", "mysql", "8.4", 1)}
	f.seed(running, fresh[0], fresh[1])
	c, _, _, _ := f.newController(ctx)

	for _, db := range fresh {
		c.enqueueDatabase(db)
	}
	c.enqueueDatabase(running)
	sts := actiontest.StatefulSet(t, running)
	c.handleObject(sts, changeUpdate)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orders-0",
		Labels: map[string]string{names.LabelInstance: running.Name}}}

	var got []cache.ObjectName
	for c.workqueue.Len() > 0 {
		k, _ := c.workqueue.Get()
		if k == ref(running) && len(got) == 0 {
			// Its pod changes while a worker has it: it comes back first.
			c.enqueueByLabel(pod, changeAdd)
			c.enqueueDatabase(fresh[0])
		}
		c.workqueue.Done(k)
		got = append(got, k)
	}
	// The two kinds take turns while both wait.
	want := []cache.ObjectName{ref(running), ref(fresh[0]), ref(running), ref(fresh[1])}
	if !slices.Equal(got, want) {
		t.Fatalf("handed out %v, want %v", got, want)
	}
}

func TestDatabaseChangeNeedsSync(t *testing.T) {
	base := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	tests := []struct {
		name   string
		mutate func(db *dbv1alpha1.Database)
		want   bool
	}{
		{"resync with the same resourceVersion", func(db *dbv1alpha1.Database) {}, true},
		{"status-only write", func(db *dbv1alpha1.Database) { db.ResourceVersion = "2"; db.Status.Phase = "Running" }, false},
		{"label-only change", func(db *dbv1alpha1.Database) { db.ResourceVersion = "2"; db.Labels = map[string]string{"a": "b"} }, false},
		{"spec change", func(db *dbv1alpha1.Database) { db.ResourceVersion = "2"; db.Generation = 2 }, true},
		{"deletion started", func(db *dbv1alpha1.Database) {
			db.ResourceVersion = "2"
			db.DeletionTimestamp = ptr.To(metav1.NewTime(actiontest.Now))
		}, true},
		{"recreated with the same name", func(db *dbv1alpha1.Database) { db.ResourceVersion = "2"; db.UID = "other" }, true},
		{"a new current version", func(db *dbv1alpha1.Database) { db.ResourceVersion = "2"; db.Status.CurrentVersion = "17" }, true},
		{"a new featureCompatibilityVersion", func(db *dbv1alpha1.Database) {
			db.ResourceVersion = "2"
			db.Status.FeatureCompatibilityVersion = "7.0"
		}, true},
		{"parameters to give at start", func(db *dbv1alpha1.Database) {
			db.ResourceVersion = "2"
			db.Status.Parameters = &dbv1alpha1.ParametersStatus{Start: map[string]string{"shared_buffers": "1GB"}}
		}, true},
		{"parameters set live only", func(db *dbv1alpha1.Database) {
			db.ResourceVersion = "2"
			db.Status.Parameters = &dbv1alpha1.ParametersStatus{Applied: "d", Live: map[string]string{"work_mem": "64MB"}}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base.DeepCopy()
			tt.mutate(n)
			if got := databaseChangeNeedsSync(base, n); got != tt.want {
				t.Fatalf("databaseChangeNeedsSync = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStripForCache(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "m"}}
	for _, tt := range []struct {
		name     string
		in, want runtime.Object
	}{
		{"Secret: no data",
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", ManagedFields: managed},
				Data: map[string][]byte{"password": []byte("p")}, StringData: map[string]string{"a": "b"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}},
		{"Service: what the controller sets, not what the API server fills in",
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"}, ManagedFields: managed},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", ClusterIPs: []string{"None"}, Selector: map[string]string{"a": "b"},
					Ports: []corev1.ServicePort{{Name: "postgresql", Port: 5432, Protocol: corev1.ProtocolTCP}}, PublishNotReadyAddresses: true,
					IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
					SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster)},
				Status: corev1.ServiceStatus{Conditions: []metav1.Condition{{Type: "c"}}}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", Selector: map[string]string{"a": "b"},
					Ports: []corev1.ServicePort{{Name: "postgresql", Port: 5432, Protocol: corev1.ProtocolTCP}}, PublishNotReadyAddresses: true}}},
		{"Pod: metadata, node and status, of its conditions whether it is ready and scheduled",
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}, ManagedFields: managed},
				Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}},
					Volumes: []corev1.Volume{{Name: "v"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{
					{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}, {Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}, {Type: corev1.ContainersReady, Status: corev1.ConditionFalse},
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{NodeName: "n"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}}},
		{"Database: no last-applied copy, other annotations kept",
			&dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "d", ManagedFields: managed, Annotations: map[string]string{
				corev1.LastAppliedConfigAnnotation: "{}", "team": "payments"}}, Spec: dbv1alpha1.DatabaseSpec{Version: "16"}},
			&dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "d", Annotations: map[string]string{"team": "payments"}},
				Spec: dbv1alpha1.DatabaseSpec{Version: "16"}}},
		{"Event: what names its object, its kind, and when and how often",
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u", ResourceVersion: "7", ManagedFields: managed,
				Annotations: map[string]string{"a": "b"}},
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "c", UID: "cu"}, Type: corev1.EventTypeWarning,
				Reason: "ProvisioningFailed", Message: "m", Count: 3, Source: corev1.EventSource{Component: "persistentvolume-controller"},
				ReportingController: "r", LastTimestamp: metav1.NewTime(actiontest.Now)},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u", ResourceVersion: "7"},
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "c", UID: "cu"}, Type: corev1.EventTypeWarning,
				Reason: "ProvisioningFailed", Message: "m", Count: 3, LastTimestamp: metav1.NewTime(actiontest.Now)}},
		{"Node: whether it is cordoned, and what names it",
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", ResourceVersion: "7", ManagedFields: managed, Labels: map[string]string{"a": "b"}},
				Spec:   corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
				Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"postgres:16"}}}}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", ResourceVersion: "7"}, Spec: corev1.NodeSpec{Unschedulable: true}}},
		{"StatefulSet: its replicas, its containers' names, images and arguments, the restore's environment, its volume's size and class",
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: managed}, Spec: appsv1.StatefulSetSpec{ServiceName: "h",
				Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
					Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v"}}, ServiceAccountName: "sa",
						InitContainers: []corev1.Container{
							{Name: "install-tools", Image: "tools:1", Command: []string{"cp"}, Env: []corev1.EnvVar{{Name: "X", Value: "1"}}},
							{Name: "restore", Image: "postgres:16", Env: []corev1.EnvVar{{Name: "DBC_RESTORE_BACKUP", Value: "b"}},
								VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}}},
						Containers: []corev1.Container{{Name: "postgresql", Image: "postgres:16", Args: []string{"-c", "x=1"},
							Env: []corev1.EnvVar{{Name: "PGDATA", Value: "/d"}}, ReadinessProbe: &corev1.Probe{PeriodSeconds: 2}}}}},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"a": "b"}},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("fast"),
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
					Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}}},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3),
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
					Annotations: map[string]string{cached.AnnotationTemplateStripped: "true"}},
					Spec: corev1.PodSpec{
						InitContainers: []corev1.Container{{Name: "install-tools", Image: "tools:1"},
							{Name: "restore", Image: "postgres:16", Env: []corev1.EnvVar{{Name: "DBC_RESTORE_BACKUP", Value: "b"}}}},
						Containers: []corev1.Container{{Name: "postgresql", Image: "postgres:16", Args: []string{"-c", "x=1"}}}}},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"),
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stripForCache(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			// Held compact or not, read whole.
			got = cached.Whole(got)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("stripForCache:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A stripped pod or claim still serves each of their readers: the causes
// and when they fall due, the starting containers, the pods' addresses,
// and the plan's claims to grow give what they give on the objects as the
// API sent them.
func TestStripForCacheServesEachReader(t *testing.T) {
	now := actiontest.Now
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	db := actiontest.NewDatabase("orders", "postgresql", "16", 3)
	db.Spec.Storage.Size = resource.MustParse("2Gi")
	kubelets := func(cs corev1.ContainerStatus) corev1.ContainerStatus {
		// What a kubelet fills in that no reader reads.
		cs.ImageID, cs.ContainerID = "docker.io/library/postgres@sha256:0123", "containerd://abcdef"
		cs.AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		cs.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		cs.VolumeMounts = []corev1.VolumeMountStatus{{Name: "data", MountPath: "/var/lib/postgresql/data"}}
		cs.User = &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: 999, GID: 999}}
		return cs
	}
	pod := func(name string, phase corev1.PodPhase, conditions []corev1.PodCondition, init, containers []corev1.ContainerStatus) *corev1.Pod {
		for i := range init {
			init[i] = kubelets(init[i])
		}
		for i := range containers {
			containers[i] = kubelets(containers[i])
		}
		// The kubelet's conditions no reader reads.
		ready := corev1.ConditionStatus(corev1.ConditionFalse)
		if c := slices.IndexFunc(conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady }); c >= 0 {
			ready = conditions[c].Status
		}
		conditions = append(slices.Clip(conditions), corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: ago(time.Hour)},
			corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: ago(time.Hour)},
			corev1.PodCondition{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: ago(time.Hour)})
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.Namespace, UID: types.UID(name), Labels: names.SelectorLabels(db)},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "postgresql", Image: "postgres:16"}}},
			Status: corev1.PodStatus{Phase: phase, Conditions: conditions, HostIP: "192.168.0.1", PodIP: "10.244.0." + name[len(name)-1:],
				PodIPs: []corev1.PodIP{{IP: "10.244.0." + name[len(name)-1:]}}, StartTime: ptr.To(ago(time.Hour)), QOSClass: corev1.PodQOSBurstable,
				InitContainerStatuses: init, ContainerStatuses: containers}}
	}
	started, notStarted := ptr.To(true), ptr.To(false)
	running := func(d time.Duration) corev1.ContainerState {
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(d)}}
	}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: reason + " for a while"}}
	}
	pods := map[string]*corev1.Pod{
		"ready": pod("orders-0", corev1.PodRunning,
			[]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(time.Hour)}}, nil,
			[]corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:16", Ready: true, Started: started, State: running(time.Hour)}}),
		"crash looping, out of memory before": pod("orders-1", corev1.PodRunning,
			[]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(time.Hour)}}, nil,
			[]corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:16", RestartCount: 5, State: waiting("CrashLoopBackOff"),
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}),
		"image not pulled": pod("orders-2", corev1.PodPending, nil, nil,
			[]corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:16-nope", State: waiting("ImagePullBackOff")}}),
		"unschedulable": pod("orders-3", corev1.PodPending, []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available", LastTransitionTime: ago(10 * time.Minute)}}, nil, nil),
		"running, not ready, started long ago": pod("orders-4", corev1.PodRunning,
			[]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(time.Hour)}}, nil,
			[]corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:16", Started: notStarted, State: running(time.Hour)}}),
		"starting": pod("orders-5", corev1.PodRunning,
			[]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(time.Second)}}, nil,
			[]corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:16", Started: notStarted, State: running(time.Second)}}),
		"init container failing": pod("orders-6", corev1.PodPending, nil,
			[]corev1.ContainerStatus{{Name: "restore", Image: "postgres:16", RestartCount: 3, State: waiting("CrashLoopBackOff"),
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}},
			[]corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:16", State: waiting("PodInitializing")}}),
	}
	claim := func(name string, phase corev1.PersistentVolumeClaimPhase, created time.Duration, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.Namespace, UID: types.UID(name), ResourceVersion: "9", Labels: names.SelectorLabels(db),
				CreationTimestamp: ago(created), Finalizers: []string{"kubernetes.io/pvc-protection"},
				Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/selected-node": "node-1"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-" + name,
				StorageClassName: ptr.To("standard"), Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		}
	}
	claimSets := map[string][]*corev1.PersistentVolumeClaim{
		"bound, one to grow":     {claim(names.ClaimPrefix(db)+"0", corev1.ClaimBound, time.Hour, "1Gi"), claim(names.ClaimPrefix(db)+"1", corev1.ClaimBound, time.Hour, "2Gi")},
		"pending past the grace": {claim(names.ClaimPrefix(db)+"0", corev1.ClaimPending, time.Hour, "2Gi")},
		"pending, young":         {claim(names.ClaimPrefix(db)+"0", corev1.ClaimPending, time.Second, "2Gi")},
	}
	// stripped is obj as the cache holds it, compact or not.
	stripped := func(obj runtime.Object) any {
		out, err := stripForCache(obj.DeepCopyObject())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// readers read claims and pods as a pass does, and the pods' indexes
	// of addresses and of nodes read held, as the cache holds them.
	readers := func(claims []*corev1.PersistentVolumeClaim, pods []*corev1.Pod, held []any) []any {
		in := status.CauseInput{Claims: claims, Pods: pods, Now: now}
		var addresses, nodes [][]string
		for _, p := range held {
			ips, err := podnet.IndexByPodIP(p)
			if err != nil {
				t.Fatal(err)
			}
			node, err := reconcile.IndexByNode(p)
			if err != nil {
				t.Fatal(err)
			}
			addresses, nodes = append(addresses, ips), append(nodes, node)
		}
		return []any{status.FindCause(in), status.CauseDue(in).Format(time.RFC3339Nano), status.StartingContainers(pods), addresses,
			plan.Compute(db, plan.Observed{Claims: claims}).Grow, nodes}
	}
	for podCase, p := range pods {
		for claimCase, claims := range claimSets {
			t.Run(podCase+", "+claimCase, func(t *testing.T) {
				var strippedClaims []*corev1.PersistentVolumeClaim
				for _, c := range claims {
					strippedClaims = append(strippedClaims, cached.Whole(stripped(c)).(*corev1.PersistentVolumeClaim))
				}
				held := stripped(p)
				sp := cached.Whole(held).(*corev1.Pod)
				if equality.Semantic.DeepEqual(sp, p) || equality.Semantic.DeepEqual(strippedClaims[0], claims[0]) {
					t.Fatal("nothing was stripped: the test proves nothing")
				}
				got, want := readers(strippedClaims, []*corev1.Pod{sp}, []any{held}), readers(claims, []*corev1.Pod{p}, []any{p})
				for i := range want {
					if !equality.Semantic.DeepEqual(got[i], want[i]) {
						t.Errorf("reader %d reads the stripped objects as\n%+v\nand the sent ones as\n%+v", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// A stripped Service serves the drift check as the Service the API server
// sent does: as written, and with each field the controller sets changed
// by someone else.
func TestStripForCacheServiceServesTheDriftCheck(t *testing.T) {
	db := actiontest.NewDatabase("orders", "postgresql", "16", 3)
	desired := actiontest.Desired(t, db)
	// The fields a Service leaves unset are not the controller's: a change
	// of them is no drift.
	notSet := map[string][]string{"client": {"the cluster IP", "publishNotReadyAddresses"}, "headless": {"type"},
		"read-only": {"the cluster IP", "publishNotReadyAddresses"}}
	for kind, want := range map[string]*corev1ac.ServiceApplyConfiguration{
		"client": desired.Service, "headless": desired.HeadlessService, "read-only": desired.ReadOnlyService,
	} {
		written := apiFilled(actiontest.Object[corev1.Service](t, want))
		written.UID, written.ResourceVersion = "service-uid", "42"
		for change, edit := range map[string]func(s *corev1.Service){
			"none":                        func(*corev1.Service) {},
			"type":                        func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort },
			"selector":                    func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "other"} },
			"a selector's key removed":    func(s *corev1.Service) { delete(s.Spec.Selector, names.LabelInstance) },
			"a port":                      func(s *corev1.Service) { s.Spec.Ports[0].Port++ },
			"a target port":               func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(1) },
			"the cluster IP":              func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.1" },
			"publishNotReadyAddresses":    func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = !s.Spec.PublishNotReadyAddresses },
			"a label removed":             func(s *corev1.Service) { delete(s.Labels, names.LabelManagedBy) },
			"the applied digest cleared":  func(s *corev1.Service) { delete(s.Annotations, drift.AppliedAnnotation) },
			"the owner reference removed": func(s *corev1.Service) { s.OwnerReferences = nil },
		} {
			t.Run(kind+", changed: "+change, func(t *testing.T) {
				sent := written.DeepCopy()
				edit(sent)
				held, err := stripForCache(sent.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				// Read as a pass reads it.
				cached := cached.Whole(held)
				if equality.Semantic.DeepEqual(cached, sent) {
					t.Fatal("nothing was stripped: the test proves nothing")
				}
				wantField, err := drift.FirstDifference(sent, want)
				if err != nil {
					t.Fatal(err)
				}
				if drifted := change != "none" && !slices.Contains(notSet[kind], change); (wantField != "") != drifted {
					t.Fatalf("the Service as sent differs at %q: the change is not one the check sees", wantField)
				}
				if got, err := drift.FirstDifference(cached, want); err != nil || got != wantField {
					t.Errorf("the drift check finds %q (%v) in the cached Service, %q in the one sent", got, err, wantField)
				}
			})
		}
	}
}

// Two objects the API sent apart share, once cached, the strings they have
// in common, and read as sent.
func TestStripForCacheSharesStrings(t *testing.T) {
	sent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-tls", Namespace: "shop",
		Annotations: map[string]string{builder.AnnotationSerial: "1f"}, Labels: names.Labels(actiontest.NewDatabase("orders", "postgresql", "16", 1))}}
	var cached []*corev1.Secret
	for range 2 {
		b, err := sent.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{}
		if err := s.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if _, err := stripForCache(s); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(s, sent) {
			t.Fatalf("cached Secret:\n got %+v\nwant %+v", s, sent)
		}
		cached = append(cached, s)
	}
	for key, value := range cached[0].Annotations {
		for otherKey, otherValue := range cached[1].Annotations {
			if unsafe.StringData(key) != unsafe.StringData(otherKey) || unsafe.StringData(value) != unsafe.StringData(otherValue) {
				t.Errorf("annotation %s=%s is held twice", key, value)
			}
		}
	}
	if unsafe.StringData(cached[0].Namespace) != unsafe.StringData(cached[1].Namespace) {
		t.Error("the namespace is held twice")
	}
}

// An event about a Pending claim of a Database puts the Database on the
// queue; an event about a bound claim, about a claim this controller does
// not manage, or about another kind of object does not.
func TestClaimEventEnqueuesTheDatabase(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := actiontest.NewDatabase("orders", "postgresql", "16", 2)
	claim := func(ordinal int, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-orders-%d", ordinal), Namespace: "default",
			Labels: names.Labels(db)}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	f.seed(db, claim(0, corev1.ClaimPending), claim(1, corev1.ClaimBound))
	c, _, _, _ := f.newController(ctx)
	about := func(kind, name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name + ".1", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: corev1.EventTypeWarning}
	}
	for _, e := range []interface{}{about("PersistentVolumeClaim", "data-orders-1"), about("PersistentVolumeClaim", "data-unmanaged-0"),
		about("Pod", "data-orders-0"), "not an event"} {
		c.enqueueClaimEvent(e, changeAdd)
	}
	if n := c.workqueue.Len(); n != 0 {
		t.Fatalf("queue has %d items after events that are not about a Pending claim of a Database, want 0", n)
	}
	c.enqueueClaimEvent(cache.DeletedFinalStateUnknown{Key: "default/data-orders-0.1", Obj: about("PersistentVolumeClaim", "data-orders-0")}, changeDelete)
	if n := c.workqueue.Len(); n != 1 {
		t.Fatalf("queue has %d items after a tombstone of an event about a Pending claim, want 1", n)
	}
	if got, _ := c.workqueue.Get(); got != ref(db) {
		t.Fatalf("enqueued %v, want %v", got, ref(db))
	}
}

// A node cordoned leads to the Databases whose pods run on it, and to no other.
func TestNodeEnqueuesItsDatabases(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	pod := func(db, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: db + "-0", Namespace: "default",
			Labels: names.Labels(actiontest.NewDatabase(db, "postgresql", "16", 1))}, Spec: corev1.PodSpec{NodeName: node}}
	}
	f.seed(pod("orders", "node-a"), pod("billing", "node-a"), pod("stock", "node-b"))
	c, _, kubeI, _ := f.newController(ctx)
	c.enqueueNodesDatabases(kubeI.Core().V1().Pods().Informer().GetIndexer(), "node-a")
	if got, want := drained(c), []string{"default/billing", "default/orders"}; !slices.Equal(got, want) {
		t.Fatalf("enqueued %v, want %v", got, want)
	}
}

// A user's Secret of spec.tls.secretName leads to the Databases that name
// it, in its namespace, and to no other.
func TestTLSSecretEnqueuesItsDatabases(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	naming := func(name, namespace, secret string) *dbv1alpha1.Database {
		db := actiontest.NewDatabase(name, "postgresql", "16", 1)
		db.Namespace = namespace
		if secret != "" {
			db.Spec.TLS = &dbv1alpha1.TLSSpec{Mode: dbv1alpha1.TLSEnabled, SecretName: secret}
		}
		return db
	}
	f.seed(naming("orders", "default", "shop-cert"), naming("billing", "default", "shop-cert"), naming("stock", "default", "other-cert"),
		naming("orders", "elsewhere", "shop-cert"), naming("plain", "default", ""))
	c, dbI, _, _ := f.newController(ctx)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-cert", Namespace: "default", Labels: map[string]string{dbv1alpha1.LabelTLS: "true"}}}
	c.enqueueIndexed(dbI.Dbcontroller().V1alpha1().Databases().Informer().GetIndexer(), reconcile.IndexTLSSecret, secret, changeUpdate)
	if got, want := drained(c), []string{"default/billing", "default/orders"}; !slices.Equal(got, want) {
		t.Fatalf("enqueued %v, want %v", got, want)
	}
}

// drained takes every key off the controller's queue, sorted.
func drained(c *Controller) []string {
	var got []string
	for c.workqueue.Len() > 0 {
		key, _ := c.workqueue.Get()
		got = append(got, key.String())
		c.workqueue.Done(key)
	}
	slices.Sort(got)
	return got
}

// fakeReconciler returns what a test gives it, one outcome per sync.
type fakeReconciler struct {
	outcomes []error
	synced   int
}

func (r *fakeReconciler) Sync(context.Context, *dbv1alpha1.Database) (bool, error) {
	err := r.outcomes[min(r.synced, len(r.outcomes)-1)]
	r.synced++
	return false, err
}

func (r *fakeReconciler) Forget(string, string) {}

func (r *fakeReconciler) Observed(*dbv1alpha1.Database) {}

func (r *fakeReconciler) ListCredentials(context.Context, string, []*dbv1alpha1.Database) (int, error) {
	return 0, nil
}

func (r *fakeReconciler) Echo(reconcile.ChildKey, string) bool { return false }

// Cached holds every cache the controller reads, by kind: what the
// cached_objects metric counts.
func TestCachedIsEveryCacheByKind(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	f.converged(actiontest.NewDatabase("orders", "postgresql", "16", 1))
	c, _, _, _ := f.newController(ctx)
	got := map[string]int{}
	for kind, stores := range c.Cached() {
		for _, s := range stores {
			got[kind] += len(s.ListKeys())
		}
	}
	// No node informer and no PodMonitors in the fixture; the TLS
	// Secrets' cache is the second of kind Secret.
	want := map[string]int{"Database": 1, "StatefulSet": 1, "Service": 2, "Secret": 1, "Job": 0, "DatabaseBackup": 0,
		"PersistentVolumeClaim": 0, "Pod": 0, "Event": 0, "PodDisruptionBudget": 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cached by kind: %v, want %v", got, want)
	}
	if n := len(c.Cached()["Secret"]); n != 2 {
		t.Errorf("caches of Secrets: %d, want 2 (the children's and the users' TLS Secrets)", n)
	}
}

// The loop sorts what a sync returned once: a problem that needs a person
// is not retried until something changes, unless it may clear by itself,
// which is looked at again on a capped backoff, as is a status that may
// change unseen; a replicated Database's servers are asked at a steady
// pace; waiting for the cache, and a namespace being deleted, end quietly;
// anything else is an error, retried with rate limiting.
func TestOutcomesAreSorted(t *testing.T) {
	for _, tt := range []struct {
		name    string
		outcome error
		// wantErr: syncHandler returns it, and processNextWorkItem requeues
		// with rate limiting; rechecks: looks scheduled on the recheck
		// backoff.
		wantErr  bool
		rechecks int
	}{
		{"nothing left to do", nil, false, 0},
		{"a problem for a person", &status.Problem{Reason: "DowngradeRefused"}, false, 0},
		{"a problem that may clear by itself", &status.Problem{Reason: "ResourceConflict", Recheck: true}, false, 1},
		{"a status that may change unseen", &reconcile.RecheckError{Why: "a volume is being provisioned"}, false, 1},
		{"a replicated Database's servers", &reconcile.RecheckError{Why: "asking the servers", After: 10 * time.Second}, false, 0},
		{"a cause falling due", &reconcile.RecheckError{Why: "a volume is being provisioned", After: 25 * time.Second, Due: true}, false, 0},
		{"waiting for the cache", &reconcile.WaitingError{Kind: "Secret", Name: "orders-credentials"}, false, 0},
		{"the namespace is being deleted", fmt.Errorf("creating Secret orders-credentials: %w",
			actiontest.NamespaceTerminating(schema.GroupResource{Resource: "secrets"}, "orders-credentials")), false, 0},
		{"a transient error", errors.New("etcd is busy"), true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
			f.seed(db)
			c, _, _, _ := f.newController(ctx)
			c.reconciler = &fakeReconciler{outcomes: []error{tt.outcome}}
			c.workqueue.Add(ref(db))
			c.processNextWorkItem(ctx)
			if n, want := c.workqueue.NumRequeues(ref(db)), map[bool]int{true: 1}[tt.wantErr]; n != want {
				t.Errorf("rate-limited requeues = %d, want %d", n, want)
			}
			if n := c.recheck.NumRequeues(ref(db)); n != tt.rechecks {
				t.Errorf("rechecks scheduled = %d, want %d", n, tt.rechecks)
			}
			// A later look waits at least a second: nothing is back at once.
			if n := c.workqueue.Len(); !tt.wantErr && n != 0 {
				t.Errorf("queue length right after the sync = %d, want 0: looked at again later, not at once", n)
			}
		})
	}
}

// A problem that may clear by itself is looked at again 5 s after, then
// doubling, at most a minute apart; once it clears, the backoff starts
// over. A steady pace (a replicated Database's servers) forgets it too.
func TestRecheckIsPacedByACappedBackoff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	c, _, _, _ := f.newController(ctx)
	conflict := &status.Problem{Reason: "ResourceConflict", Recheck: true}
	fake := &fakeReconciler{outcomes: []error{conflict, conflict, conflict, nil}}
	c.reconciler = fake
	sync := func() {
		t.Helper()
		if _, err := c.syncHandler(ctx, ref(db)); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	if n := c.recheck.NumRequeues(ref(db)); n != 1 {
		t.Fatalf("rechecks scheduled = %d, want 1", n)
	}
	sync()
	sync()
	if n := c.recheck.NumRequeues(ref(db)); n != 3 {
		t.Fatalf("rechecks scheduled = %d, want 3", n)
	}
	if d := c.recheck.When(ref(db)); d != 40*time.Second {
		t.Fatalf("the fourth recheck comes after %s, want 40s", d)
	}
	for range 3 {
		c.recheck.When(ref(db))
	}
	if d := c.recheck.When(ref(db)); d != time.Minute {
		t.Fatalf("a later recheck comes after %s, want the cap of 1m", d)
	}
	sync() // the problem cleared
	if n := c.recheck.NumRequeues(ref(db)); n != 0 {
		t.Fatalf("rechecks still scheduled after the problem cleared: %d", n)
	}

	fake.outcomes, fake.synced = []error{conflict, &reconcile.RecheckError{Why: "asking the servers", After: time.Second}}, 0
	sync()
	sync()
	if n := c.recheck.NumRequeues(ref(db)); n != 0 {
		t.Fatalf("rechecks still scheduled at a steady pace: %d", n)
	}
}

// In a namespace being deleted, neither the reconciler's creates nor the
// backup runner's are retried or reported as an error: the sync ends
// quietly, with no event, and nothing is queued again.
func TestNamespaceBeingDeletedIsQuiet(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	db.Spec.Backup = &dbv1alpha1.BackupSpec{Schedule: "0 3 * * *"}
	f.seed(db)
	c, _, _, recorder := f.newController(ctx)
	f.kubeclient.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
		return true, nil, actiontest.NamespaceTerminating(a.GetResource().GroupResource(), "")
	})
	claim := actiontest.Object[corev1.PersistentVolumeClaim](t, builder.NewBackupClaim(db, db.Spec.Storage.Size))
	f.kubeactions = []core.Action{
		actiontest.Create(actiontest.Secrets, actiontest.Secret(t, db, actiontest.Password)),
		actiontest.Create(actiontest.Claims, claim),
	}
	c.workqueue.Add(ref(db))
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	c.processNextWorkItem(ctx)
	actiontest.CheckActions(t, "database clientset", nil, f.client.Actions())
	actiontest.CheckActions(t, "kube clientset", f.kubeactions, f.kubeclient.Actions())
	actiontest.CheckEvents(t, nil, recorder)
	if n := c.workqueue.NumRequeues(ref(db)); n != 0 {
		t.Errorf("rate-limited requeues = %d, want 0", n)
	}
	if n := c.workqueue.Len(); n != 0 {
		t.Errorf("queue length = %d, want 0", n)
	}
}

// queuedRecorder records why Databases were queued, as "by change".
type queuedRecorder struct {
	noopObserver
	why []string
}

func (q *queuedRecorder) ObserveQueued(by, change string) { q.why = append(q.why, by+" "+change) }

func TestKindOf(t *testing.T) {
	podMonitor := &unstructured.Unstructured{}
	podMonitor.SetKind("PodMonitor")
	for _, tc := range []struct {
		obj  interface{}
		want string
	}{
		{&corev1.Pod{}, "Pod"},
		{&dbv1alpha1.Database{}, "Database"},
		{cached.NewStatefulSet(&appsv1.StatefulSet{}), "StatefulSet"},
		{cached.NewPod(&corev1.Pod{}), "Pod"},
		{cached.NewService(&corev1.Service{}), "Service"},
		{cached.NewSecret(&corev1.Secret{}), "Secret"},
		{cached.NewPersistentVolumeClaim(&corev1.PersistentVolumeClaim{}), "PersistentVolumeClaim"},
		{cache.DeletedFinalStateUnknown{Key: "default/orders", Obj: &corev1.Secret{}}, "Secret"},
		{podMonitor, "PodMonitor"},
		{nil, "unknown"},
	} {
		if got := kindOf(tc.obj); got != tc.want {
			t.Errorf("kindOf(%T) = %q, want %q", tc.obj, got, tc.want)
		}
	}
}

// BenchmarkStripForCachePod reports what a pod as a kubelet reports it
// (a server, an exporter and an init container, with the resources the
// kubelet fills in) holds in memory as sent and once cached, a thousand of
// them decoded apart, and what stripping one costs.
func BenchmarkStripForCachePod(b *testing.B) {
	sent := kubeletsPod(b, actiontest.NewDatabase("orders", "postgresql", "16", 1))
	benchmarkStripForCache(b, sent, func() *corev1.Pod { return &corev1.Pod{} }, "pod")
}

// kubeletsPod is db's first pod as a kubelet reports it: a server, an
// exporter and an init container, with the resources the kubelet fills in,
// and the labels its StatefulSet's controller gives it.
func kubeletsPod(b testing.TB, db *dbv1alpha1.Database) *corev1.Pod {
	labels := maps.Clone(actiontest.StatefulSet(b, db).Spec.Template.Labels)
	labels[appsv1.StatefulSetPodNameLabel], labels[appsv1.ControllerRevisionHashLabelKey] = db.Name+"-0", db.Name+"-7d9f8b6c5"
	labels[appsv1.PodIndexLabel] = "0"
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	status := func(name, image string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: image, ImageID: image + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ContainerID: "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Ready: true, Started: ptr.To(true),
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(actiontest.Now)}},
			AllocatedResources: res, Resources: &corev1.ResourceRequirements{Requests: res, Limits: res},
			VolumeMounts: []corev1.VolumeMountStatus{{Name: "data", MountPath: "/var/lib/postgresql/data"},
				{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			User: &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: 999, GID: 999, SupplementalGroups: []int64{999}}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: db.Name + "-0", Namespace: db.Namespace, UID: types.UID(db.Name + "-pod-uid"), ResourceVersion: "42",
			Labels: labels},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "postgresql", Image: "postgres:16"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "192.168.0.1", HostIPs: []corev1.HostIP{{IP: "192.168.0.1"}},
			PodIP: "10.244.0.5", PodIPs: []corev1.PodIP{{IP: "10.244.0.5"}}, StartTime: ptr.To(metav1.NewTime(actiontest.Now)), QOSClass: corev1.PodQOSGuaranteed,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{status("init", "postgres:16")},
			ContainerStatuses:     []corev1.ContainerStatus{status("postgresql", "postgres:16"), status("exporter", "quay.io/prometheuscommunity/postgres-exporter:v0.17.1")}},
	}
}

// BenchmarkStripForCacheStatefulSet reports the heap a StatefulSet holds
// as the builder makes it (no API server defaults: fewer bytes than one
// sent), decoded, and as the cache keeps it (builder.StripTemplates).
func BenchmarkStripForCacheStatefulSet(b *testing.B) {
	db := actiontest.NewDatabase("orders", "postgresql", "16", 3)
	sent := actiontest.RolledOut(actiontest.StatefulSet(b, db), 3)
	sent.UID, sent.ResourceVersion = "sts-uid", "42"
	benchmarkStripForCache(b, sent, func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }, "statefulset")
}

// BenchmarkStripForCacheSecret reports the heap a PostgreSQL Database's
// TLS Secret holds, as the API server sends it and as the cache keeps it
// (no data; the annotations the renewals are decided from).
func BenchmarkStripForCacheSecret(b *testing.B) {
	db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	pem := func(kind string) []byte {
		return fmt.Appendf(nil, "-----BEGIN %s-----\n%s\n-----END %s-----\n", kind, strings.Repeat("A", 1100), kind)
	}
	at := actiontest.Now.Add(90 * 24 * time.Hour)
	sent := actiontest.Object[corev1.Secret](b, builder.NewTLSSecret(db, actiontest.Engine(b, db), builder.ServerCertificate{
		CertPEM: pem("CERTIFICATE"), KeyPEM: pem("PRIVATE KEY"), BundlePEM: pem("CERTIFICATE"),
		Mode: string(dbv1alpha1.TLSRequired), Names: strings.Repeat("d", 64), Serial: strings.Repeat("1f", 16), Issuer: strings.Repeat("2e", 16),
		Bundle: strings.Repeat("b", 64), Trusts: strings.Repeat("2e", 16), NotAfter: at, RenewAt: at.Add(-30 * 24 * time.Hour),
		TrustedSince: actiontest.Now, AuthorityNotAfter: at.Add(3650 * 24 * time.Hour)}))
	sent.UID, sent.ResourceVersion, sent.CreationTimestamp = "secret-uid", "42", metav1.NewTime(actiontest.Now)
	benchmarkStripForCache(b, sent, func() *corev1.Secret { return &corev1.Secret{} }, "secret")
}

// BenchmarkStripForCacheService reports the heap a Database's client
// Service holds with the fields the API server fills in (its cluster IP,
// families, policies), as sent and as the cache keeps it.
func BenchmarkStripForCacheService(b *testing.B) {
	db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	sent := apiFilled(actiontest.Service(b, db))
	sent.UID, sent.ResourceVersion, sent.CreationTimestamp = "service-uid", "42", metav1.NewTime(actiontest.Now)
	benchmarkStripForCache(b, sent, func() *corev1.Service { return &corev1.Service{} }, "service")
}

// apiFilled is s with what the API server fills in a Service the
// controller creates: a cluster IP (but a headless one's), families,
// policies, the ports' protocol.
func apiFilled(s *corev1.Service) *corev1.Service {
	if s.Spec.ClusterIP == "" {
		s.Spec.ClusterIP = "10.96.12.34"
	}
	s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = []corev1.IPFamily{corev1.IPv4Protocol}, ptr.To(corev1.IPFamilyPolicySingleStack)
	s.Spec.SessionAffinity, s.Spec.InternalTrafficPolicy = corev1.ServiceAffinityNone, ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	for i := range s.Spec.Ports {
		s.Spec.Ports[i].Protocol = corev1.ProtocolTCP
	}
	return s
}

// benchUID is the UID of Database i's child j (99: the Database's own), a
// UUID in its canonical text as the API server makes them.
func benchUID(i, j int) types.UID {
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i, j, i%4096, j%4096, i*100+j))
}

// BenchmarkStripForCacheDatabase reports the heap the cached children of a
// PostgreSQL Database with TLS hold: its three Secrets, two Services, its
// StatefulSet, pod and claim, as sent and as cached, 5,000 Databases'
// decoded apart from protobuf as a watch decodes them; and what decoding
// and stripping one Database's costs. Unlike one kind's benchmark, it
// counts what the children of one Database share once cached (the maps of
// their labels, their owner reference), and what Databases of one engine,
// version and size do (their Services' ports, their StatefulSets'
// containers as cached, their claims' requests). It counts them twice,
// each time with a table of its own: with each Database's children one
// after the other, and kind by kind (every Database's first Secret, then
// every one's second...), as a restart's lists give them, and nearly as
// Databases created by the thousand get them: the children that come last
// share what the first left in the table only if it is still there.
func BenchmarkStripForCacheDatabase(b *testing.B) {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		b.Fatal("no protobuf serializer")
	}
	const n = 5000
	sent := make([][][]byte, n)
	for i := range sent {
		db := actiontest.NewDatabase(fmt.Sprintf("orders-%d", i), "postgresql", "16", 1)
		// UIDs as the API server makes them: UUIDs in their text.
		db.UID = benchUID(i, 99)
		e := actiontest.Engine(b, db)
		at := actiontest.Now.Add(90 * 24 * time.Hour)
		pem := fmt.Appendf(nil, "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n", strings.Repeat("A", 1100))
		tls := actiontest.Object[corev1.Secret](b, builder.NewTLSSecret(db, e, builder.ServerCertificate{
			CertPEM: pem, KeyPEM: pem, BundlePEM: pem, Mode: string(dbv1alpha1.TLSRequired), Names: strings.Repeat("d", 64),
			Serial: fmt.Sprintf("%032x", i), Issuer: fmt.Sprintf("%032x", n+i), Bundle: fmt.Sprintf("%064x", i), Trusts: fmt.Sprintf("%032x", n+i),
			NotAfter: at, RenewAt: at.Add(-30 * 24 * time.Hour), TrustedSince: actiontest.Now, AuthorityNotAfter: at.Add(3650 * 24 * time.Hour)}))
		authority := actiontest.Object[corev1.Secret](b, builder.NewAuthoritySecret(db, builder.Authority{CertPEM: pem, KeyPEM: pem,
			Serial: fmt.Sprintf("%032x", n+i), NotAfter: at.Add(3650 * 24 * time.Hour), RenewAt: at.Add(3000 * 24 * time.Hour)}))
		sts := actiontest.RolledOut(actiontest.StatefulSet(b, db), 1)
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: names.ClaimPrefix(db) + "0", Namespace: db.Namespace,
			Labels: sts.Spec.VolumeClaimTemplates[0].Labels, Finalizers: []string{"kubernetes.io/pvc-protection"},
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/selected-node": "node-1"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-" + db.Name,
				StorageClassName: ptr.To("standard"), Resources: sts.Spec.VolumeClaimTemplates[0].Spec.Resources},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests,
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
		children := []runtime.Object{actiontest.Secret(b, db, "password"), tls, authority, apiFilled(actiontest.Service(b, db)), apiFilled(actiontest.HeadlessService(b, db)),
			sts, kubeletsPod(b, db), claim}
		for j, obj := range children {
			o := obj.(metav1.Object)
			o.SetUID(benchUID(i, j))
			o.SetResourceVersion(fmt.Sprint(1000 + i))
			o.SetCreationTimestamp(metav1.NewTime(actiontest.Now))
			gv := corev1.SchemeGroupVersion
			if _, ok := obj.(*appsv1.StatefulSet); ok {
				gv = appsv1.SchemeGroupVersion
			}
			data, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, gv), obj)
			if err != nil {
				b.Fatal(err)
			}
			sent[i] = append(sent[i], data)
		}
	}
	decoder := scheme.Codecs.UniversalDeserializer()
	decode := func(data [][]byte, strip bool) []runtime.Object {
		out := make([]runtime.Object, len(data))
		for j, d := range data {
			obj, _, err := decoder.Decode(d, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if strip {
				cached, err := stripForCache(obj)
				if err != nil {
					b.Fatal(err)
				}
				obj = cached.(runtime.Object)
			}
			out[j] = obj
		}
		return out
	}
	// held is the heap n Databases' children hold, decoded (and
	// stripped) each Database's after the other's, or kind by kind.
	held := func(strip, byKind bool) float64 {
		defer func(t *intern.Table) { cacheStrings = t }(cacheStrings)
		cacheStrings = newCacheStrings()
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		objs := make([][]runtime.Object, n)
		if byKind {
			for i := range objs {
				objs[i] = make([]runtime.Object, 0, len(sent[i]))
			}
			for j := range sent[0] {
				for i := range objs {
					objs[i] = append(objs[i], decode(sent[i][j:j+1], strip)...)
				}
			}
		} else {
			for i := range objs {
				objs[i] = decode(sent[i], strip)
			}
		}
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		goruntime.KeepAlive(objs)
		return float64(after.HeapAlloc-before.HeapAlloc) / n
	}
	asSent, cached, byKind := held(false, false), held(true, false), held(true, true)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		decode(sent[i%n], true)
	}
	b.ReportMetric(asSent, "B/database-sent")
	b.ReportMetric(cached, "B/database-cached")
	b.ReportMetric(byKind, "B/database-cached-by-kind")
}

// benchmarkStripForCache reports the heap each of 1,000 objects like sent
// holds decoded from protobuf, as sent and as stripForCache leaves it, and
// times stripForCache. The copies are of one object, so their maps of
// labels and selectors, and their owner references, are cached as one
// (cacheStrings), as no two Databases' are: BenchmarkStripForCacheDatabase
// counts those right.
func benchmarkStripForCache[T interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}](b *testing.B, sent T, empty func() T, unit string) {
	data, err := sent.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	decode := func() T {
		o := empty()
		if err := o.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
		return o
	}
	const n = 1000
	held := func(strip bool) float64 {
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		// What the cache holds: the object stripForCache returns.
		objs := make([]any, n)
		for i := range objs {
			objs[i] = decode()
			if strip {
				cached, err := stripForCache(objs[i])
				if err != nil {
					b.Fatal(err)
				}
				objs[i] = cached
			}
		}
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		goruntime.KeepAlive(objs)
		return float64(after.HeapAlloc-before.HeapAlloc) / n
	}
	asSent, cached := held(false), held(true)
	// Each iteration strips an object as sent, from a pool decoded again
	// when used up: one object per iteration held b.N of them (9 GB at
	// 843,201 pods).
	objs := make([]T, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%n == 0 {
			b.StopTimer()
			for j := range objs {
				objs[j] = decode()
			}
			b.StartTimer()
		}
		if _, err := stripForCache(objs[i%n]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(asSent, "B/"+unit+"-sent")
	b.ReportMetric(cached, "B/"+unit+"-cached")
}

// countingSink takes the events a broadcaster writes, and counts them.
type countingSink struct{ n atomic.Int64 }

func (s *countingSink) Create(e *corev1.Event) (*corev1.Event, error) { s.n.Add(1); return e, nil }
func (s *countingSink) Update(e *corev1.Event) (*corev1.Event, error) { s.n.Add(1); return e, nil }
func (s *countingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s.n.Add(1)
	return e, nil
}

// BenchmarkEventCorrelator reports the heap an event broadcaster holds
// after two events (a create and Running) on each of n Databases, with
// client-go's default memory of 4,096 keys and with the controller's
// (eventCorrelatorKeys).
func BenchmarkEventCorrelator(b *testing.B) {
	heap := func() uint64 {
		var m goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, keys := range []int{4096, eventCorrelatorKeys} {
		for _, n := range []int{1000, 5000} {
			b.Run(fmt.Sprintf("keys=%d/databases=%d", keys, n), func(b *testing.B) {
				var held float64
				for range b.N {
					ctx, cancel := context.WithCancel(context.Background())
					before := heap()
					broadcaster := newEventBroadcaster(ctx, keys)
					sink := &countingSink{}
					broadcaster.StartRecordingToSink(sink)
					recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controllerAgentName})
					for i := range n {
						db := actiontest.NewDatabase(fmt.Sprintf("db-%05d", i), "postgresql", "16", 1)
						db.UID = types.UID(fmt.Sprintf("uid-%05d", i))
						recorder.Eventf(db, corev1.EventTypeNormal, reconcile.ReasonCreated, "Created Secret %[1]s-credentials, Service %[1]s-headless, Service %[1]s, StatefulSet %[1]s", db.Name)
						recorder.Eventf(db, corev1.EventTypeNormal, reconcile.ReasonRunning, "postgresql 16 is running: 1/1 replicas are ready")
						// The broadcaster drops what overflows its queue
						// of 1,000: each Database's events are written
						// before the next one's.
						for sink.n.Load() < int64(2*(i+1)) {
							time.Sleep(10 * time.Microsecond)
						}
					}
					held += float64(heap() - before)
					broadcaster.Shutdown()
					cancel()
				}
				b.ReportMetric(held/float64(b.N)/(1<<20), "MiB-held")
			})
		}
	}
}
