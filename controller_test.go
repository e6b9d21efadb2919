package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/fake"
	informers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/pgsql"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/reconcile"
	"github.com/dbcontroller/database-controller/pkg/status"
)

var (
	noResync = func() time.Duration { return 0 }()
	testNow  = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
)

// fixture seeds the listers and the fake clientsets, runs one sync and
// compares the API actions it made, one by one, with the expected ones.
type fixture struct {
	t *testing.T

	client     *fake.Clientset
	kubeclient *k8sfake.Clientset

	// Objects to put in the listers.
	dbLister          []*dbv1alpha1.Database
	statefulSetLister []*appsv1.StatefulSet
	serviceLister     []*corev1.Service
	secretLister      []*corev1.Secret
	claimLister       []*corev1.PersistentVolumeClaim
	podLister         []*corev1.Pod
	jobLister         []*batchv1.Job
	backupLister      []*dbv1alpha1.DatabaseBackup
	claimEventLister  []*corev1.Event
	// claimEvents is the indexer of the informer of claims' events, once
	// newController built the controller.
	claimEvents cache.Indexer

	// Actions expected on each clientset.
	kubeactions []core.Action
	actions     []core.Action
	// Events expected, as "Type Reason Message".
	events []string

	// Objects in the fake clientsets at start.
	kubeobjects []runtime.Object
	objects     []runtime.Object

	clock *testclock.FakePassiveClock
	// reactors are added to the Database API's fake clientset.
	reactors []func(*fake.Clientset)
	// sql answers for the servers of replicated Databases.
	sql *fakeSQL
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, clock: testclock.NewFakePassiveClock(testNow), sql: &fakeSQL{}}
}

// passwordSource gives a fixed, known password: "AAAA...".
func passwordSource() *bytes.Reader { return bytes.NewReader(make([]byte, 64)) }

const testPassword = "AAAAAAAAAAAAAAAAAAAAAAAA"

// newDatabase is a Database as the controller finds it after its first
// write: under deletionPolicy Retain it carries the controller's finalizer
// (TestNewDatabaseGetsItsFinalizerFirst covers the write that adds it).
func newDatabase(name string, engineName dbv1alpha1.Engine, version string, replicas int32) *dbv1alpha1.Database {
	return &dbv1alpha1.Database{
		TypeMeta: metav1.TypeMeta{APIVersion: dbv1alpha1.SchemeGroupVersion.String(), Kind: "Database"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       metav1.NamespaceDefault,
			UID:             types.UID(name + "-uid"),
			Generation:      1,
			ResourceVersion: "1",
			Finalizers:      []string{dbv1alpha1.FinalizerDatabase},
		},
		Spec: dbv1alpha1.DatabaseSpec{
			Engine:         engineName,
			Version:        version,
			Replicas:       ptr.To(replicas),
			Storage:        dbv1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
			DeletionPolicy: dbv1alpha1.DeletionPolicyRetain,
		},
	}
}

func profile(t *testing.T, db *dbv1alpha1.Database) engine.Engine {
	p, err := registry.Lookup(string(db.Spec.Engine))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Builders of the children as the controller creates them.

func expectedSecret(t *testing.T, db *dbv1alpha1.Database, password string) *corev1.Secret {
	s := &corev1.Secret{}
	if err := builder.Convert(builder.NewSecret(db, profile(t, db), password), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func expectedHeadless(t *testing.T, db *dbv1alpha1.Database) *corev1.Service {
	s := &corev1.Service{}
	if err := builder.Convert(desired(t, db).HeadlessService, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func expectedService(t *testing.T, db *dbv1alpha1.Database) *corev1.Service {
	s := &corev1.Service{}
	if err := builder.Convert(desired(t, db).Service, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func expectedStatefulSet(t *testing.T, db *dbv1alpha1.Database) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{}
	if err := builder.Convert(desired(t, db).StatefulSet, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// rolledOut marks sts as fully rolled out with n ready replicas.
func rolledOut(sts *appsv1.StatefulSet, n int32) *appsv1.StatefulSet {
	sts.Generation = 1
	sts.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: 1, Replicas: n, ReadyReplicas: n, AvailableReplicas: n, UpdatedReplicas: n,
		CurrentRevision: "rev-1", UpdateRevision: "rev-1",
	}
	return sts
}

// converged seeds a Database that reached Running with all its children,
// and its stored status as the controller last wrote it.
func (f *fixture) converged(db *dbv1alpha1.Database) (*appsv1.StatefulSet, *corev1.Service, *corev1.Service, *corev1.Secret) {
	secret := expectedSecret(f.t, db, "rotated-by-user")
	headless := expectedHeadless(f.t, db)
	svc := expectedService(f.t, db)
	sts := rolledOut(expectedStatefulSet(f.t, db), *db.Spec.Replicas)
	image, _ := profile(f.t, db).Image(db.Spec.Version, db.Spec.Image)
	e := profile(f.t, db)
	db.Status = status.Compute(status.Input{Database: db, Endpoint: names.Endpoint(db, e.Runtime().Port), StatefulSet: sts, Image: image,
		EndOfLife: e.EndOfLife(db.Spec.Version), NewFeatureCompatibilityVersion: e.FeatureCompatibilityVersion(db.Spec.Version),
		Now: metav1.NewTime(testNow.Add(-time.Hour))})
	f.seed(db, sts, headless, svc, secret)
	return sts, headless, svc, secret
}

// seed puts objects in both the listers and the fake clientsets. Like
// objects decoded by an informer, children carry no apiVersion and kind.
func (f *fixture) seed(objs ...runtime.Object) {
	for _, o := range objs {
		switch o.(type) {
		case *dbv1alpha1.Database, *dbv1alpha1.DatabaseBackup:
		default:
			o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
		switch o := o.(type) {
		case *dbv1alpha1.Database:
			f.dbLister = append(f.dbLister, o)
			f.objects = append(f.objects, o)
		case *dbv1alpha1.DatabaseBackup:
			f.backupLister = append(f.backupLister, o)
			f.objects = append(f.objects, o)
		case *appsv1.StatefulSet:
			f.statefulSetLister = append(f.statefulSetLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.Service:
			f.serviceLister = append(f.serviceLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.Secret:
			f.secretLister = append(f.secretLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.PersistentVolumeClaim:
			f.claimLister = append(f.claimLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.Pod:
			f.podLister = append(f.podLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *batchv1.Job:
			f.jobLister = append(f.jobLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.Event:
			f.claimEventLister = append(f.claimEventLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		default:
			f.t.Fatalf("cannot seed %T", o)
		}
	}
}

func (f *fixture) newController(ctx context.Context) (*Controller, informers.SharedInformerFactory, kubeinformers.SharedInformerFactory, *record.FakeRecorder) {
	f.client = fake.NewSimpleClientset(f.objects...)
	// The generated fake has no schema for server-side apply of Database
	// status; accept the apply, which is recorded as an action either way.
	f.client.PrependReactor("patch", "databases", func(a core.Action) (bool, runtime.Object, error) {
		p := a.(core.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType || p.GetSubresource() != "status" {
			return false, nil, nil
		}
		obj := &dbv1alpha1.Database{}
		return true, obj, json.Unmarshal(p.GetPatch(), obj)
	})
	for _, add := range f.reactors {
		add(f.client)
	}
	f.kubeclient = k8sfake.NewClientset(f.kubeobjects...)

	i := informers.NewSharedInformerFactory(f.client, noResync)
	k8sI := kubeinformers.NewSharedInformerFactory(f.kubeclient, noResync)
	eventsI := kubeinformers.NewSharedInformerFactory(f.kubeclient, noResync)
	recorder := record.NewFakeRecorder(100)

	c, err := NewController(ctx, Config{
		KubeClient:          f.kubeclient,
		DBClient:            f.client,
		KubeInformers:       k8sI,
		DBInformers:         i,
		ClaimEventInformers: eventsI,
		Recorder:            recorder,
		Clock:               f.clock,
		Random:              passwordSource(),
		SQL:                 f.sql,
	})
	if err != nil {
		f.t.Fatal(err)
	}

	for _, d := range f.dbLister {
		_ = i.Dbcontroller().V1alpha1().Databases().Informer().GetIndexer().Add(d)
	}
	for _, s := range f.statefulSetLister {
		_ = k8sI.Apps().V1().StatefulSets().Informer().GetIndexer().Add(s)
	}
	for _, s := range f.serviceLister {
		_ = k8sI.Core().V1().Services().Informer().GetIndexer().Add(s)
	}
	for _, s := range f.secretLister {
		_ = k8sI.Core().V1().Secrets().Informer().GetIndexer().Add(s)
	}
	for _, pvc := range f.claimLister {
		_ = k8sI.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(pvc)
	}
	for _, pod := range f.podLister {
		_ = k8sI.Core().V1().Pods().Informer().GetIndexer().Add(pod)
	}
	for _, job := range f.jobLister {
		_ = k8sI.Batch().V1().Jobs().Informer().GetIndexer().Add(job)
	}
	for _, b := range f.backupLister {
		_ = i.Dbcontroller().V1alpha1().DatabaseBackups().Informer().GetIndexer().Add(b)
	}
	f.claimEvents = eventsI.Core().V1().Events().Informer().GetIndexer()
	for _, e := range f.claimEventLister {
		_ = f.claimEvents.Add(e)
	}
	return c, i, k8sI, recorder
}

func (f *fixture) run(ctx context.Context, ref cache.ObjectName) *Controller {
	return f.runController(ctx, ref, false)
}

func (f *fixture) runExpectError(ctx context.Context, ref cache.ObjectName) *Controller {
	return f.runController(ctx, ref, true)
}

func (f *fixture) runController(ctx context.Context, ref cache.ObjectName, expectError bool) *Controller {
	c, _, _, recorder := f.newController(ctx)
	f.syncAndCheck(ctx, c, recorder, ref, expectError)
	return c
}

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
	checkActions(f.t, "database clientset", f.actions, filterInformerActions(f.client.Actions()))
	checkActions(f.t, "kube clientset", f.kubeactions, filterInformerActions(f.kubeclient.Actions()))
	checkEvents(f.t, f.events, recorder)
}

// syncAndCheckSkipped is syncAndCheck, which also checks whether the pass
// was skipped as settled (reconcile.Reconciler.Sync).
func (f *fixture) syncAndCheckSkipped(ctx context.Context, c *Controller, recorder *record.FakeRecorder, ref cache.ObjectName, wantSkipped bool) {
	f.t.Helper()
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	skipped, err := c.syncHandler(ctx, ref)
	if err != nil {
		f.t.Fatal(err)
	}
	if skipped != wantSkipped {
		f.t.Fatalf("skipped = %v, want %v", skipped, wantSkipped)
	}
	checkActions(f.t, "database clientset", f.actions, filterInformerActions(f.client.Actions()))
	checkActions(f.t, "kube clientset", f.kubeactions, filterInformerActions(f.kubeclient.Actions()))
	checkEvents(f.t, f.events, recorder)
}

func checkActions(t *testing.T, which string, expected, actual []core.Action) {
	t.Helper()
	for i, action := range actual {
		if i >= len(expected) {
			t.Errorf("%s: %d unexpected actions: %s", which, len(actual)-len(expected), describeActions(actual[i:]))
			break
		}
		checkAction(t, expected[i], action)
	}
	if len(expected) > len(actual) {
		t.Errorf("%s: %d additional expected actions: %s", which, len(expected)-len(actual), describeActions(expected[len(actual):]))
	}
}

func describeActions(actions []core.Action) string {
	var parts []string
	for _, a := range actions {
		parts = append(parts, fmt.Sprintf("%s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource()))
	}
	return strings.Join(parts, ", ")
}

// checkAction verifies that expected and actual are the same verb on the same
// resource, with the same object or patch.
func checkAction(t *testing.T, expected, actual core.Action) {
	t.Helper()
	if !(expected.Matches(actual.GetVerb(), actual.GetResource().Resource) && actual.GetSubresource() == expected.GetSubresource()) {
		t.Errorf("expected action %s %s/%s, got %s %s/%s", expected.GetVerb(), expected.GetResource().Resource, expected.GetSubresource(),
			actual.GetVerb(), actual.GetResource().Resource, actual.GetSubresource())
		return
	}
	if reflect.TypeOf(actual) != reflect.TypeOf(expected) {
		t.Errorf("action %s has type %T, want %T", actual.GetVerb(), actual, expected)
		return
	}
	switch a := actual.(type) {
	case core.CreateActionImpl:
		e := expected.(core.CreateActionImpl)
		if !equality.Semantic.DeepEqual(e.GetObject(), a.GetObject()) {
			t.Errorf("create %s: object differs:\n got: %s\nwant: %s", a.GetResource().Resource, toJSON(a.GetObject()), toJSON(e.GetObject()))
		}
	case core.UpdateActionImpl:
		e := expected.(core.UpdateActionImpl)
		if !equality.Semantic.DeepEqual(e.GetObject(), a.GetObject()) {
			t.Errorf("update %s: object differs:\n got: %s\nwant: %s", a.GetResource().Resource, toJSON(a.GetObject()), toJSON(e.GetObject()))
		}
	case core.PatchActionImpl:
		e := expected.(core.PatchActionImpl)
		if a.GetName() != e.GetName() || a.GetPatchType() != e.GetPatchType() {
			t.Errorf("patch: got %s %s, want %s %s", a.GetPatchType(), a.GetName(), e.GetPatchType(), e.GetName())
		}
		var got, want any
		_ = json.Unmarshal(a.GetPatch(), &got)
		_ = json.Unmarshal(e.GetPatch(), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("patch %s: differs:\n got: %s\nwant: %s", a.GetName(), a.GetPatch(), e.GetPatch())
		}
	case core.GetActionImpl:
		e := expected.(core.GetActionImpl)
		if a.GetName() != e.GetName() {
			t.Errorf("get: got %s, want %s", a.GetName(), e.GetName())
		}
	case core.DeleteActionImpl:
		e := expected.(core.DeleteActionImpl)
		if a.GetName() != e.GetName() {
			t.Errorf("delete: got %s, want %s", a.GetName(), e.GetName())
		}
		if got, want := a.GetDeleteOptions(), e.GetDeleteOptions(); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("delete %s: options %+v, want %+v", a.GetName(), got, want)
		}
	case core.ListActionImpl:
		e := expected.(core.ListActionImpl)
		if got, want := a.GetListRestrictions().Fields.String(), e.GetListRestrictions().Fields.String(); got != want {
			t.Errorf("list %s: field selector %q, want %q", a.GetResource().Resource, got, want)
		}
	default:
		t.Errorf("uncaptured action %s %s", actual.GetVerb(), actual.GetResource().Resource)
	}
}

func toJSON(o any) string {
	b, _ := json.Marshal(o)
	return string(b)
}

func checkEvents(t *testing.T, expected []string, recorder *record.FakeRecorder) {
	t.Helper()
	var got []string
	for {
		select {
		case e := <-recorder.Events:
			got = append(got, e)
			continue
		default:
		}
		break
	}
	if len(got) != len(expected) {
		t.Errorf("events: got %d %q, want %d %q", len(got), got, len(expected), expected)
		return
	}
	for i := range expected {
		if !strings.HasPrefix(got[i], expected[i]) {
			t.Errorf("event %d: got %q, want one starting with %q", i, got[i], expected[i])
		}
	}
}

// filterInformerActions drops the list and watch calls of informers. The
// controller reads nothing else by list or watch.
func filterInformerActions(actions []core.Action) []core.Action {
	var ret []core.Action
	for _, action := range actions {
		if action.GetVerb() == "list" || action.GetVerb() == "watch" {
			continue
		}
		ret = append(ret, action)
	}
	return ret
}

var (
	secretsResource      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	servicesResource     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	statefulSetsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	databasesResource    = schema.GroupVersionResource{Group: "dbcontroller.io", Version: "v1alpha1", Resource: "databases"}
)

func (f *fixture) expectCreate(resource schema.GroupVersionResource, obj runtime.Object) {
	ns := obj.(metav1.Object).GetNamespace()
	f.kubeactions = append(f.kubeactions, core.NewCreateAction(resource, ns, obj))
}

func (f *fixture) expectGet(resource schema.GroupVersionResource, ns, name string) {
	f.kubeactions = append(f.kubeactions, core.NewGetAction(resource, ns, name))
}

func (f *fixture) expectApply(resource schema.GroupVersionResource, ns, name string, applyConfiguration any) {
	patch, err := json.Marshal(applyConfiguration)
	if err != nil {
		f.t.Fatal(err)
	}
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(resource, ns, name, types.ApplyPatchType, patch))
}

func (f *fixture) expectStatusUpdate(db *dbv1alpha1.Database, st dbv1alpha1.DatabaseStatus) {
	status := map[string]any{}
	if err := builder.Convert(st, &status); err != nil {
		f.t.Fatal(err)
	}
	patch, err := json.Marshal(map[string]any{
		"apiVersion": "dbcontroller.io/v1alpha1",
		"kind":       "Database",
		"metadata":   map[string]any{"name": db.Name, "namespace": db.Namespace},
		"status":     status,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.actions = append(f.actions, core.NewPatchSubresourceAction(databasesResource, db.Namespace, db.Name, types.ApplyPatchType, patch, "status"))
}

func ref(db *dbv1alpha1.Database) cache.ObjectName { return cache.MetaObjectToName(db) }

// wantStatus is the status the controller must write. It is spelled out
// here rather than computed, so these tests do not trust status.Compute.
func wantStatus(db *dbv1alpha1.Database, phase dbv1alpha1.Phase, replicas, ready int32, currentVersion string,
	readyStatus metav1.ConditionStatus, readyReason, readyMsg string,
	progStatus metav1.ConditionStatus, progReason, progMsg string) dbv1alpha1.DatabaseStatus {
	now := metav1.NewTime(testNow)
	port := map[dbv1alpha1.Engine]string{"postgresql": "5432", "mysql": "3306", "mongodb": "27017"}[db.Spec.Engine]
	return dbv1alpha1.DatabaseStatus{
		Phase:              phase,
		Replicas:           replicas,
		ReadyReplicas:      ready,
		CurrentVersion:     currentVersion,
		Endpoint:           db.Name + ".default.svc:" + port,
		CredentialsSecret:  db.Name + "-credentials",
		Selector:           "app.kubernetes.io/instance=" + db.Name + ",app.kubernetes.io/name=" + string(db.Spec.Engine),
		ObservedGeneration: db.Generation,
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: readyStatus, Reason: readyReason, Message: readyMsg, ObservedGeneration: db.Generation, LastTransitionTime: now},
			{Type: "Progressing", Status: progStatus, Reason: progReason, Message: progMsg, ObservedGeneration: db.Generation, LastTransitionTime: now},
		},
	}
}

// keepTransitionTime sets a condition's LastTransitionTime to when the
// fixture's converged Database last changed it: a condition whose status
// does not change keeps its time.
func keepTransitionTime(st *dbv1alpha1.DatabaseStatus, condType string) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == condType {
			st.Conditions[i].LastTransitionTime = metav1.NewTime(testNow.Add(-time.Hour))
		}
	}
}

func TestCreatesEverythingForANewDatabase(t *testing.T) {
	for _, eng := range []dbv1alpha1.Engine{"postgresql", "mysql", "mongodb"} {
		t.Run(string(eng), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			version := map[dbv1alpha1.Engine]string{"postgresql": "16", "mysql": "8.4", "mongodb": "7.0"}[eng]
			db := newDatabase("orders", eng, version, 1)
			f.seed(db)

			f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
			f.expectCreate(servicesResource, expectedHeadless(t, db))
			f.expectCreate(servicesResource, expectedService(t, db))
			f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
			f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 0, 0, "",
				"False", "ReplicasNotReady", "0/1 replicas are ready",
				"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
			f.events = []string{
				"Normal Created Created Secret orders-credentials, Service orders-headless, Service orders, StatefulSet orders",
			}
			f.run(ctx, ref(db))
		})
	}
}

func TestSteadyStateMakesNoWrites(t *testing.T) {
	for _, replicas := range []int32{1, 0} {
		t.Run(fmt.Sprintf("replicas=%d", replicas), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", replicas)
			f.converged(db)
			// No actions and no events expected.
			f.run(ctx, ref(db))
		})
	}
	t.Run("replicas=3, replicated", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 3)
		f.convergedReplicated(db)
		// One read: the credentials to ask the servers with, read once
		// per version of the Secret. No write, no event.
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.run(ctx, ref(db))
		want := []string{"probe 192.0.2.10 as postgres", "probe 192.0.2.11 as postgres", "probe 192.0.2.12 as postgres"}
		if got := sortedCopy(f.sql.calls); !reflect.DeepEqual(got, want) {
			t.Errorf("SQL calls = %q, want %q", got, want)
		}
	})
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
}

func TestSteadyStateToleratesServerDefaultsAndOthersFields(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "mysql", "8.4", 1)
	sts, _, svc, _ := f.converged(db)
	// What the API server and other actors add must not look like drift.
	svc.Spec.ClusterIP = "10.0.0.12"
	svc.Spec.ClusterIPs = []string{"10.0.0.12"}
	svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
	svc.Annotations["team"] = "payments"
	sts.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	sts.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	sts.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	sts.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}
	sts.Labels["added-by-someone"] = "yes"
	f.run(ctx, ref(db))
}

func TestDriftIsRepaired(t *testing.T) {
	tests := []struct {
		name  string
		drift func(f *fixture, sts *appsv1.StatefulSet, headless, svc *corev1.Service)
		// expect registers the expected actions on the drifted fixture.
		expect func(f *fixture, db *dbv1alpha1.Database)
		event  string
	}{
		{
			name: "StatefulSet replicas edited",
			drift: func(f *fixture, sts *appsv1.StatefulSet, _, _ *corev1.Service) {
				sts.Spec.Replicas = ptr.To[int32](5)
			},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			},
			event: "Normal Updated Updated StatefulSet orders to match the Database spec",
		},
		{
			name: "StatefulSet image edited",
			drift: func(f *fixture, sts *appsv1.StatefulSet, _, _ *corev1.Service) {
				sts.Spec.Template.Spec.Containers[0].Image = "postgres:latest"
			},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			},
			event: "Normal Updated Updated StatefulSet orders to match the Database spec",
		},
		{
			name: "client Service port edited",
			drift: func(f *fixture, _ *appsv1.StatefulSet, _, svc *corev1.Service) {
				svc.Spec.Ports[0].Port = 15432
			},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.expectApply(servicesResource, "default", "orders", desired(t, db).Service)
			},
			event: "Normal Updated Updated Service orders to match the Database spec",
		},
		{
			name: "headless Service made non-headless selector edited",
			drift: func(f *fixture, _ *appsv1.StatefulSet, headless, _ *corev1.Service) {
				headless.Spec.Selector = map[string]string{"app": "other"}
			},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.expectApply(servicesResource, "default", "orders-headless", desired(t, db).HeadlessService)
			},
			event: "Normal Updated Updated Service orders-headless to match the Database spec",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts, headless, svc, _ := f.converged(db)
			tt.drift(f, sts, headless, svc)
			tt.expect(f, db)
			f.events = []string{tt.event}
			f.run(ctx, ref(db))
		})
	}
}

// Two kinds of drift that a comparison of the desired fields alone cannot
// see: a field the new spec no longer sets, and a field the controller sets
// to false that someone else cleared. Each is repaired with one apply.
func TestDriftTheFieldComparisonAloneMisses(t *testing.T) {
	t.Run("spec.resources removed", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		db.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		f.converged(db)
		db.Spec.Resources = nil
		db.Generation = 2
		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
		st := db.Status.DeepCopy()
		st.ObservedGeneration = 2
		for i := range st.Conditions {
			st.Conditions[i].ObservedGeneration = 2
		}
		f.expectStatusUpdate(db, *st)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.run(ctx, ref(db))
	})
	for _, tt := range []struct {
		name  string
		clear func(*appsv1.StatefulSet)
	}{
		{"allowPrivilegeEscalation: false cleared", func(sts *appsv1.StatefulSet) {
			sts.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}},
		{"automountServiceAccountToken: false cleared", func(sts *appsv1.StatefulSet) {
			sts.Spec.Template.Spec.AutomountServiceAccountToken = nil
		}},
		{"enableServiceLinks: false cleared", func(sts *appsv1.StatefulSet) {
			sts.Spec.Template.Spec.EnableServiceLinks = nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts, _, _, _ := f.converged(db)
			tt.clear(sts)
			f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
			f.run(ctx, ref(db))
		})
	}
}

func desiredStatefulSet(t *testing.T, db *dbv1alpha1.Database) any {
	return desired(t, db).StatefulSet
}

// desired is the plan of a Database with nothing observed: its children as
// the controller creates them.
func desired(t *testing.T, db *dbv1alpha1.Database) *plan.Plan {
	t.Helper()
	p := plan.Compute(db, plan.Observed{})
	if p.Problem != nil {
		t.Fatal(p.Problem)
	}
	return p
}

func TestDeletedServiceIsRecreated(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	// The client Service is gone from the cache and from the API server.
	f.serviceLister = f.serviceLister[:1]
	f.kubeobjects = f.kubeobjects[:len(f.kubeobjects)-2]
	f.kubeobjects = append(f.kubeobjects, f.secretLister[0])
	f.expectCreate(servicesResource, expectedService(t, db))
	f.events = []string{"Normal Created Created Service orders"}
	f.run(ctx, ref(db))
}

func TestScaling(t *testing.T) {
	tests := []struct {
		name       string
		from, to   int32
		wantStatus func(db *dbv1alpha1.Database) dbv1alpha1.DatabaseStatus
	}{
		{
			name: "up from 1 to 3", from: 1, to: 3,
			wantStatus: func(db *dbv1alpha1.Database) dbv1alpha1.DatabaseStatus {
				return wantStatus(db, "Updating", 1, 1, "8.4",
					"False", "ReplicasNotReady", "1/3 replicas are ready",
					"True", "Scaling", "scaling from 1 to 3 replicas: 1 ready")
			},
		},
		{
			name: "down from 3 to 0", from: 3, to: 0,
			wantStatus: func(db *dbv1alpha1.Database) dbv1alpha1.DatabaseStatus {
				return wantStatus(db, "Updating", 3, 3, "8.4",
					"False", "Stopping", "stopping: 3 replicas still running",
					"True", "Stopping", "stopping: 3 replicas still running")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			// MySQL's replicas are independent servers: this is the
			// StatefulSet's scaling alone (TestReplication* cover
			// PostgreSQL's, which has a primary to keep).
			db := newDatabase("orders", "mysql", "8.4", tt.from)
			f.converged(db)
			db.Spec.Replicas = ptr.To(tt.to)
			db.Generation = 2

			f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			f.expectStatusUpdate(db, tt.wantStatus(db))
			f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
			f.run(ctx, ref(db))
		})
	}
}

func TestStoppedWhenScaledToZeroSettles(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	sts, _, _, _ := f.converged(db)
	db.Spec.Replicas = ptr.To[int32](0)
	db.Generation = 2
	// As the controller applied it for replicas 0: with that spec's digest.
	sts.Spec.Replicas = ptr.To[int32](0)
	sts.Annotations = expectedStatefulSet(t, db).Annotations
	rolledOut(sts, 0)

	st := wantStatus(db, "Stopped", 0, 0, "16",
		"False", "Stopped", "replicas is 0: the database is stopped and its data is kept",
		"False", "Converged", "the Database matches its spec")
	keepTransitionTime(&st, "Progressing")
	f.expectStatusUpdate(db, st)
	f.run(ctx, ref(db))
}

func TestForeignObjectIsLeftUntouched(t *testing.T) {
	t.Run("visible in the cache", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		foreign := expectedStatefulSet(t, db)
		foreign.OwnerReferences = nil
		f.seed(db, foreign)

		f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
		f.expectCreate(servicesResource, expectedHeadless(t, db))
		f.expectCreate(servicesResource, expectedService(t, db))
		msg := "StatefulSet default/orders already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name"
		f.expectStatusUpdate(db, wantStatus(db, "Failed", 0, 0, "",
			"False", "ResourceConflict", msg, "False", "ResourceConflict", msg))
		f.events = []string{
			"Normal Created Created Secret orders-credentials, Service orders-headless, Service orders",
			"Warning ResourceConflict " + msg,
		}
		f.run(ctx, ref(db))
	})

	t.Run("outside the filtered cache", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		f.seed(db)
		foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		f.kubeobjects = append(f.kubeobjects, foreign)

		f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
		f.expectCreate(servicesResource, expectedHeadless(t, db))
		f.expectCreate(servicesResource, expectedService(t, db))
		f.expectGet(servicesResource, "default", "orders")
		msg := "Service default/orders already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name"
		f.expectStatusUpdate(db, wantStatus(db, "Failed", 0, 0, "",
			"False", "ResourceConflict", msg, "False", "ResourceConflict", msg))
		f.events = []string{
			"Normal Created Created Secret orders-credentials, Service orders-headless",
			"Warning ResourceConflict " + msg,
		}
		f.run(ctx, ref(db))
	})
}

// A Database blocked by an object it does not own is looked at again on a
// capped backoff, with one read per look and no failed create; once the
// object goes, the next look creates the child.
func TestConflictIsRecheckedWithOneRead(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.seed(db, expectedSecret(t, db, "pw"), expectedHeadless(t, db))
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	f.kubeobjects = append(f.kubeobjects, foreign)
	c, dbI, _, recorder := f.newController(ctx)

	// The first look: a create that fails, and a read.
	msg := "Service default/orders already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name"
	st := wantStatus(db, "Failed", 0, 0, "", "False", "ResourceConflict", msg, "False", "ResourceConflict", msg)
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectGet(servicesResource, "default", "orders")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning ResourceConflict " + msg}
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
	if n := c.recheck.NumRequeues(ref(db)); n != 1 {
		t.Fatalf("rechecks scheduled = %d, want 1", n)
	}

	// The status is stored. The next looks: one read each, nothing written.
	stored := db.DeepCopy()
	stored.Status = st
	if err := dbI.Dbcontroller().V1alpha1().Databases().Informer().GetIndexer().Update(stored); err != nil {
		t.Fatal(err)
	}
	f.actions, f.kubeactions, f.events = nil, nil, nil
	f.expectGet(servicesResource, "default", "orders")
	for range 2 {
		f.syncAndCheck(ctx, c, recorder, ref(db), false)
	}
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

	// The foreign Service is deleted: the next look creates ours.
	if err := f.kubeclient.CoreV1().Services("default").Delete(ctx, "orders", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kubeactions = nil
	f.expectGet(servicesResource, "default", "orders")
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
	st = wantStatus(db, "Provisioning", 0, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Normal Created Created Service orders, StatefulSet orders"}
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
	if n := c.recheck.NumRequeues(ref(db)); n != 0 {
		t.Fatalf("rechecks still scheduled after the conflict cleared: %d", n)
	}
}

func TestInvalidSpecSetsConditionWithoutTouchingAnything(t *testing.T) {
	tests := []struct {
		name    string
		db      func() *dbv1alpha1.Database
		reason  string
		message string
	}{
		{
			name:    "unknown version",
			db:      func() *dbv1alpha1.Database { return newDatabase("orders", "postgresql", "9", 1) },
			reason:  "UnknownVersion",
			message: `version "9" of postgresql is not in the catalog (known: 14, 15, 16, 17, 18); use one of those or set spec.image`,
		},
		{
			name: "downgrade",
			db: func() *dbv1alpha1.Database {
				db := newDatabase("orders", "postgresql", "15", 1)
				db.Status.CurrentVersion = "16"
				return db
			},
			reason:  "DowngradeRefused",
			message: "version 15 is older than the running version 16; postgresql cannot be downgraded in place: set spec.version back to 16 or later",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := tt.db()
			f.seed(db)
			st := wantStatus(db, "Failed", 0, 0, db.Status.CurrentVersion,
				"False", tt.reason, tt.message, "False", tt.reason, tt.message)
			f.expectStatusUpdate(db, st)
			f.events = []string{"Warning " + tt.reason + " " + tt.message}
			f.run(ctx, ref(db))

			// The next sync of the same spec is a steady state: no write, no
			// event, and no error, so no hot requeue.
			f2 := newFixture(t)
			db2 := db.DeepCopy()
			db2.Status = st
			f2.seed(db2)
			f2.run(ctx, ref(db2))
		})
	}
}

func TestDowngradeOfARunningDatabaseLeavesItRunning(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	db.Spec.Version = "15"
	db.Generation = 2
	msg := "version 15 is older than the running version 16; postgresql cannot be downgraded in place: set spec.version back to 16 or later"
	st := wantStatus(db, "Failed", 1, 1, "16", "False", "DowngradeRefused", msg, "False", "DowngradeRefused", msg)
	keepTransitionTime(&st, "Progressing") // False before and after
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning DowngradeRefused " + msg}
	f.run(ctx, ref(db))
}

// Version changes the data cannot take leave the StatefulSet untouched:
// only the status and a Warning event say why, and how to get there.
func TestRefusedVersionChangesLeaveTheStatefulSetUntouched(t *testing.T) {
	tests := []struct {
		name                  string
		engine                dbv1alpha1.Engine
		running, fcv, desired string
		reason, msg           string
	}{
		{"PostgreSQL major upgrade", "postgresql", "16", "", "17", "MajorUpgradeRefused",
			"PostgreSQL 17 cannot read the data directory that PostgreSQL 16 wrote, so the StatefulSet is left as it is. To move to 17, back this Database up (a DatabaseBackup) and restore the backup into a new Database of version 17 (spec.restore.backup); or set spec.version back to 16"},
		{"MongoDB series skip", "mongodb", "6.0", "6.0", "8.0", "SeriesSkipRefused",
			"mongodb upgrades one release series at a time along 6.0 → 7.0 → 8.0; 6.0 to 8.0 skips or leaves that path, and the data of 6.0 cannot be read by 8.0. Set spec.version to the next series (7.0), wait for Running, then go on; or set spec.version back to 6.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", tt.engine, tt.running, 1)
			f.converged(db)
			db.Status.FeatureCompatibilityVersion = tt.fcv
			db.Spec.Version = tt.desired
			db.Generation = 2
			st := wantStatus(db, "Failed", 1, 1, tt.running, "False", tt.reason, tt.msg, "False", tt.reason, tt.msg)
			st.FeatureCompatibilityVersion = tt.fcv
			keepTransitionTime(&st, "Progressing") // False before and after
			if tt.running == "6.0" {
				// mongo:6.0 is end of life: its condition stays as it was.
				eol := *meta.FindStatusCondition(db.Status.Conditions, "VersionSupported")
				eol.ObservedGeneration = 2
				st.Conditions = append(st.Conditions, eol)
			}
			f.expectStatusUpdate(db, st)
			f.events = []string{"Warning " + tt.reason + " " + tt.msg}
			f.run(ctx, ref(db))
		})
	}
}

// A version that no longer gets upstream rebuilds runs, with a
// VersionSupported condition and one Warning event, and no more after that.
func TestEndOfLifeVersionWarnsOnceAndRuns(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("inventory", "mysql", "8.0", 1)
	sts := rolledOut(expectedStatefulSet(t, db), 1)
	f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
	msg := `MySQL 8.0 is end of life: the mysql:8.0 image gets no more upstream rebuilds, security fixes included. It keeps running; move to 8.4 (spec.version: "8.4"), which upgrades the data in place and disables mysql_native_password by default`
	st := wantStatus(db, "Running", 1, 1, "8.0", "True", "AllReplicasReady", "1/1 replicas are ready", "False", "Converged", "the Database matches its spec")
	st.Conditions = append(st.Conditions, metav1.Condition{Type: "VersionSupported", Status: "False", Reason: "EndOfLife", Message: msg,
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)})
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning EndOfLife " + msg, "Normal Running mysql 8.0 is running: 1/1 replicas are ready"}
	f.run(ctx, ref(db))

	// The next sync, with that status stored: nothing to write or say.
	f2 := newFixture(t)
	db2 := db.DeepCopy()
	db2.Status = st
	f2.seed(db2, sts.DeepCopy(), expectedHeadless(t, db2), expectedService(t, db2), expectedSecret(t, db2, "pw"))
	f2.run(ctx, ref(db2))
}

func TestSecretIsNeverRewrittenOrRegenerated(t *testing.T) {
	t.Run("rotated password is kept", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		_, _, _, secret := f.converged(db)
		secret.Data = map[string][]byte{"password": []byte("rotated")}
		secret.Labels["team"] = "x"
		f.run(ctx, ref(db))
	})
	t.Run("deleted Secret of an initialised database is not regenerated", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		f.converged(db)
		f.secretLister = nil
		f.kubeobjects = f.kubeobjects[:3]

		f.expectGet(secretsResource, "default", "orders-credentials")
		msg := "Secret default/orders-credentials is gone but the database was initialised with its password; restore the Secret (keys username, password, database, host, port, uri), and the controller adopts it and continues. It will not generate a new password"
		st := wantStatus(db, "Failed", 1, 1, "16", "False", "CredentialsSecretMissing", msg, "False", "CredentialsSecretMissing", msg)
		keepTransitionTime(&st, "Progressing")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Warning CredentialsSecretMissing " + msg}
		f.run(ctx, ref(db))
	})
}

func TestTransientErrorIsRetried(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	c, _, k8sI, recorder := f.newController(ctx)
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
	f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
	f.expectCreate(servicesResource, expectedHeadless(t, db))
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
	f.events = []string{
		"Normal Created Created Secret orders-credentials, Service orders-headless, Service orders",
	}
	c.workqueue.Add(ref(db))
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	if !c.processNextWorkItem(ctx) {
		t.Fatal("processNextWorkItem returned false")
	}
	checkActions(t, "database clientset", nil, filterInformerActions(f.client.Actions()))
	checkActions(t, "kube clientset", f.kubeactions, filterInformerActions(f.kubeclient.Actions()))
	checkEvents(t, f.events, recorder)
	if n := c.workqueue.NumRequeues(ref(db)); n != 1 {
		t.Fatalf("NumRequeues = %d, want 1", n)
	}

	// The informers catch up with what was created.
	for _, o := range []struct {
		inf  cache.SharedIndexInformer
		list func() ([]runtime.Object, error)
	}{
		{k8sI.Core().V1().Secrets().Informer(), func() ([]runtime.Object, error) {
			l, err := f.kubeclient.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
			return itemsOf(l, err)
		}},
		{k8sI.Core().V1().Services().Informer(), func() ([]runtime.Object, error) {
			l, err := f.kubeclient.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
			return itemsOf(l, err)
		}},
	} {
		objs, err := o.list()
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			_ = o.inf.GetIndexer().Add(obj)
		}
	}

	// The retry creates only what is missing, then writes status.
	f.kubeactions, f.events = nil, nil
	f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 0, 0, "",
		"False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	f.events = []string{"Normal Created Created StatefulSet orders"}
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
}

func itemsOf(list runtime.Object, err error) ([]runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	switch l := list.(type) {
	case *corev1.SecretList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, errors.New("unexpected list type")
	}
	return out, nil
}

func TestChildrenNotYetInCacheAreNotCreatedTwice(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	c, _, _, recorder := f.newController(ctx)
	// The first sync creates everything.
	if _, err := c.syncHandler(ctx, ref(db)); err != nil {
		t.Fatal(err)
	}
	for len(recorder.Events) > 0 {
		<-recorder.Events
	}
	// A second sync before the informers saw the creates writes nothing: no
	// duplicate create, no status flip back to Pending.
	f.syncAndCheck(ctx, c, recorder, ref(db), false)

	// How long the expectations wait, and how they are swept, is tested
	// directly in pkg/reconcile.
}

func TestDeletedDatabaseIsANoOp(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	f.run(ctx, cache.ObjectName{Namespace: "default", Name: "gone"})

	t.Run("being deleted without the controller's finalizer", func(t *testing.T) {
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
		db.Finalizers = nil
		db.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
		f.seed(db)
		f.run(ctx, ref(db))
	})
}

func TestHandleObjectEnqueuesTheOwner(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	c, _, _, _ := f.newController(ctx)

	owned := expectedService(t, db)
	orphan := expectedService(t, db)
	orphan.OwnerReferences = nil
	stale := expectedService(t, db)
	stale.OwnerReferences[0].UID = "an-earlier-database"

	c.handleObject(orphan)
	c.handleObject(stale)
	if c.workqueue.Len() != 0 {
		t.Fatalf("queue has %d items after foreign objects, want 0", c.workqueue.Len())
	}
	c.handleObject(cache.DeletedFinalStateUnknown{Key: "default/orders", Obj: owned})
	if c.workqueue.Len() != 1 {
		t.Fatalf("queue has %d items after a tombstone of an owned object, want 1", c.workqueue.Len())
	}
	got, _ := c.workqueue.Get()
	if got != ref(db) {
		t.Fatalf("enqueued %v, want %v", got, ref(db))
	}
}

// A Database whose child changed goes to a worker before the Databases
// queued for their own changes, such as a burst of new ones: its follow-up
// (most often its Running status) does not wait for their children to be
// created.
func TestChildChangesAreHandedOutFirst(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	running := newDatabase("orders", "postgresql", "16", 1)
	fresh := []*dbv1alpha1.Database{newDatabase("new-1", "mysql", "8.4", 1), newDatabase("new-2", "mysql", "8.4", 1)}
	f.seed(running, fresh[0], fresh[1])
	c, _, _, _ := f.newController(ctx)

	for _, db := range fresh {
		c.enqueueDatabase(db)
	}
	c.enqueueDatabase(running)
	sts := expectedStatefulSet(t, running)
	c.handleObject(sts)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orders-0",
		Labels: map[string]string{names.LabelInstance: running.Name}}}

	var got []cache.ObjectName
	for c.workqueue.Len() > 0 {
		k, _ := c.workqueue.Get()
		if k == ref(running) && len(got) == 0 {
			// Its pod changes while a worker has it: it comes back first.
			c.enqueueByLabel(pod)
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
	base := newDatabase("orders", "postgresql", "16", 1)
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
			db.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
		}, true},
		{"recreated with the same name", func(db *dbv1alpha1.Database) { db.ResourceVersion = "2"; db.UID = "other" }, true},
		{"a new current version", func(db *dbv1alpha1.Database) { db.ResourceVersion = "2"; db.Status.CurrentVersion = "17" }, true},
		{"a new featureCompatibilityVersion", func(db *dbv1alpha1.Database) {
			db.ResourceVersion = "2"
			db.Status.FeatureCompatibilityVersion = "7.0"
		}, true},
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
		{"Pod: metadata, node and status",
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}, ManagedFields: managed},
				Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}},
					Volumes: []corev1.Volume{{Name: "v"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
				Spec:   corev1.PodSpec{NodeName: "n"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}}},
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
				ReportingController: "r", LastTimestamp: metav1.NewTime(testNow)},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u", ResourceVersion: "7"},
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "c", UID: "cu"}, Type: corev1.EventTypeWarning,
				Reason: "ProvisioningFailed", Message: "m", Count: 3, LastTimestamp: metav1.NewTime(testNow)}},
		{"StatefulSet: all but managed fields",
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: managed}, Spec: appsv1.StatefulSetSpec{ServiceName: "h"}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: appsv1.StatefulSetSpec{ServiceName: "h"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stripForCache(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("stripForCache:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// claim is a data volume claim as the StatefulSet controller makes it.
func claim(db *dbv1alpha1.Database, ordinal int, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-%s-%d", db.Name, ordinal), Namespace: db.Namespace, Labels: names.Labels(db)},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
	}
}

func TestStorageGrowthExpandsClaims(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "mysql", "8.4", 2)
	f.converged(db)
	db.Spec.Storage.Size = resource.MustParse("5Gi")
	db.Generation = 2
	other := claim(db, 0, "1Gi")
	other.Name = "scratch-orders-0" // not a data claim of this StatefulSet
	f.seed(claim(db, 0, "1Gi"), claim(db, 1, "5Gi"), other)

	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}`)
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(
		schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, "default", "data-orders-0", types.MergePatchType, patch))
	st := db.Status.DeepCopy()
	st.ObservedGeneration = 2
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = 2
	}
	f.expectStatusUpdate(db, *st)
	f.events = []string{"Normal Updated Requested 5Gi for PersistentVolumeClaim data-orders-0 (was 1Gi)"}
	f.run(ctx, ref(db))
}

func TestStorageGrowthRefusedByTheClusterIsReported(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	db.Spec.Storage.Size = resource.MustParse("5Gi")
	f.seed(claim(db, 0, "1Gi"))
	c, _, _, recorder := f.newController(ctx)
	f.kubeclient.PrependReactor("patch", "persistentvolumeclaims", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data-orders-0",
			errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	})
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(
		schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, "default", "data-orders-0", types.MergePatchType,
		[]byte(`{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}`)))
	msg := `cannot grow PersistentVolumeClaim data-orders-0 from 1Gi to 5Gi: persistentvolumeclaims "data-orders-0" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize; the database keeps running on its current volumes`
	st := wantStatus(db, "Failed", 1, 1, "16", "False", "StorageResizeFailed", msg, "False", "StorageResizeFailed", msg)
	keepTransitionTime(&st, "Progressing")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning StorageResizeFailed " + msg}
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
}

// A replica that cannot become ready is explained in the Ready condition,
// with a Warning event when the cause is new, and nothing more while it lasts.
func TestNotReadyNamesTheCause(t *testing.T) {
	pending := func(db *dbv1alpha1.Database) *corev1.PersistentVolumeClaim {
		c := claim(db, 0, "1Gi")
		c.UID = "claim-uid"
		c.Status.Phase = corev1.ClaimPending
		return c
	}
	provisioningFailed := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "data-orders-0.1", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "data-orders-0", Namespace: "default", UID: "claim-uid"},
		Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed",
		Message:       `storageclass.storage.k8s.io "does-not-exist" not found`,
		Count:         4,
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Minute)),
	}
	// A failure the volume controller retried at once: followed by a Normal
	// event, or seen only once.
	transient := func(normalAfter bool) []runtime.Object {
		failed := provisioningFailed.DeepCopy()
		failed.Name, failed.Count = "data-orders-0.2", 1
		failed.Message = `Error saving claim: Operation cannot be fulfilled on persistentvolumeclaims "data-orders-0": the object has been modified`
		if !normalAfter {
			return []runtime.Object{failed}
		}
		failed.Count = 5
		waiting := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "data-orders-0.3", Namespace: "default"},
			InvolvedObject: failed.InvolvedObject, Type: corev1.EventTypeNormal, Reason: "ExternalProvisioning",
			Message: "Waiting for a volume to be created", Count: 1, LastTimestamp: metav1.NewTime(testNow),
		}
		return []runtime.Object{failed, waiting}
	}
	pod := func(db *dbv1alpha1.Database) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default", Labels: names.Labels(db)}}
	}
	tests := []struct {
		name    string
		objects func(db *dbv1alpha1.Database) []runtime.Object
		reason  string
		message string
		stuck   bool
	}{
		{
			name: "a claim whose StorageClass does not exist",
			objects: func(db *dbv1alpha1.Database) []runtime.Object {
				return []runtime.Object{pending(db), provisioningFailed}
			},
			reason:  "VolumeNotProvisioned",
			message: `PersistentVolumeClaim data-orders-0 cannot be provisioned: storageclass.storage.k8s.io "does-not-exist" not found`,
			stuck:   true,
		},
		{
			name:    "a claim waiting for its volume",
			objects: func(db *dbv1alpha1.Database) []runtime.Object { return []runtime.Object{pending(db)} },
			reason:  "VolumePending",
			message: "PersistentVolumeClaim data-orders-0 is waiting for its volume",
		},
		{
			name:    "a claim whose provisioning failed once",
			objects: func(db *dbv1alpha1.Database) []runtime.Object { return append(transient(false), pending(db)) },
			reason:  "VolumePending",
			message: "PersistentVolumeClaim data-orders-0 is waiting for its volume",
		},
		{
			name:    "a claim whose provisioning failure was followed by progress",
			objects: func(db *dbv1alpha1.Database) []runtime.Object { return append(transient(true), pending(db)) },
			reason:  "VolumePending",
			message: "PersistentVolumeClaim data-orders-0 is waiting for its volume",
		},
		{
			name: "a pod the scheduler cannot place",
			objects: func(db *dbv1alpha1.Database) []runtime.Object {
				p := pod(db)
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					Message: "0/1 nodes are available: 1 Insufficient memory."}}
				return []runtime.Object{p}
			},
			reason:  "Unschedulable",
			message: "pod orders-0 cannot be scheduled: 0/1 nodes are available: 1 Insufficient memory.",
			stuck:   true,
		},
		{
			name: "a container that runs and has not been ready for too long",
			objects: func(db *dbv1alpha1.Database) []runtime.Object {
				p := pod(db)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgresql",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testNow.Add(-21 * time.Minute))}}}}
				return []runtime.Object{p}
			},
			reason:  "ContainerNotReady",
			message: "container postgresql of pod orders-0 has run for more than 20m0s without passing its readiness probe (kubectl describe pod orders-0 shows what the probe said)",
			stuck:   true,
		},
		{
			name: "a crash-looping container",
			objects: func(db *dbv1alpha1.Database) []runtime.Object {
				p := pod(db)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgresql",
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
				return []runtime.Object{p}
			},
			reason:  "CrashLooping",
			message: "container postgresql of pod orders-0 keeps crashing; it last ended with OOMKilled (exit code 137)",
			stuck:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts := notReadyStatefulSet(t, db)
			f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
			f.seed(tt.objects(db)...)
			st := wantStatus(db, "Provisioning", 1, 0, "", "False", tt.reason, "0/1 replicas are ready: "+tt.message,
				"True", "Provisioning", "waiting for 0/1 replicas to become ready")
			f.expectStatusUpdate(db, st)
			if tt.stuck {
				f.events = []string{"Warning " + tt.reason + " " + tt.message}
			}
			c := f.run(ctx, ref(db))
			// What would change any of these causes reaches the Database
			// through an informer, the claim's events included: no recheck.
			if n := c.recheck.NumRequeues(ref(db)); n != 0 {
				t.Errorf("rechecks scheduled = %d, want 0", n)
			}

			// The same cause with that status stored: no write, no event.
			f2 := newFixture(t)
			db2 := db.DeepCopy()
			db2.Status = st
			f2.seed(db2, sts.DeepCopy(), expectedHeadless(t, db2), expectedService(t, db2), expectedSecret(t, db2, "pw"))
			f2.seed(tt.objects(db2)...)
			f2.run(ctx, ref(db2))
		})
	}
}

// A claim being provisioned for less than status.VolumeGrace is not a
// cause: no read of its events, no cause in the status, and a look again
// once the grace may be over.
func TestYoungPendingClaimIsNotACauseYet(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	sts := notReadyStatefulSet(t, db)
	young := claim(db, 0, "1Gi")
	young.Status.Phase = corev1.ClaimPending
	young.CreationTimestamp = metav1.NewTime(testNow.Add(-5 * time.Second))
	f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), young)
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	c := f.run(ctx, ref(db))
	if n := c.recheck.NumRequeues(ref(db)); n != 1 {
		t.Errorf("rechecks scheduled = %d, want 1", n)
	}
}

// A growth the cluster refused is not sent again while neither the claim
// nor the size changes: a stuck Database costs no writes.
func TestRefusedGrowthIsNotSentAgain(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	db.Spec.Storage.Size = resource.MustParse("5Gi")
	pvc := claim(db, 0, "1Gi")
	pvc.ResourceVersion = "7"
	f.seed(pvc)
	c, dbI, k8sI, recorder := f.newController(ctx)
	f.kubeclient.PrependReactor("patch", "persistentvolumeclaims", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data-orders-0",
			errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	})
	claims := schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}`)
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(claims, "default", "data-orders-0", types.MergePatchType, patch))
	msg := `cannot grow PersistentVolumeClaim data-orders-0 from 1Gi to 5Gi: persistentvolumeclaims "data-orders-0" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize; the database keeps running on its current volumes`
	st := wantStatus(db, "Failed", 1, 1, "16", "False", "StorageResizeFailed", msg, "False", "StorageResizeFailed", msg)
	keepTransitionTime(&st, "Progressing")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning StorageResizeFailed " + msg}
	f.syncAndCheck(ctx, c, recorder, ref(db), false)

	// With that status stored, later syncs write nothing.
	stored := db.DeepCopy()
	stored.Status = st
	if err := dbI.Dbcontroller().V1alpha1().Databases().Informer().GetIndexer().Update(stored); err != nil {
		t.Fatal(err)
	}
	f.actions, f.kubeactions, f.events = nil, nil, nil
	f.syncAndCheck(ctx, c, recorder, ref(db), false)

	// The claim changed (someone edited it): one more try.
	changed := pvc.DeepCopy()
	changed.ResourceVersion = "8"
	if err := k8sI.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Update(changed); err != nil {
		t.Fatal(err)
	}
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(claims, "default", "data-orders-0", types.MergePatchType, patch))
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
}

// After an upgrade of MongoDB has rolled out with every replica ready, a
// Job sets the featureCompatibilityVersion to the new series; the status
// records it, and until then the next series is refused.
func TestFeatureCompatibilityVersionIsSetAfterAnUpgrade(t *testing.T) {
	jobsResource := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	// upgraded is a Database that moved from 6.0 to 7.0: it runs 7.0, its
	// data is still at featureCompatibilityVersion 6.0.
	upgraded := func(f *fixture) *dbv1alpha1.Database {
		db := newDatabase("orders", "mongodb", "7.0", 1)
		f.converged(db)
		db.Status.FeatureCompatibilityVersion = "6.0"
		return db
	}
	job := func(t *testing.T, db *dbv1alpha1.Database) *batchv1.Job {
		j := &batchv1.Job{}
		if err := builder.Convert(builder.NewFeatureCompatibilityJob(db, profile(t, db), "mongo:7.0", "7.0", 1), j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	setting := metav1.Condition{Type: "FeatureCompatibility", Status: "False", Reason: "SettingFeatureCompatibilityVersion",
		Message: "setting featureCompatibilityVersion 7.0 with Job orders-fcv-7-0", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)}

	t.Run("the Job is made", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := upgraded(f)
		f.expectCreate(jobsResource, job(t, db))
		st := db.Status.DeepCopy()
		st.Conditions = append(st.Conditions, setting)
		f.expectStatusUpdate(db, *st)
		f.events = []string{"Normal Created Created Job orders-fcv-7-0"}
		f.run(ctx, ref(db))
	})

	t.Run("the Job completed: the status records it", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := upgraded(f)
		db.Status.Conditions = append(db.Status.Conditions, setting)
		j := job(t, db)
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		f.seed(j)
		st := db.Status.DeepCopy()
		st.FeatureCompatibilityVersion = "7.0"
		st.Conditions = st.Conditions[:2]
		f.expectStatusUpdate(db, *st)
		f.run(ctx, ref(db))
	})

	t.Run("the Job failed: reported, deleted, made again", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := upgraded(f)
		j := job(t, db)
		j.UID = "job-uid"
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
			Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
		f.seed(j)
		background := metav1.DeletePropagationBackground
		uid := types.UID("job-uid")
		f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(jobsResource, "default", "orders-fcv-7-0",
			metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}}))
		msg := "Job orders-fcv-7-0 could not set featureCompatibilityVersion 7.0 (BackoffLimitExceeded: Job has reached the specified backoff limit); it is made again. Its pod's log says why: kubectl logs -n default job/orders-fcv-7-0"
		st := db.Status.DeepCopy()
		st.Conditions = append(st.Conditions, metav1.Condition{Type: "FeatureCompatibility", Status: "False", Reason: "FeatureCompatibilityVersionFailed",
			Message: msg, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)})
		f.expectStatusUpdate(db, *st)
		f.events = []string{"Warning FeatureCompatibilityVersionFailed " + msg}
		f.run(ctx, ref(db))
	})

	t.Run("the next series waits for it, and the Job goes on", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := upgraded(f)
		db.Spec.Version = "8.0"
		db.Generation = 2
		f.seed(job(t, db)) // still running
		msg := "the data's featureCompatibilityVersion is 6.0, not 7.0, and MongoDB 8.0 will not start on it. The controller sets it to 7.0 once every replica runs 7.0 and is ready (status.featureCompatibilityVersion); until then set spec.version back to 7.0"
		st := wantStatus(db, "Failed", 1, 1, "7.0", "False", "FeatureCompatibilityPending", msg, "False", "FeatureCompatibilityPending", msg)
		st.FeatureCompatibilityVersion = "6.0"
		keepTransitionTime(&st, "Progressing")
		fc := setting
		fc.ObservedGeneration = 2
		st.Conditions = append(st.Conditions, fc)
		f.expectStatusUpdate(db, st)
		f.events = []string{"Warning FeatureCompatibilityPending " + msg}
		f.run(ctx, ref(db))
	})
}

// A pod of an earlier revision that was never scheduled blocks a rolling
// update for good: it is deleted, so that the StatefulSet makes it again at
// the current revision. Any other pod is left alone.
func TestUnscheduledPodOfAnEarlierRevisionIsReplaced(t *testing.T) {
	podsResource := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, tt := range []struct {
		name     string
		revision string
		node     string
		deleted  bool
	}{
		{"earlier revision, never scheduled", "rev-1", "", true},
		{"current revision, never scheduled", "rev-2", "", false},
		{"earlier revision, scheduled", "rev-1", "node-1", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "mysql", "8.4", 1)
			sts := expectedStatefulSet(t, db)
			sts.UID = "sts-uid"
			sts.Generation = 2
			sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, CurrentRevision: "rev-1", UpdateRevision: "rev-2"}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "default", UID: "pod-uid",
					Labels: map[string]string{"app.kubernetes.io/name": "mysql", "app.kubernetes.io/instance": "orders",
						"app.kubernetes.io/managed-by": "database-controller", "controller-revision-hash": tt.revision},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "orders", UID: "sts-uid", Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{NodeName: tt.node},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}},
			}
			f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), pod)
			if tt.deleted {
				uid := types.UID("pod-uid")
				f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
					metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
				f.events = append(f.events, "Normal Updated Deleted pod orders-0: it was never scheduled and is of an earlier revision")
			}
			msg := "pod orders-0 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."
			f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "Unschedulable", "0/1 replicas are ready: "+msg,
				"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
			f.events = append(f.events, "Warning Unschedulable "+msg)
			f.run(ctx, ref(db))
		})
	}
}

// notReadyStatefulSet is db's StatefulSet, rolled out to one replica that
// is not ready.
func notReadyStatefulSet(t *testing.T, db *dbv1alpha1.Database) *appsv1.StatefulSet {
	sts := expectedStatefulSet(t, db)
	sts.Generation = 1
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, CurrentRevision: "rev-1", UpdateRevision: "rev-1"}
	return sts
}

// startingPod is db's first pod, whose container started a minute ago and
// is not ready yet.
func startingPod(db *dbv1alpha1.Database) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: db.Name + "-0", Namespace: db.Namespace, Labels: names.Labels(db)},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testNow.Add(-time.Minute))}}}}}}
}

// While a Database is Provisioning, its pod appearing changes only the
// number of pods in its status: no write for that alone. The write to
// Running, or of any other change, carries the count.
func TestProvisioningPodCountAloneIsNotWritten(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Status = wantStatus(db, "Provisioning", 0, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready")
	seed := func(f *fixture, db *dbv1alpha1.Database, sts *appsv1.StatefulSet) {
		f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), claim(db, 0, "1Gi"))
	}

	t.Run("only the count changed", func(t *testing.T) {
		f := newFixture(t)
		seed(f, db.DeepCopy(), notReadyStatefulSet(t, db)) // status.replicas 1, ready 0
		f.run(ctx, ref(db))
	})
	t.Run("the pod became ready", func(t *testing.T) {
		f := newFixture(t)
		seed(f, db.DeepCopy(), rolledOut(expectedStatefulSet(t, db), 1))
		f.expectStatusUpdate(db, wantStatus(db, "Running", 1, 1, "16", "True", "AllReplicasReady", "1/1 replicas are ready",
			"False", "Converged", "the Database matches its spec"))
		f.events = []string{"Normal Running postgresql 16 is running: 1/1 replicas are ready"}
		f.run(ctx, ref(db))
	})
}

// A container that runs and is not ready yet is not a cause, but becomes
// one with time alone: the Database is looked at again soon.
func TestStartingContainerIsRechecked(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	sts := notReadyStatefulSet(t, db)
	pod := startingPod(db)
	f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), pod)
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	c := f.run(ctx, ref(db))
	if n := c.recheck.NumRequeues(ref(db)); n != 1 {
		t.Fatalf("rechecks scheduled = %d, want 1", n)
	}
}

var backupsResource = schema.GroupVersionResource{Group: "dbcontroller.io", Version: "v1alpha1", Resource: "databasebackups"}

func (f *fixture) expectFinalizers(db *dbv1alpha1.Database, finalizers []string) {
	patch, err := backup.FinalizersPatch(db.ResourceVersion, db.Finalizers, finalizers)
	if err != nil {
		f.t.Fatal(err)
	}
	f.actions = append(f.actions, core.NewPatchAction(databasesResource, db.Namespace, db.Name, types.JSONPatchType, patch))
}

// expectSecretReleased expects the JSON patch that removes db's owner
// reference, the first, from its Secret.
func (f *fixture) expectSecretReleased(db *dbv1alpha1.Database) {
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/ownerReferences/0/uid","value":%q},{"op":"remove","path":"/metadata/ownerReferences/0"}]`, db.UID)
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(secretsResource, db.Namespace, names.SecretName(db), types.JSONPatchType, []byte(patch)))
}

// A Database under Retain needs the controller at its deletion, to keep
// its Secret: the finalizer is its first write, before any child.
func TestNewDatabaseGetsItsFinalizerFirst(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Finalizers = nil
	f.seed(db)
	f.expectFinalizers(db, []string{dbv1alpha1.FinalizerDatabase})
	f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
	f.expectCreate(servicesResource, expectedHeadless(t, db))
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 0, 0, "",
		"False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	f.events = []string{"Normal Created Created Secret orders-credentials, Service orders-headless, Service orders, StatefulSet orders"}
	f.run(ctx, ref(db))
}

// Under Delete with no final backup, nothing waits at deletion: no
// finalizer, and one left from an earlier Retain is removed.
func TestDeletePolicyNeedsNoFinalizer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
	f.converged(db)
	f.expectFinalizers(db, []string{})
	f.run(ctx, ref(db))

	t.Run("steady", func(t *testing.T) {
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
		db.Finalizers = nil
		f.converged(db)
		f.run(ctx, ref(db))
	})
}

// Deleting a Database under Retain keeps its credentials Secret with the
// volumes: the owner reference goes, the labels stay, then the finalizer.
func TestDeleteUnderRetainKeepsTheSecret(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	f.converged(db)
	f.expectSecretReleased(db)
	f.expectFinalizers(db, []string{})
	f.events = []string{"Normal CredentialsRetained Kept Secret orders-credentials with the volumes (deletionPolicy Retain)"}
	f.run(ctx, ref(db))
}

// A Secret of the credentials' name that no one controls, with every key,
// is adopted with its password: the one the retained data was made with.
func TestRetainedSecretIsAdopted(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	kept := expectedSecret(t, db, "the-old-password")
	kept.OwnerReferences = nil
	kept.ResourceVersion = "7"
	f.seed(db, kept)
	f.expectGet(secretsResource, "default", "orders-credentials")
	owner := metav1.NewControllerRef(db, dbv1alpha1.SchemeGroupVersion.WithKind("Database"))
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": "7", "labels": names.Labels(db), "ownerReferences": []metav1.OwnerReference{*owner}}})
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(secretsResource, "default", "orders-credentials", types.MergePatchType, patch))
	f.expectCreate(servicesResource, expectedHeadless(t, db))
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 0, 0, "",
		"False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	f.events = []string{
		"Normal Adopted Adopted Secret orders-credentials: it holds the credentials' keys and no one controlled it; its password is kept",
		"Normal Created Created Service orders-headless, Service orders, StatefulSet orders",
	}
	f.run(ctx, ref(db))

	t.Run("without every key it is not adopted", func(t *testing.T) {
		f := newFixture(t)
		partial := kept.DeepCopy()
		delete(partial.Data, "uri")
		f.seed(db, partial)
		f.expectGet(secretsResource, "default", "orders-credentials")
		msg := "Secret default/orders-credentials is controlled by no one but lacks the keys uri, so it is not adopted: add them, or delete it if the database holds no data yet"
		f.expectStatusUpdate(db, wantStatus(db, "Failed", 0, 0, "", "False", "ResourceConflict", msg, "False", "ResourceConflict", msg))
		f.events = []string{"Warning ResourceConflict " + msg}
		f.run(ctx, ref(db))
	})
}

func withBackup(db *dbv1alpha1.Database) *dbv1alpha1.Database {
	db.Spec.Backup = &dbv1alpha1.BackupSpec{Retention: ptr.To[int32](7), FinalBackup: ptr.To(true)}
	return db
}

func finalBackup(db *dbv1alpha1.Database, phase dbv1alpha1.BackupPhase, message string) *dbv1alpha1.DatabaseBackup {
	b := backup.NewFinalBackup(db)
	b.TypeMeta = metav1.TypeMeta{APIVersion: "dbcontroller.io/v1alpha1", Kind: "DatabaseBackup"}
	b.Status.Phase, b.Status.Message = phase, message
	return b
}

// terminatingStatus is the status of a Database held for its final backup.
func terminatingStatus(db *dbv1alpha1.Database, reason, msg string) dbv1alpha1.DatabaseStatus {
	st := wantStatus(db, "Terminating", 1, 1, "16", "False", reason, msg, "True", reason, msg)
	st.Conditions = append(st.Conditions, metav1.Condition{Type: "Backup", Status: "True", Reason: "BackupsReady",
		Message:            "no schedule: backups are taken on demand (create a DatabaseBackup); a final backup is taken before the Database is deleted",
		ObservedGeneration: db.Generation, LastTransitionTime: metav1.NewTime(testNow)})
	return st
}

// The final backup: taken when the Database is deleted; the Database is
// kept, Terminating, until it has Completed; a failure says how to go on.
func TestFinalBackup(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	deleting := func() *dbv1alpha1.Database {
		db := withBackup(newDatabase("orders", "postgresql", "16", 1))
		db.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
		return db
	}
	name := names.FinalBackupName(deleting())
	taking := fmt.Sprintf("taking the final backup %s before the Database goes; to delete without it, set spec.backup.finalBackup to false", name)

	t.Run("taken", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		f.converged(db)
		want := backup.NewFinalBackup(db)
		f.actions = append(f.actions, core.NewCreateAction(backupsResource, "default", want))
		f.expectStatusUpdate(db, terminatingStatus(db, "TakingFinalBackup", taking))
		f.events = []string{"Normal Created Created DatabaseBackup " + name}
		f.run(ctx, ref(db))
	})
	t.Run("running: nothing new to write", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		f.converged(db)
		db.Status = terminatingStatus(db, "TakingFinalBackup", taking)
		b := finalBackup(db, dbv1alpha1.BackupRunning, "")
		job := &batchv1.Job{}
		if err := builder.Convert(builder.NewBackupJob(b, db, profile(t, db), "postgres:16"), job); err != nil {
			t.Fatal(err)
		}
		f.seed(b, job)
		f.run(ctx, ref(db))
	})
	t.Run("failed: kept, with how to go on", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		f.converged(db)
		f.seed(finalBackup(db, dbv1alpha1.BackupFailed, "pg_dump: error: connection refused"))
		msg := fmt.Sprintf("the final backup %s failed (pg_dump: error: connection refused); the Database is kept until one succeeds: delete it to try again (kubectl delete dbbackup -n default %s), or set spec.backup.finalBackup to false to delete without it", name, name)
		f.expectStatusUpdate(db, terminatingStatus(db, "FinalBackupFailed", msg))
		f.events = []string{"Warning FinalBackupFailed " + msg}
		f.run(ctx, ref(db))
	})
	t.Run("completed: the Secret is kept and the Database goes", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		f.converged(db)
		f.seed(finalBackup(db, dbv1alpha1.BackupCompleted, ""))
		f.expectSecretReleased(db)
		f.expectFinalizers(db, []string{})
		f.events = []string{"Normal CredentialsRetained Kept Secret orders-credentials"}
		f.run(ctx, ref(db))
	})
	t.Run("never served: no data, no final backup", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
		f.seed(db)
		f.expectFinalizers(db, []string{})
		f.events = []string{"Normal FinalBackupSkipped No final backup: the Database never served, so it holds no data"}
		f.run(ctx, ref(db))
	})
	t.Run("namespace being deleted: skipped, and the Database goes", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
		f.converged(db)
		f.reactors = append(f.reactors, func(c *fake.Clientset) {
			c.PrependReactor("create", "databasebackups", func(core.Action) (bool, runtime.Object, error) {
				err := apierrors.NewForbidden(schema.GroupResource{Group: "dbcontroller.io", Resource: "databasebackups"}, name,
					errors.New("unable to create new content in namespace default because it is being terminated"))
				err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace default is being terminated"}}
				return true, nil, err
			})
		})
		f.actions = append(f.actions, core.NewCreateAction(backupsResource, "default", backup.NewFinalBackup(db)))
		f.expectFinalizers(db, []string{})
		f.events = []string{"Warning FinalBackupSkipped No final backup: namespace default is being deleted"}
		f.run(ctx, ref(db))
	})
	t.Run("stopped: started at one replica for it", func(t *testing.T) {
		f := newFixture(t)
		db := deleting()
		db.Spec.Replicas = ptr.To[int32](0)
		f.converged(db)
		db.Status.CurrentVersion = "16"
		waiting := "waiting for Database orders to serve: its pod orders-0 does not exist"
		f.seed(finalBackup(db, dbv1alpha1.BackupPending, waiting))
		one := db.DeepCopy()
		one.Spec.Replicas = ptr.To[int32](1)
		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, one))
		msg := fmt.Sprintf("taking the final backup %s before the Database goes (%s); to delete without it, set spec.backup.finalBackup to false", name, waiting)
		st := wantStatus(db, "Terminating", 0, 0, "16", "False", "TakingFinalBackup", msg, "True", "TakingFinalBackup", msg)
		keepTransitionTime(&st, "Ready") // False before (Stopped), False now
		st.Conditions = append(st.Conditions, terminatingStatus(db, "", "").Conditions[2])
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.run(ctx, ref(db))
	})
}

// sourceBackup is a Completed backup of a PostgreSQL Database "source".
func sourceBackup(version string) *dbv1alpha1.DatabaseBackup {
	return &dbv1alpha1.DatabaseBackup{
		TypeMeta:   metav1.TypeMeta{APIVersion: "dbcontroller.io/v1alpha1", Kind: "DatabaseBackup"},
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default", UID: "nightly-uid"},
		Spec:       dbv1alpha1.DatabaseBackupSpec{Database: "source"},
		Status: dbv1alpha1.DatabaseBackupStatus{Phase: dbv1alpha1.BackupCompleted, Engine: "postgresql", Version: version,
			Image: "postgres:" + version, Volume: "source-backups", Path: "nightly.pgdump"},
	}
}

func restoring(db *dbv1alpha1.Database) *dbv1alpha1.Database {
	db.Spec.Restore = &dbv1alpha1.RestoreSpec{Backup: "nightly"}
	return db
}

// restoringStatefulSet is the StatefulSet whose pods restore nightly.
func restoringStatefulSet(t *testing.T, db *dbv1alpha1.Database) *plan.Plan {
	t.Helper()
	p := plan.Compute(db, plan.Observed{Restore: &builder.RestoreSource{Backup: "nightly", Claim: "source-backups",
		Path: "nightly.pgdump", SourceDatabase: "source"}})
	if p.Problem != nil {
		t.Fatal(p.Problem)
	}
	return p
}

// A new Database restores a backup before it serves: its pods restore,
// it is not Running until every replica served the restored data and the
// pods restarted without the backup's volume.
func TestRestore(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	t.Run("created restoring", func(t *testing.T) {
		f := newFixture(t)
		db := restoring(newDatabase("copy", "postgresql", "16", 1))
		f.seed(db, sourceBackup("15"))
		f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
		f.expectCreate(servicesResource, expectedHeadless(t, db))
		f.expectCreate(servicesResource, expectedService(t, db))
		sts := &appsv1.StatefulSet{}
		if err := builder.Convert(restoringStatefulSet(t, db).StatefulSet, sts); err != nil {
			t.Fatal(err)
		}
		f.expectCreate(statefulSetsResource, sts)
		msg := "restoring backup nightly: 0/1 replicas ready"
		st := wantStatus(db, "Provisioning", 0, 0, "", "False", "Restoring", msg, "True", "Restoring", msg)
		st.Restore = &dbv1alpha1.RestoreStatus{Backup: "nightly"}
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Created Created Secret copy-credentials, Service copy-headless, Service copy, StatefulSet copy"}
		f.run(ctx, ref(db))
	})
	t.Run("every replica serves: completed", func(t *testing.T) {
		f := newFixture(t)
		db := restoring(newDatabase("copy", "postgresql", "16", 1))
		p := restoringStatefulSet(t, db)
		sts := &appsv1.StatefulSet{}
		_ = builder.Convert(p.StatefulSet, sts)
		f.seed(db, sourceBackup("15"), rolledOut(sts, 1), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
		msg := "restored backup nightly; restarting without its volume"
		st := wantStatus(db, "Provisioning", 1, 1, "", "False", "Restoring", msg, "True", "Restoring", msg)
		st.Restore = &dbv1alpha1.RestoreStatus{Backup: "nightly", CompletionTime: ptr.To(metav1.NewTime(testNow))}
		f.expectStatusUpdate(db, st)
		f.run(ctx, ref(db))
	})
	t.Run("completed: the pods no longer mount the backup", func(t *testing.T) {
		f := newFixture(t)
		db := restoring(newDatabase("copy", "postgresql", "16", 1))
		db.Status.Restore = &dbv1alpha1.RestoreStatus{Backup: "nightly", CompletionTime: ptr.To(metav1.NewTime(testNow))}
		sts := &appsv1.StatefulSet{}
		_ = builder.Convert(restoringStatefulSet(t, db).StatefulSet, sts)
		f.seed(db, rolledOut(sts, 1), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
		f.expectApply(statefulSetsResource, "default", "copy", desiredStatefulSet(t, db))
		// Not Running until the StatefulSet read back has no restore in it.
		// (The fake API server merges an apply instead of removing the
		// fields no longer applied, so the one it returns still restores.)
		msg := "restored backup nightly; restarting without its volume"
		st := wantStatus(db, "Provisioning", 1, 1, "", "False", "Restoring", msg, "True", "Restoring", msg)
		st.Restore = db.Status.Restore
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Updated Updated StatefulSet copy to match the Database spec"}
		f.run(ctx, ref(db))
	})
	for _, tc := range []struct {
		name, reason, msg string
		backup            *dbv1alpha1.DatabaseBackup
		event             bool
	}{
		{"no such backup: waits", "RestoreBackupNotReady",
			"DatabaseBackup default/nightly does not exist; the Database waits for it before it creates anything (spec.restore cannot change: to restore another backup, delete this Database and create it again)",
			nil, true},
		{"a newer series: refused", "RestoreRefused",
			"DatabaseBackup nightly cannot be restored into version 16: RestoreRefused: the backup was taken from PostgreSQL 17, and 16 is older: restore it into version 17 or later",
			sourceBackup("17"), true},
		{"another engine: refused", "RestoreRefused", "DatabaseBackup nightly is a backup of mysql, and this Database runs postgresql",
			func() *dbv1alpha1.DatabaseBackup { b := sourceBackup("16"); b.Status.Engine = "mysql"; return b }(), true},
		{"still running: waits", "RestoreBackupNotReady", "DatabaseBackup nightly is Running; the restore waits until it has Completed",
			func() *dbv1alpha1.DatabaseBackup {
				b := sourceBackup("16")
				b.Status.Phase = dbv1alpha1.BackupRunning
				return b
			}(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			db := restoring(newDatabase("copy", "postgresql", "16", 1))
			f.seed(db)
			if tc.backup != nil {
				f.seed(tc.backup)
			}
			st := wantStatus(db, "Failed", 0, 0, "", "False", tc.reason, tc.msg, "False", tc.reason, tc.msg)
			st.Restore = &dbv1alpha1.RestoreStatus{Backup: "nightly"}
			f.expectStatusUpdate(db, st)
			f.events = []string{"Warning " + tc.reason + " " + tc.msg}
			f.run(ctx, ref(db))
		})
	}
}

// A schedule the cron parser refuses is named in the Backup condition and
// one Warning event; the Database runs on.
func TestInvalidScheduleIsReported(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Spec.Backup = &dbv1alpha1.BackupSpec{Schedule: "61 * * * *"}
	f.converged(db)
	f.seed(backupClaimOf(t, db))
	st := db.Status.DeepCopy()
	msg := `spec.backup.schedule "61 * * * *" is not a valid cron expression: end of range (61) above maximum (59): 61; no backup is scheduled until it is fixed`
	st.Conditions = append(st.Conditions, metav1.Condition{Type: "Backup", Status: "False", Reason: "ScheduleInvalid", Message: msg,
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)})
	f.expectStatusUpdate(db, *st)
	f.events = []string{"Warning ScheduleInvalid " + msg}
	f.run(ctx, ref(db))
}

func backupClaimOf(t *testing.T, db *dbv1alpha1.Database) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{}
	if err := builder.Convert(builder.NewBackupClaim(db, db.Spec.Storage.Size), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// A settled Database is not passed over again while nothing it depends on
// has a new resourceVersion: a drift that no resourceVersion shows (which
// a real API server never makes) proves the pass was skipped. A new
// resourceVersion, and the end of reconcile.SettledTTL, each bring a full
// pass back, which repairs it.
func TestSettledDatabaseIsSkippedUntilSomethingChanges(t *testing.T) {
	for _, tt := range []struct {
		name string
		// change is done to the drifted StatefulSet and the clock before the last sync.
		change func(f *fixture, sts *appsv1.StatefulSet)
	}{
		{"the StatefulSet's resourceVersion changes", func(_ *fixture, sts *appsv1.StatefulSet) { sts.ResourceVersion = "99" }},
		{"the settled state is older than SettledTTL", func(f *fixture, _ *appsv1.StatefulSet) {
			f.clock.SetTime(testNow.Add(reconcile.SettledTTL + time.Second))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			db.ResourceVersion = "10"
			sts, headless, svc, secret := f.converged(db)
			for i, o := range []metav1.Object{sts, headless, svc, secret} {
				o.SetResourceVersion(fmt.Sprint(i + 1))
			}
			c, _, k8sI, recorder := f.newController(ctx)
			sync := func(wantSkipped bool) {
				t.Helper()
				f.syncAndCheckSkipped(ctx, c, recorder, ref(db), wantSkipped)
			}
			sync(false) // the first pass finds nothing to do: settled
			sync(true)

			drifted := sts.DeepCopy()
			drifted.Spec.Template.Spec.Containers[0].Image = "postgres:latest"
			if err := k8sI.Apps().V1().StatefulSets().Informer().GetIndexer().Update(drifted); err != nil {
				t.Fatal(err)
			}
			sync(true)

			tt.change(f, drifted)
			if err := k8sI.Apps().V1().StatefulSets().Informer().GetIndexer().Update(drifted); err != nil {
				t.Fatal(err)
			}
			f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
			sync(false)
		})
	}
}

// A pass that asks to look again depends on the clock, which no
// resourceVersion shows: it never settles, and the next sync is a full pass.
func TestRecheckedDatabaseIsNeverSkipped(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.ResourceVersion = "10"
	sts := notReadyStatefulSet(t, db)
	pod := startingPod(db)
	headless, svc, secret := expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw")
	for i, o := range []metav1.Object{sts, headless, svc, secret, pod} {
		o.SetResourceVersion(fmt.Sprint(i + 1))
	}
	f.seed(db, sts, headless, svc, secret, pod)
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	c, _, _, recorder := f.newController(ctx)
	for range 2 {
		// The lister still holds the status before the write: the same
		// write again shows that the second sync was a full pass.
		f.syncAndCheck(ctx, c, recorder, ref(db), false)
	}
}

// The events of a claim that waits for its volume come from the informer's
// cache, never from a read of the API. A Database whose claim waits has
// settled: the next pass runs when an event about the claim arrives, which
// changes what the pass reads, and names the failure at once.
func TestClaimEventsComeFromTheCache(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.ResourceVersion = "10"
	sts := notReadyStatefulSet(t, db)
	pending := claim(db, 0, "1Gi")
	pending.UID = "claim-uid"
	pending.Status.Phase = corev1.ClaimPending
	headless, svc, secret := expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw")
	for i, o := range []metav1.Object{sts, headless, svc, secret, pending} {
		o.SetResourceVersion(fmt.Sprint(i + 1))
	}
	waiting := wantStatus(db, "Provisioning", 1, 0, "", "False", "VolumePending",
		"0/1 replicas are ready: PersistentVolumeClaim data-orders-0 is waiting for its volume",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready")
	db.Status = waiting
	f.seed(db, sts, headless, svc, secret, pending)
	c, _, _, recorder := f.newController(ctx)
	sync := func(wantSkipped bool) {
		t.Helper()
		f.syncAndCheckSkipped(ctx, c, recorder, ref(db), wantSkipped)
	}
	sync(false) // nothing to write, and no recheck: settled
	if n := c.recheck.NumRequeues(ref(db)); n != 0 {
		t.Fatalf("rechecks scheduled = %d, want 0", n)
	}
	sync(true)

	// An event about another claim of the same name, deleted since,
	// changes nothing.
	earlier := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "data-orders-0.0", Namespace: "default", ResourceVersion: "20"},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "data-orders-0", Namespace: "default", UID: "an-earlier-claim"},
		Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed", Message: "an old failure", Count: 9,
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Hour)),
	}
	if err := f.claimEvents.Add(earlier); err != nil {
		t.Fatal(err)
	}
	sync(true)

	failed := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "data-orders-0.1", Namespace: "default", ResourceVersion: "21"},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "data-orders-0", Namespace: "default", UID: "claim-uid"},
		Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed",
		Message:       `storageclass.storage.k8s.io "does-not-exist" not found`,
		Count:         3,
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Minute)),
	}
	if err := f.claimEvents.Add(failed); err != nil {
		t.Fatal(err)
	}
	msg := `PersistentVolumeClaim data-orders-0 cannot be provisioned: storageclass.storage.k8s.io "does-not-exist" not found`
	st := wantStatus(db, "Provisioning", 1, 0, "", "False", "VolumeNotProvisioned", "0/1 replicas are ready: "+msg,
		"True", "Provisioning", "waiting for 0/1 replicas to become ready")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning VolumeNotProvisioned " + msg}
	sync(false)
}

// An event about a Pending claim of a Database puts the Database on the
// queue; an event about a bound claim, about a claim this controller does
// not manage, or about another kind of object does not.
func TestClaimEventEnqueuesTheDatabase(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 2)
	pending := claim(db, 0, "1Gi")
	pending.Status.Phase = corev1.ClaimPending
	bound := claim(db, 1, "1Gi")
	bound.Status.Phase = corev1.ClaimBound
	f.seed(db, pending, bound)
	c, _, _, _ := f.newController(ctx)
	about := func(kind, name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name + ".1", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: corev1.EventTypeWarning}
	}
	for _, e := range []interface{}{about("PersistentVolumeClaim", "data-orders-1"), about("PersistentVolumeClaim", "data-unmanaged-0"),
		about("Pod", "data-orders-0"), "not an event"} {
		c.enqueueClaimEvent(e)
	}
	if n := c.workqueue.Len(); n != 0 {
		t.Fatalf("queue has %d items after events that are not about a Pending claim of a Database, want 0", n)
	}
	c.enqueueClaimEvent(cache.DeletedFinalStateUnknown{Key: "default/data-orders-0.1", Obj: about("PersistentVolumeClaim", "data-orders-0")})
	if n := c.workqueue.Len(); n != 1 {
		t.Fatalf("queue has %d items after a tombstone of an event about a Pending claim, want 1", n)
	}
	if got, _ := c.workqueue.Get(); got != ref(db) {
		t.Fatalf("enqueued %v, want %v", got, ref(db))
	}
}

// fakeSQL answers for the servers of replicated Databases, by pod address,
// and records what was asked of them.
type fakeSQL struct {
	servers map[string]*pgsql.Facts
	calls   []string
}

func (s *fakeSQL) server(host string) (*pgsql.Facts, error) {
	f, ok := s.servers[host]
	if !ok {
		return nil, fmt.Errorf("dial tcp %s:5432: connect: connection refused", host)
	}
	return f, nil
}

func (s *fakeSQL) Probe(_ context.Context, host string, _ int32, cred pgsql.Credentials) (pgsql.Facts, error) {
	s.calls = append(s.calls, "probe "+host+" as "+cred.User)
	f, err := s.server(host)
	if err != nil {
		return pgsql.Facts{}, err
	}
	return *f, nil
}

func (s *fakeSQL) Promote(_ context.Context, host string, _ int32, _ pgsql.Credentials) error {
	s.calls = append(s.calls, "promote "+host)
	f, err := s.server(host)
	if err != nil {
		return err
	}
	f.InRecovery, f.Timeline, f.WrittenLSN, f.Receiving = false, f.Timeline+1, f.ReceivedLSN, false
	return nil
}

func (s *fakeSQL) SetSynchronous(_ context.Context, host string, _ int32, _ pgsql.Credentials, names string) error {
	s.calls = append(s.calls, fmt.Sprintf("set synchronous_standby_names of %s to %q", host, names))
	f, err := s.server(host)
	if err != nil {
		return err
	}
	f.SynchronousStandbyNames = names
	return nil
}

func (s *fakeSQL) Fence(_ context.Context, host string, _ int32, _ pgsql.Credentials, marker string) error {
	s.calls = append(s.calls, "fence "+host+" marking "+marker)
	f, err := s.server(host)
	if err != nil {
		return err
	}
	f.Fenced = true
	return nil
}

// podIP is the address of the fixture's pod of ordinal k.
func podIP(k int) string { return fmt.Sprintf("192.0.2.%d", 10+k) }

// replicatedPod is pod k of db, ready or not, with the role label role.
func replicatedPod(db *dbv1alpha1.Database, k int, role string, ready bool) *corev1.Pod {
	labels := names.SelectorLabels(db)
	// The revision rolledOut gives the StatefulSet.
	labels["controller-revision-hash"] = "rev-1"
	if role != "" {
		labels[dbv1alpha1.LabelRole] = role
	}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: names.PodName(db, k), Namespace: db.Namespace, UID: types.UID(fmt.Sprintf("%s-%d-uid", db.Name, k)),
			Labels: labels, ResourceVersion: "7"},
		Status: corev1.PodStatus{PodIP: podIP(k), Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}}},
	}
}

// primaryFacts and replicaFacts are servers as they answer: a primary at
// WAL position lsn that streams to the replicas named, and a replica that
// received and replayed up to lsn.
func primaryFacts(name string, lsn uint64, standbys ...string) *pgsql.Facts {
	f := &pgsql.Facts{Name: name, Timeline: 1, WrittenLSN: lsn}
	for _, s := range standbys {
		f.Standbys = append(f.Standbys, pgsql.Standby{Name: s, Streaming: true})
	}
	return f
}

func replicaFacts(name string, lsn uint64, receiving bool) *pgsql.Facts {
	return &pgsql.Facts{Name: name, InRecovery: true, Timeline: 1, ReceivedLSN: lsn, ReplayedLSN: lsn, Receiving: receiving}
}

// convergedReplicated seeds a replicated PostgreSQL Database that reached
// Running with orders-0 as its primary and every other pod streaming from
// it, as the controller last wrote it, and its servers answering so.
func (f *fixture) convergedReplicated(db *dbv1alpha1.Database) {
	n := int(*db.Spec.Replicas)
	rs := &dbv1alpha1.ReplicationStatus{Primary: names.PodName(db, 0)}
	f.sql.servers = map[string]*pgsql.Facts{}
	var standbys []string
	for k := range n {
		name := names.PodName(db, k)
		is := dbv1alpha1.InstanceStatus{Name: name, Role: dbv1alpha1.RolePrimary}
		role := dbv1alpha1.RolePrimary
		if k > 0 {
			role = dbv1alpha1.RoleReplica
			is = dbv1alpha1.InstanceStatus{Name: name, Role: dbv1alpha1.RoleReplica, Streaming: true, LagBytes: ptr.To[int64](0)}
			standbys = append(standbys, name)
			f.sql.servers[podIP(k)] = replicaFacts(name, 100, true)
		}
		rs.Instances = append(rs.Instances, is)
		f.seed(replicatedPod(db, k, role, true))
	}
	f.sql.servers[podIP(0)] = primaryFacts(names.PodName(db, 0), 100, standbys...)
	db.Status.Replication = rs
	p := desired(f.t, db)
	ro := &corev1.Service{}
	if err := builder.Convert(p.ReadOnlyService, ro); err != nil {
		f.t.Fatal(err)
	}
	sts, _, _, _ := f.converged(db)
	replicating := &metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: metav1.ConditionTrue, Reason: status.ReasonStreaming,
		Message: fmt.Sprintf("orders-0 is the primary; %d/%d replicas stream from it", n-1, n-1)}
	e := profile(f.t, db)
	image, _ := e.Image(db.Spec.Version, db.Spec.Image)
	db.Status = status.Compute(status.Input{Database: db, Endpoint: names.Endpoint(db, e.Runtime().Port), StatefulSet: sts, Image: image,
		Replication: rs, Replicating: replicating, Now: metav1.NewTime(testNow.Add(-time.Hour))})
	ro.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	f.seed(ro)
}

// expectPodRole expects the role label of pod k of db set (or removed, with
// ""), on that pod's UID.
func (f *fixture) expectPodRole(db *dbv1alpha1.Database, k int, role string) {
	var value any
	if role != "" {
		value = role
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": fmt.Sprintf("%s-%d-uid", db.Name, k), "labels": map[string]any{dbv1alpha1.LabelRole: value}}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(podsResource, db.Namespace, names.PodName(db, k), types.MergePatchType, patch))
}

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// replicatedStatus is the status the controller writes for a replicated
// Database whose pods are all ready at spec.version.
func replicatedStatus(db *dbv1alpha1.Database, phase dbv1alpha1.Phase, rs *dbv1alpha1.ReplicationStatus,
	readyStatus metav1.ConditionStatus, readyReason, readyMsg string,
	progStatus metav1.ConditionStatus, progReason, progMsg string,
	replStatus metav1.ConditionStatus, replReason, replMsg string) dbv1alpha1.DatabaseStatus {
	n := *db.Spec.Replicas
	st := wantStatus(db, phase, n, n, db.Spec.Version, readyStatus, readyReason, readyMsg, progStatus, progReason, progMsg)
	st.Replication = rs
	st.Conditions = append(st.Conditions, metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: replStatus, Reason: replReason,
		Message: replMsg, ObservedGeneration: db.Generation, LastTransitionTime: metav1.NewTime(testNow)})
	return st
}

// The first sync of a new replicated Database whose pods serve: orders-0
// out of recovery is recorded as the target before any label is given,
// then labelled primary, recorded as the primary, and the replicas that
// stream from it labelled replica.
func TestReplicationFirstPrimary(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.convergedReplicated(db)
	// As created: no role labels, no replication status yet, never Running.
	db.Status.Replication = nil
	db.Status.CurrentVersion = ""
	db.Status.Conditions = db.Status.Conditions[:2]
	for _, pod := range f.podLister {
		delete(pod.Labels, dbv1alpha1.LabelRole)
	}
	// The plan of the first sync: the client Service selects every pod
	// until a primary is recorded; the children are as that plan makes them.
	f.serviceLister[1].Spec.Selector = names.SelectorLabels(db)
	f.serviceLister[1].Annotations = expectedService(t, db).Annotations
	f.statefulSetLister[0].Annotations = expectedStatefulSet(t, db).Annotations

	f.expectGet(secretsResource, "default", "orders-credentials")
	target := &dbv1alpha1.ReplicationStatus{TargetPrimary: "orders-0"}
	f.expectStatusUpdate(db, replicatedStatus(db, "Provisioning", target,
		"False", "NoPrimary", "making orders-0 the first primary",
		"True", "NoPrimary", "making orders-0 the first primary",
		"False", "NoPrimary", "making orders-0 the first primary"))
	f.expectPodRole(db, 0, "primary")
	f.expectPodRole(db, 1, "replica")
	f.expectPodRole(db, 2, "replica")
	done := &dbv1alpha1.ReplicationStatus{Primary: "orders-0", Instances: []dbv1alpha1.InstanceStatus{
		{Name: "orders-0", Role: "primary"},
		{Name: "orders-1", Role: "replica", Streaming: true, LagBytes: ptr.To[int64](0)},
		{Name: "orders-2", Role: "replica", Streaming: true, LagBytes: ptr.To[int64](0)},
	}}
	f.expectStatusUpdate(db, replicatedStatus(db, "Running", done,
		"True", "AllReplicasReady", "3/3 replicas are ready",
		"False", "Converged", "the Database matches its spec",
		"True", "Streaming", "orders-0 is the primary; 2/2 replicas stream from it"))
	f.events = []string{"Normal PrimaryChosen first primary: orders-0 runs out of recovery", "Normal Running"}
	f.run(ctx, ref(db))
}

// The primary's pod stopped answering 40 s ago, past the default delay of
// 30 s: the replica with the most WAL received is recorded as the target,
// the old primary loses its label before anything is promoted, the target
// is promoted, labelled, and recorded as the primary.
func TestReplicationFailover(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.convergedReplicated(db)
	lost := metav1.NewTime(testNow.Add(-40 * time.Second))
	db.Status.Replication.PrimaryLostSince = &lost
	f.podLister[0].Status.Conditions[0].Status = corev1.ConditionFalse
	delete(f.sql.servers, podIP(0))
	f.sql.servers[podIP(1)] = replicaFacts("orders-1", 90, false)
	f.sql.servers[podIP(2)] = replicaFacts("orders-2", 120, false)

	f.expectGet(secretsResource, "default", "orders-credentials")
	target := db.Status.Replication.DeepCopy()
	target.TargetPrimary = "orders-2"
	f.expectStatusUpdate(db, replicatedStatus(db, "Updating", target,
		"False", "FailingOver", "making orders-2 the primary",
		"True", "FailingOver", "making orders-2 the primary",
		"False", "FailingOver", "making orders-2 the primary"))
	f.expectPodRole(db, 0, "")
	f.expectPodRole(db, 2, "primary")
	done := &dbv1alpha1.ReplicationStatus{Primary: "orders-2", Instances: []dbv1alpha1.InstanceStatus{
		{Name: "orders-0"}, {Name: "orders-1", Role: "replica"}, {Name: "orders-2", Role: "primary"},
	}}
	st := replicatedStatus(db, "Running", done,
		"True", "AllReplicasReady", "3/3 replicas are ready",
		"False", "Converged", "the Database matches its spec",
		"False", "ReplicasNotStreaming", "orders-2 is the primary; 0/2 replicas stream from it; not streaming yet: orders-0, orders-1")
	f.expectStatusUpdate(db, st)
	f.events = []string{
		"Warning FailingOver primary orders-0 has not served for 40s; failing over to orders-2, the replica with the most WAL received",
		"Normal PrimaryChanged orders-2 is the primary, in place of orders-0",
		"Normal Running",
	}
	f.run(ctx, ref(db))
	want := []string{"probe 192.0.2.10 as postgres", "probe 192.0.2.11 as postgres", "probe 192.0.2.12 as postgres", "promote 192.0.2.12", "probe 192.0.2.12 as postgres"}
	if got := append(sortedCopy(f.sql.calls[:3]), f.sql.calls[3:]...); !reflect.DeepEqual(got, want) {
		t.Errorf("SQL calls = %q, want %q", got, want)
	}
}

// The primary stopped answering just now (a restart): no failover; the
// time is recorded, the Database is not Running, and it is looked at again
// when the delay ends.
func TestReplicationPrimaryRestartIsNoFailover(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 2)
	db.Spec.Replication = &dbv1alpha1.ReplicationSpec{FailoverDelaySeconds: ptr.To[int32](20)}
	f.convergedReplicated(db)
	f.podLister[0].Status.Conditions[0].Status = corev1.ConditionFalse
	delete(f.sql.servers, podIP(0))
	f.sql.servers[podIP(1)] = replicaFacts("orders-1", 100, false)

	f.expectGet(secretsResource, "default", "orders-credentials")
	now := metav1.NewTime(testNow)
	rs := &dbv1alpha1.ReplicationStatus{Primary: "orders-0", PrimaryLostSince: &now, Instances: []dbv1alpha1.InstanceStatus{
		{Name: "orders-0"}, {Name: "orders-1", Role: "replica"}}}
	msg := "primary orders-0 does not serve; failing over if it does not serve again within 20s"
	f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "NoPrimary", msg, "True", "NoPrimary", msg, "False", "NoPrimary", msg))
	c, _, _, recorder := f.newController(ctx)
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
	if got := c.workqueue.Len(); got != 0 {
		t.Errorf("queue length right after the sync = %d, want 0 (looked at again after the delay, not at once)", got)
	}
}

// A switchover to orders-1, as asked: no acknowledged write may be lost, so
// the old primary is fenced (it refuses writes and is marked to rejoin as a
// replica) and stopped only once orders-1 has received all it wrote; then
// orders-1 is promoted.
func TestReplicationSwitchover(t *testing.T) {
	for _, tt := range []struct {
		name     string
		received uint64
	}{{"the replica has all the WAL", 100}, {"the replica lags behind", 90}} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 2)
			db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Primary: "orders-1"}
			f.convergedReplicated(db)
			db.Generation = 2
			f.sql.servers[podIP(1)].ReceivedLSN = tt.received

			f.expectGet(secretsResource, "default", "orders-credentials")
			target := db.Status.Replication.DeepCopy()
			target.TargetPrimary = "orders-1"
			f.expectStatusUpdate(db, replicatedStatus(db, "Updating", target,
				"False", "FailingOver", "making orders-1 the primary",
				"True", "FailingOver", "making orders-1 the primary",
				"False", "FailingOver", "making orders-1 the primary"))
			f.expectPodRole(db, 0, "")
			f.events = []string{"Normal SwitchingOver switchover to orders-1 as asked",
				"Normal Fenced orders-0 still accepts writes; it is fenced before orders-1 is promoted"}
			if tt.received < 100 {
				// It waits for the WAL: the old primary runs on, fenced.
				rs := target.DeepCopy()
				// orders-0 is still the primary, fenced, and orders-1 streams from it.
				rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0", Role: "primary"},
					{Name: "orders-1", Role: "replica", Streaming: true, LagBytes: ptr.To[int64](0)}}
				msg := "making orders-1 the primary: waiting for orders-1 to receive the WAL of orders-0 up to 0/64 before it is promoted"
				f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
				f.run(ctx, ref(db))
				return
			}
			// Stopped: its clean shutdown sends its last WAL, its shutdown
			// checkpoint included, before anything is promoted.
			f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-0-uid"))}}))
			rs := target.DeepCopy()
			rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", Role: "replica", Streaming: true}}
			msg := "making orders-1 the primary: waiting for the former primary orders-0 to shut down cleanly, sending its last WAL to the replicas"
			f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
			f.run(ctx, ref(db))
		})
	}
	t.Run("the old primary has shut down", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 2)
		db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Primary: "orders-1"}
		f.convergedReplicated(db)
		db.Status.Replication.TargetPrimary = "orders-1"
		f.podLister = f.podLister[1:]
		delete(f.sql.servers, podIP(0))

		f.expectGet(secretsResource, "default", "orders-credentials")
		f.expectPodRole(db, 1, "primary")
		done := &dbv1alpha1.ReplicationStatus{Primary: "orders-1", Instances: []dbv1alpha1.InstanceStatus{{Name: "orders-1", Role: "primary"}}}
		st := replicatedStatus(db, "Running", done,
			"True", "AllReplicasReady", "2/2 replicas are ready",
			"False", "Converged", "the Database matches its spec",
			"False", "ReplicasNotStreaming", "orders-1 is the primary; 0/1 replicas stream from it")
		keepTransitionTime(&st, "Ready")
		keepTransitionTime(&st, "Progressing")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal PrimaryChanged orders-1 is the primary, in place of orders-0"}
		f.run(ctx, ref(db))
		if want := []string{"probe 192.0.2.11 as postgres", "promote 192.0.2.11", "probe 192.0.2.11 as postgres"}; !reflect.DeepEqual(f.sql.calls, want) {
			t.Errorf("SQL calls = %q, want %q", f.sql.calls, want)
		}
	})
}

// rollingStatus is the status of a replicated Database of 3 ready pods
// while a rollout has updated updated of them.
func rollingStatus(db *dbv1alpha1.Database, rs *dbv1alpha1.ReplicationStatus, updated int,
	replStatus metav1.ConditionStatus, replReason, replMsg string) dbv1alpha1.DatabaseStatus {
	st := replicatedStatus(db, "Updating", rs,
		"False", "ReplicasNotReady", "3/3 replicas are ready",
		"True", "RollingUpdate", fmt.Sprintf("rolling out: %d/3 replicas updated, 3 ready", updated),
		replStatus, replReason, replMsg)
	if replStatus == "True" {
		keepTransitionTime(&st, dbv1alpha1.ConditionReplicating)
	}
	return st
}

// A rollout of a replicated Database (its StatefulSet updates OnDelete):
// the replica of the highest ordinal is restarted first, one pod per
// settled Database; once only the primary runs the earlier revision, the
// controller switches over to an updated replica, and the switchover stops
// the old primary: it restarts last, and once.
func TestReplicationRollout(t *testing.T) {
	for _, tt := range []struct {
		name     string
		outdated []int
		expect   func(f *fixture, db *dbv1alpha1.Database)
	}{
		{name: "every pod outdated: the replica of the highest ordinal first", outdated: []int{0, 1, 2},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-2",
					metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-2-uid"))}}))
				f.expectStatusUpdate(db, rollingStatus(db, db.Status.Replication, 0,
					"True", "Streaming", "orders-0 is the primary; 2/2 replicas stream from it"))
				f.events = []string{"Normal RollingOut Restarting orders-2 at the new revision of the pods"}
			}},
		{name: "a replica not streaming: nothing restarted", outdated: []int{0, 1},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.sql.servers[podIP(0)].Standbys = f.sql.servers[podIP(0)].Standbys[:1]
				rs := db.Status.Replication.DeepCopy()
				rs.Instances[2] = dbv1alpha1.InstanceStatus{Name: "orders-2", Role: "replica"}
				f.expectStatusUpdate(db, rollingStatus(db, rs, 1,
					"False", "ReplicasNotStreaming", "orders-0 is the primary; 1/2 replicas stream from it; not streaming yet: orders-2"))
			}},
		{name: "only the primary outdated: switch over to the most advanced replica", outdated: []int{0},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.sql.servers[podIP(2)].ReceivedLSN = 100
				f.sql.servers[podIP(1)].ReceivedLSN = 99
				target := db.Status.Replication.DeepCopy()
				target.TargetPrimary = "orders-2"
				f.expectStatusUpdate(db, replicatedStatus(db, "Updating", target,
					"False", "FailingOver", "making orders-2 the primary",
					"True", "FailingOver", "making orders-2 the primary",
					"False", "FailingOver", "making orders-2 the primary"))
				f.expectPodRole(db, 0, "")
				f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
					metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-0-uid"))}}))
				rs := target.DeepCopy()
				rs.Instances = []dbv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", Role: "replica", Streaming: true}, {Name: "orders-2", Role: "replica", Streaming: true}}
				msg := "making orders-2 the primary: waiting for the former primary orders-0 to shut down cleanly, sending its last WAL to the replicas"
				f.expectStatusUpdate(db, replicatedStatus(db, "Updating", rs, "False", "FailingOver", msg, "True", "FailingOver", msg, "False", "FailingOver", msg))
				f.events = []string{"Normal SwitchingOver switchover to orders-2 as asked",
					"Normal Fenced orders-0 still accepts writes; it is fenced before orders-2 is promoted"}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 3)
			f.convergedReplicated(db)
			f.statefulSetLister[0].Status.UpdateRevision = "rev-2"
			f.statefulSetLister[0].Status.UpdatedReplicas = int32(3 - len(tt.outdated))
			for _, k := range []int{0, 1, 2} {
				if !slices.Contains(tt.outdated, k) {
					f.podLister[k].Labels["controller-revision-hash"] = "rev-2"
				}
			}
			f.expectGet(secretsResource, "default", "orders-credentials")
			tt.expect(f, db)
			f.run(ctx, ref(db))
		})
	}
}

// Synchronous replication asked for: the serving primary's
// synchronous_standby_names is set over SQL, with no API write.
func TestReplicationSynchronous(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	db.Spec.Replication = &dbv1alpha1.ReplicationSpec{Synchronous: &dbv1alpha1.SynchronousReplication{Number: 1, DataDurability: dbv1alpha1.DataDurabilityRequired}}
	f.convergedReplicated(db)
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.run(ctx, ref(db))
	if got, want := f.sql.calls[len(f.sql.calls)-1], `set synchronous_standby_names of 192.0.2.10 to "ANY 1 (*)"`; got != want {
		t.Errorf("last SQL call = %s, want %s", got, want)
	}
	// Set: the next pass leaves it.
	calls := len(f.sql.calls)
	c, _, _, recorder := f.newController(ctx)
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
	for _, call := range f.sql.calls[calls:] {
		if strings.HasPrefix(call, "set ") {
			t.Errorf("set again: %s", call)
		}
	}
}

// A single server scaled up into a replicated Database: it runs the earlier
// revision of the pods (no replication access yet), and no replica can
// take over, so it restarts first, in place; and a replicated Database
// scaled to 0 is no failover.
func TestReplicationScaling(t *testing.T) {
	t.Run("a lone primary of an earlier revision restarts in place", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 3)
		f.convergedReplicated(db)
		f.statefulSetLister[0].Status.UpdateRevision = "rev-2"
		f.statefulSetLister[0].Status.UpdatedReplicas = 2
		// orders-1 and orders-2 wait in their init containers to clone.
		f.podLister[1].Labels["controller-revision-hash"] = "rev-2"
		f.podLister[2].Labels["controller-revision-hash"] = "rev-2"
		f.podLister[1].Status.Conditions[0].Status = corev1.ConditionFalse
		f.podLister[2].Status.Conditions[0].Status = corev1.ConditionFalse
		delete(f.sql.servers, podIP(1))
		delete(f.sql.servers, podIP(2))
		f.sql.servers[podIP(0)].Standbys = nil

		f.expectGet(secretsResource, "default", "orders-credentials")
		f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(podsResource, "default", "orders-0",
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("orders-0-uid"))}}))
		rs := db.Status.Replication.DeepCopy()
		rs.Instances[1], rs.Instances[2] = dbv1alpha1.InstanceStatus{Name: "orders-1"}, dbv1alpha1.InstanceStatus{Name: "orders-2"}
		st := replicatedStatus(db, "Updating", rs,
			"False", "ReplicasNotReady", "1/3 replicas are ready",
			"True", "RollingUpdate", "rolling out: 2/3 replicas updated, 1 ready",
			"False", "ReplicasNotStreaming", "orders-0 is the primary; 0/2 replicas stream from it; not streaming yet: orders-1, orders-2")
		st.ReadyReplicas = 1
		f.statefulSetLister[0].Status.ReadyReplicas = 1
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal RollingOut Restarting orders-0 at the new revision of the pods"}
		f.run(ctx, ref(db))
	})
	t.Run("scaled to 0: the primary stops and stays the primary", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 3)
		f.convergedReplicated(db)
		db.Spec.Replicas = ptr.To[int32](0)
		db.Generation = 2
		// The StatefulSet stops the pods from the highest ordinal: the
		// primary's pod is going, and no replica is promoted.
		f.podLister[0].DeletionTimestamp = &metav1.Time{Time: testNow.Add(30 * time.Second)}
		delete(f.sql.servers, podIP(0))

		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
		f.expectGet(secretsResource, "default", "orders-credentials")
		rs := db.Status.Replication.DeepCopy()
		rs.Instances[0] = dbv1alpha1.InstanceStatus{Name: "orders-0"}
		rs.Instances[1].LagBytes, rs.Instances[2].LagBytes = nil, nil
		rs.Instances[1].Streaming, rs.Instances[2].Streaming = false, false
		st := replicatedStatus(db, "Updating", rs,
			"False", "Stopping", "stopping: 3 replicas still running",
			"True", "Stopping", "stopping: 3 replicas still running",
			"False", "Stopped", "replicas is 0: no server runs; orders-0 stays the primary")
		st.ReadyReplicas, st.Replicas = 3, 3
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.run(ctx, ref(db))
		for _, call := range f.sql.calls {
			if strings.HasPrefix(call, "promote") {
				t.Errorf("scaling to 0 promoted a replica: %s", call)
			}
		}
	})
}

// The superuser credentials are read from the Secret once per version of
// it: a second pass over an unchanged replicated Database reads nothing,
// and one after the Secret changed reads it again.
func TestReplicationReadsCredentialsOncePerSecretVersion(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	f.convergedReplicated(db)
	c, _, k8sI, recorder := f.newController(ctx)
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.syncAndCheck(ctx, c, recorder, ref(db), false)

	f.kubeactions = nil
	f.syncAndCheck(ctx, c, recorder, ref(db), false)

	rotated := f.secretLister[0].DeepCopy()
	rotated.ResourceVersion = "rotated"
	if err := k8sI.Core().V1().Secrets().Informer().GetIndexer().Update(rotated); err != nil {
		t.Fatal(err)
	}
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.syncAndCheck(ctx, c, recorder, ref(db), false)
}
