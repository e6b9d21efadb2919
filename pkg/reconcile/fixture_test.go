package reconcile

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/cached"
	"github.com/dbcontroller/database-controller/pkg/engine/postgresql"
	"github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/fake"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/login"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/pgsql"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// fixture seeds the caches and the fake clientsets, runs sync passes, and
// compares what each did with what it should have: the API actions of each
// clientset, one by one, the events, and the outcome. It also checks, after
// every pass, that the pass read the caches only through its reader, so
// that the settled check covers every read.
type fixture struct {
	t *testing.T

	client     *fake.Clientset
	kubeclient *k8sfake.Clientset

	// Objects to put in the caches, and in the fake clientsets.
	dbLister          []*dbv1alpha1.Database
	statefulSetLister []*appsv1.StatefulSet
	serviceLister     []*corev1.Service
	secretLister      []*corev1.Secret
	claimLister       []*corev1.PersistentVolumeClaim
	podLister         []*corev1.Pod
	jobLister         []*batchv1.Job
	backupLister      []*dbv1alpha1.DatabaseBackup
	claimEventLister  []*corev1.Event
	budgetLister      []*policyv1.PodDisruptionBudget
	nodeLister        []*corev1.Node
	configMapLister   []*corev1.ConfigMap
	tlsSecretLister   []*corev1.Secret
	// podMonitors makes the cluster one with the Prometheus Operator's
	// API: the PodMonitors' cache (podMonitorLister) and a dynamic client,
	// whose actions are dynamicActions.
	podMonitors      bool
	podMonitorLister []*unstructured.Unstructured
	dynamicActions   []core.Action
	dynamic          *dynamicfake.FakeDynamicClient

	// Objects in the fake clientsets at start.
	kubeobjects []runtime.Object
	objects     []runtime.Object

	// Actions expected on each clientset, events as "Type Reason Message",
	// and calls to the servers of replicated Databases (actiontest.Servers).
	kubeactions []core.Action
	actions     []core.Action
	events      []string
	calls       []string
	// primaryChanges are the changes of a primary the metrics are told
	// of, as "namespace/name failover" or "namespace/name switchover";
	// changed, those told.
	primaryChanges, changed []string

	clock *testclock.FakePassiveClock
	// reactors are added to the Database API's fake clientset.
	reactors []func(*fake.Clientset)
	// sql are the servers of replicated Databases.
	sql *actiontest.Servers
	// logins, when set, checks the Secrets' credentials.
	logins *login.Checker
	// archive is what a primary says of its archiving, or archiveErr its
	// failure to answer; archived lists the hosts asked.
	archive    *dbv1alpha1.ArchiveStatus
	archiveErr error
	archived   []string
	// noToolsImage runs the reconciler without --tools-image.
	noToolsImage bool
	// stripTemplates has the StatefulSets' cache hold them as the
	// controller's informer cache does (cached).
	stripTemplates bool

	// Once newReconciler ran: the caches a pass reads (caches), what was
	// read of them (raw), and the Databases by key.
	caches    Caches
	raw       []read
	databases cache.Indexer
	// err is what the last Sync returned.
	err error
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, clock: testclock.NewFakePassiveClock(testNow),
		sql: &actiontest.Servers{Facts: map[string]*ha.Facts{}, LogTerms: pgsql.New().Terms(), AtStart: postgresql.AtStart}}
}

// notReadyStatefulSet is db's StatefulSet, rolled out to one replica that
// is not ready.
func notReadyStatefulSet(t *testing.T, db *dbv1alpha1.Database) *appsv1.StatefulSet {
	sts := expectedStatefulSet(t, db)
	sts.Generation = 1
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, CurrentRevision: "rev-1", UpdateRevision: "rev-1"}
	return sts
}

// claim is a data volume claim as the StatefulSet controller makes it.
func claim(db *dbv1alpha1.Database, ordinal int, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-%s-%d", db.Name, ordinal), Namespace: db.Namespace, Labels: names.Labels(db)},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
	}
}

// startingPod is db's first pod, whose container started a minute ago and
// is not ready yet.
func startingPod(db *dbv1alpha1.Database) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: db.Name + "-0", Namespace: db.Namespace, Labels: names.Labels(db)},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testNow.Add(-time.Minute))}}}}}}
}

// converged seeds a Database that reached Running with all its children,
// and its stored status as the controller last wrote it.
func (f *fixture) converged(db *dbv1alpha1.Database) (*appsv1.StatefulSet, *corev1.Service, *corev1.Service, *corev1.Secret) {
	sts, headless, svc, secret := actiontest.Converged(f.t, db)
	f.seed(db, sts, headless, svc, secret)
	return sts, headless, svc, secret
}

// convergedAtVersions is converged, with the resourceVersions an API
// server gives: 10 for db, 1 to 4 for its children, so that a pass over it
// can settle.
func (f *fixture) convergedAtVersions(db *dbv1alpha1.Database) (*appsv1.StatefulSet, *corev1.Service, *corev1.Service, *corev1.Secret) {
	db.ResourceVersion = "10"
	sts, headless, svc, secret := f.converged(db)
	for i, o := range []metav1.Object{sts, headless, svc, secret} {
		o.SetResourceVersion(fmt.Sprint(i + 1))
	}
	return sts, headless, svc, secret
}

// seed puts objects in both the caches and the fake clientsets. Like
// objects decoded by an informer, children carry no apiVersion and kind.
func (f *fixture) seed(objs ...runtime.Object) {
	for _, o := range objs {
		switch o.(type) {
		case *dbv1alpha1.Database, *dbv1alpha1.DatabaseBackup, *unstructured.Unstructured:
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
			// A user's Secret of spec.tls.secretName is in its own cache.
			if o.Labels[dbv1alpha1.LabelTLS] == "true" {
				f.tlsSecretLister = append(f.tlsSecretLister, o)
			} else {
				f.secretLister = append(f.secretLister, o)
			}
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
		case *policyv1.PodDisruptionBudget:
			f.budgetLister = append(f.budgetLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.Node:
			f.nodeLister = append(f.nodeLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *corev1.ConfigMap:
			f.configMapLister = append(f.configMapLister, o)
			f.kubeobjects = append(f.kubeobjects, o)
		case *unstructured.Unstructured:
			f.podMonitorLister = append(f.podMonitorLister, o)
		default:
			f.t.Fatalf("cannot seed %T", o)
		}
	}
}

// newReconciler makes the clientsets and the caches from what was seeded,
// and a Reconciler over them.
func (f *fixture) newReconciler() (*Reconciler, *record.FakeRecorder) {
	f.client = fake.NewSimpleClientset(f.objects...)
	actiontest.AcceptStatusApply(f.client)
	for _, add := range f.reactors {
		add(f.client)
	}
	f.kubeclient = k8sfake.NewClientset(f.kubeobjects...)

	f.databases = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, d := range f.dbLister {
		f.add(f.databases, d)
	}
	instance := cache.Indexers{IndexInstance: IndexByInstance}
	f.caches = Caches{
		StatefulSets: f.cache(srcStatefulSets, nil, f.statefulSetLister),
		Services:     f.cache(srcServices, nil, f.serviceLister),
		Secrets:      f.cache(srcSecrets, nil, f.secretLister),
		Jobs:         f.cache(srcJobs, instance, f.jobLister),
		Backups:      f.cache(srcBackups, cache.Indexers{backup.IndexDatabase: backup.IndexByDatabase}, f.backupLister),
		Claims:       f.cache(srcClaims, instance, f.claimLister),
		Pods:         f.cache(srcPods, cache.Indexers{IndexInstance: IndexByInstance, IndexNode: IndexByNode}, f.podLister),
		ClaimEvents:  f.cache(srcClaimEvents, cache.Indexers{IndexClaim: IndexByClaim}, f.claimEventLister),
		Budgets:      f.cache(srcBudgets, nil, f.budgetLister),
		Nodes:        f.cache(srcNodes, nil, f.nodeLister),
		ConfigMaps:   f.cache(srcConfigMaps, nil, f.configMapLister),
		TLSSecrets:   f.cache(srcTLSSecrets, nil, f.tlsSecretLister),
	}
	var dynamicClient dynamic.Interface
	if f.podMonitors {
		objs := make([]runtime.Object, len(f.podMonitorLister))
		for i, o := range f.podMonitorLister {
			objs[i] = o.DeepCopy()
		}
		f.dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{builder.PodMonitorGVR: "PodMonitorList"}, objs...)
		// The tracker applies no apply patch: the object applied is the answer.
		f.dynamic.PrependReactor("patch", "podmonitors", func(a core.Action) (bool, runtime.Object, error) {
			p := a.(core.PatchAction)
			if p.GetPatchType() != types.ApplyPatchType {
				return false, nil, nil
			}
			obj := &unstructured.Unstructured{}
			return true, obj, obj.UnmarshalJSON(p.GetPatch())
		})
		f.caches.PodMonitors = f.cache(srcPodMonitors, nil, f.podMonitorLister)
		dynamicClient = f.dynamic
	}
	recorder := record.NewFakeRecorder(100)
	toolsImage := actiontest.ToolsImage
	if f.noToolsImage {
		toolsImage = ""
	}
	r := New(Config{
		KubeClient:     f.kubeclient,
		DBClient:       f.client,
		Caches:         f.caches,
		Recorder:       recorder,
		Clock:          f.clock,
		Random:         actiontest.PasswordSource(),
		Replication:    map[dbv1alpha1.Engine]ha.Client{dbv1alpha1.EnginePostgreSQL: f.sql},
		Logins:         f.logins,
		ToolsImage:     toolsImage,
		Parameters:     map[dbv1alpha1.Engine]ParameterClient{dbv1alpha1.EnginePostgreSQL: f.sql, dbv1alpha1.EngineMySQL: f.sql, dbv1alpha1.EngineMongoDB: AtStartOnly{}},
		Certificates:   map[dbv1alpha1.Engine]CertificatePresenter{dbv1alpha1.EnginePostgreSQL: f.sql.PresentCertificate},
		PrimaryChanges: f,
		Dynamic:        dynamicClient,
		Monitoring:     map[dbv1alpha1.Engine]MonitoringClient{dbv1alpha1.EnginePostgreSQL: f.sql, dbv1alpha1.EngineMySQL: f.sql},
		Archiver: func(_ context.Context, host string, _ int32, _ ha.Credentials) (*dbv1alpha1.ArchiveStatus, error) {
			f.archived = append(f.archived, host)
			return f.archive.DeepCopy(), f.archiveErr
		},
	})
	return r, recorder
}

// PrimaryChanged records what the metrics are told (PrimaryChangeObserver).
func (f *fixture) PrimaryChanged(namespace, database string, failover bool) {
	kind := "switchover"
	if failover {
		kind = "failover"
	}
	f.changed = append(f.changed, namespace+"/"+database+" "+kind)
}

func (f *fixture) add(indexer cache.Indexer, obj any) {
	if err := indexer.Add(f.cached(obj)); err != nil {
		f.t.Fatal(err)
	}
}

// cache is an indexer of src holding objs, which logs every read of it in
// f.raw.
func (f *fixture) cache(src source, indexers cache.Indexers, objs any) cache.Indexer {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
	v := reflect.ValueOf(objs)
	for i := range v.Len() {
		f.add(indexer, v.Index(i).Interface())
	}
	return &loggedIndexer{Indexer: indexer, src: src, log: &f.raw}
}

// loggedIndexer logs the reads of an indexer: by key and by index, the
// two a reader makes, and any other as a read of index "*", which no
// reader makes.
type loggedIndexer struct {
	cache.Indexer
	src source
	log *[]read
}

func (l *loggedIndexer) GetByKey(key string) (any, bool, error) {
	*l.log = append(*l.log, read{src: l.src, key: key})
	return l.Indexer.GetByKey(key)
}

func (l *loggedIndexer) ByIndex(index, key string) ([]any, error) {
	*l.log = append(*l.log, read{src: l.src, index: index, key: key})
	return l.Indexer.ByIndex(index, key)
}

func (l *loggedIndexer) other(what string) {
	*l.log = append(*l.log, read{src: l.src, index: "*", key: what})
}

func (l *loggedIndexer) Get(obj any) (any, bool, error) { l.other("Get"); return l.Indexer.Get(obj) }
func (l *loggedIndexer) List() []any                    { l.other("List"); return l.Indexer.List() }
func (l *loggedIndexer) ListKeys() []string             { l.other("ListKeys"); return l.Indexer.ListKeys() }
func (l *loggedIndexer) Index(index string, obj any) ([]any, error) {
	l.other("Index " + index)
	return l.Indexer.Index(index, obj)
}
func (l *loggedIndexer) IndexKeys(index, key string) ([]string, error) {
	l.other("IndexKeys " + index)
	return l.Indexer.IndexKeys(index, key)
}
func (l *loggedIndexer) ListIndexFuncValues(index string) []string {
	l.other("ListIndexFuncValues " + index)
	return l.Indexer.ListIndexFuncValues(index)
}

// updatePods puts the pods of f.podLister, which a test changed after a
// pass, in the pods' cache, as an informer would.
func (f *fixture) updatePods() {
	f.t.Helper()
	for _, pod := range f.podLister {
		f.update(f.caches.Pods, pod)
	}
}

// update puts obj in place of the object of its key in indexer, as an
// informer would.
func (f *fixture) update(indexer cache.Indexer, obj any) {
	f.t.Helper()
	if err := indexer.Update(f.cached(obj)); err != nil {
		f.t.Fatal(err)
	}
	// The API server holds what the cache shows: a pass reads a
	// StatefulSet whose cached copy is stripped from there.
	if sts, ok := obj.(*appsv1.StatefulSet); ok && f.kubeclient != nil {
		tracker := f.kubeclient.Tracker()
		gvr := appsv1.SchemeGroupVersion.WithResource("statefulsets")
		err := tracker.Update(gvr, sts.DeepCopy(), sts.Namespace)
		if apierrors.IsNotFound(err) {
			err = tracker.Add(sts.DeepCopy())
		}
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// kubeActions are the actions of the kube clientset since they were last
// cleared, but, under -stripped-templates in a test that did not ask for
// it, the reads of StatefulSets.
func (f *fixture) kubeActions() []core.Action {
	actions := f.kubeclient.Actions()
	if *strippedTemplates && !f.stripTemplates {
		actions = slices.DeleteFunc(actions, func(a core.Action) bool {
			return a.GetVerb() == "get" && a.GetResource().Resource == "statefulsets"
		})
	}
	return actions
}

// strippedTemplates runs every test of the package with the caches
// holding StatefulSets, pods, Services, Secrets and claims as the
// controller's informer caches hold them, stripped
// (builder.StripTemplates) and compact (package cached), and the fake
// clientset holding them whole: each test's expectations must hold but
// for the reads of StatefulSets from the API server that the drift
// comparison then makes (make test runs it both ways). The tests written
// for those reads set stripTemplates instead.
var strippedTemplates = flag.Bool("stripped-templates", false, "hold the cached StatefulSets stripped, and them, pods, Services, Secrets and claims compact, in every test, and ignore the reads of StatefulSets from the API server")

// cached is obj as the cache of a test holds it when the test asks or
// -stripped-templates is given: a StatefulSet with its templates stripped,
// compact, and a pod, Service, Secret or claim compact (a Secret with no
// data, as stripForCache leaves it); the fake clientset holds them whole.
func (f *fixture) cached(obj any) any {
	if !f.stripTemplates && !*strippedTemplates {
		return obj
	}
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		sts := o.DeepCopy()
		builder.StripTemplates(sts)
		return cached.NewStatefulSet(sts)
	case *corev1.Pod:
		return cached.NewPod(o.DeepCopy())
	case *corev1.Service:
		return cached.NewService(o.DeepCopy())
	case *corev1.Secret:
		return cached.NewSecret(o.DeepCopy())
	case *corev1.PersistentVolumeClaim:
		return cached.NewPersistentVolumeClaim(o.DeepCopy())
	}
	return obj
}

func ref(db *dbv1alpha1.Database) types.NamespacedName {
	return types.NamespacedName{Namespace: db.Namespace, Name: db.Name}
}

// outcome names what a Sync returned, for the expectations of a test.
type outcome string

const (
	// synced: nil, and a pass ran.
	synced outcome = "synced"
	// skipped: nil, and the pass was skipped as settled.
	skipped outcome = "skipped"
	// needsPerson: a *status.Problem, written in the status, that only a
	// change of the Database or its children clears.
	needsPerson outcome = "problem"
	// needsPersonRecheck: a *status.Problem that may clear by itself (an
	// object in the way): looked at again on a capped backoff.
	needsPersonRecheck outcome = "problem, looked at again"
	// recheckSoon: a *RecheckError with no After: a capped backoff.
	recheckSoon outcome = "recheck"
	// pollServers: a *RecheckError with After: a replicated Database's pace.
	pollServers outcome = "poll"
	// recheckDue: a *RecheckError with After and Due: once, when a cause
	// falls due.
	recheckDue outcome = "recheck when due"
	// waiting: a *WaitingError.
	waiting outcome = "waiting"
	// namespaceDeleting: a create refused because the namespace is being
	// deleted.
	namespaceDeleting outcome = "namespace being deleted"
	// transient: any other error, retried with rate limiting.
	transient outcome = "transient"
)

// outcomeOf sorts what Sync returned.
func outcomeOf(wasSkipped bool, err error) outcome {
	var (
		problem *status.Problem
		recheck *RecheckError
	)
	switch {
	case err == nil && wasSkipped:
		return skipped
	case err == nil:
		return synced
	case errors.As(err, &problem) && problem.Recheck:
		return needsPersonRecheck
	case errors.As(err, &problem):
		return needsPerson
	case errors.As(err, &recheck) && recheck.After > 0 && recheck.Due:
		return recheckDue
	case errors.As(err, &recheck) && recheck.After > 0:
		return pollServers
	case errors.As(err, &recheck):
		return recheckSoon
	case IsWaiting(err):
		return waiting
	case NamespaceDeleting(err):
		return namespaceDeleting
	default:
		return transient
	}
}

// run syncs the Database ref names with a new Reconciler over what was
// seeded, checks what it did, and returns the Reconciler.
func (f *fixture) run(ctx context.Context, ref types.NamespacedName, want outcome) *Reconciler {
	f.t.Helper()
	r, recorder := f.newReconciler()
	f.syncAndCheck(ctx, r, recorder, ref, want)
	return r
}

// syncAndCheck runs one Sync of the Database ref names, as the Databases'
// cache holds it, and checks its outcome, its actions, its events, and
// that every cache read it made went through its reader.
func (f *fixture) syncAndCheck(ctx context.Context, r *Reconciler, recorder *record.FakeRecorder, ref types.NamespacedName, want outcome) {
	f.t.Helper()
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	if f.dynamic != nil {
		f.dynamic.ClearActions()
	}
	obj, exists, err := f.databases.GetByKey(ref.String())
	if err != nil || !exists {
		f.t.Fatalf("no Database %s in the cache: %v", ref, err)
	}
	var settledReads []read
	if last, ok := r.settled.Get(ref); ok {
		settledReads, _ = last.reads.reads(ref)
	}
	f.raw = nil
	f.sql.ResetCalls()
	wasSkipped, rd, err := r.sync(ctx, obj.(*dbv1alpha1.Database))
	f.err = err
	if got := outcomeOf(wasSkipped, err); got != want {
		f.t.Fatalf("Sync: %s (%v), want %s", got, err, want)
	}
	// No informer reads these clientsets: every list is the pass's own.
	actiontest.CheckAllActions(f.t, "database clientset", f.actions, f.client.Actions())
	actiontest.CheckAllActions(f.t, "kube clientset", f.kubeactions, f.kubeActions())
	if f.dynamic != nil {
		actiontest.CheckAllActions(f.t, "dynamic client", f.dynamicActions, f.dynamic.Actions())
	}
	actiontest.CheckEvents(f.t, f.events, recorder)
	actiontest.CheckCalls(f.t, "calls to the servers", f.calls, f.sql.Calls())
	if !slices.Equal(f.changed, f.primaryChanges) {
		f.t.Errorf("primary changes told: %q, want %q", f.changed, f.primaryChanges)
	}
	f.changed = nil
	var recorded []read
	if rd != nil {
		recorded = rd.reads
	}
	for _, raw := range f.raw {
		if !slices.Contains(recorded, raw) && !slices.Contains(settledReads, raw) {
			f.t.Errorf("the pass read %v of the caches past its reader: the settled check cannot see it change", raw)
		}
	}
}

// String names a read in a test's message.
func (rd read) String() string {
	what := "key " + rd.key
	if rd.index != "" {
		what = fmt.Sprintf("index %s %s", rd.index, rd.key)
	}
	return fmt.Sprintf("%s by %s", resources[rd.src].Resource, what)
}

// Expected actions.

func (f *fixture) expectCreate(resource schema.GroupVersionResource, obj runtime.Object) {
	f.kubeactions = append(f.kubeactions, actiontest.Create(resource, obj))
}

// expectNewDatabase expects the first pass over db, a new Database named
// orders: its children created, its status Provisioning, one event.
func (f *fixture) expectNewDatabase(db *dbv1alpha1.Database) {
	t := f.t
	f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
	f.expectCreate(servicesResource, expectedHeadless(t, db))
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
	f.expectStatusUpdate(db, actiontest.Provisioning(db))
	f.events = []string{"Normal Created Created Secret orders-credentials, Service orders-headless, Service orders, StatefulSet orders"}
}

func (f *fixture) expectGet(resource schema.GroupVersionResource, ns, name string) {
	f.kubeactions = append(f.kubeactions, actiontest.Get(resource, ns, name))
}

// expectApply expects applyConfiguration applied. A StatefulSet's is
// expected as a repair that changes its spec applies it: saying that the
// generation written is not known (drift.WrittenGenerationAnnotation "");
// expectApplyWritten expects another.
func (f *fixture) expectApply(resource schema.GroupVersionResource, ns, name string, applyConfiguration any) {
	if sts, ok := applyConfiguration.(*appsv1ac.StatefulSetApplyConfiguration); ok {
		applyConfiguration = statefulSetAdapter{}.withWrittenGeneration(sts, "")
	}
	f.kubeactions = append(f.kubeactions, actiontest.Apply(f.t, resource, ns, name, applyConfiguration))
}

// expectApplyWritten expects the StatefulSet sts applied as a repair that
// changes only its metadata does: saying that its spec is still at
// generation written.
func (f *fixture) expectApplyWritten(sts *appsv1ac.StatefulSetApplyConfiguration, written string) {
	f.kubeactions = append(f.kubeactions, actiontest.Apply(f.t, statefulSetsResource, *sts.Namespace, *sts.Name,
		statefulSetAdapter{}.withWrittenGeneration(sts, written)))
}

func (f *fixture) expectDelete(resource schema.GroupVersionResource, ns, name string, uid types.UID) {
	f.kubeactions = append(f.kubeactions, actiontest.DeleteUID(resource, ns, name, uid))
}

func (f *fixture) expectStatusUpdate(db *dbv1alpha1.Database, st dbv1alpha1.DatabaseStatus) {
	f.actions = append(f.actions, actiontest.StatusApply(f.t, db, st))
}

func (f *fixture) expectFinalizers(db *dbv1alpha1.Database, finalizers []string) {
	patch, err := backup.FinalizersPatch(db.ResourceVersion, db.Finalizers, finalizers)
	if err != nil {
		f.t.Fatal(err)
	}
	f.actions = append(f.actions, actiontest.Patch(actiontest.Databases, db.Namespace, db.Name, types.JSONPatchType, patch))
}

// expectSecretReleased expects the JSON patch that removes db's owner
// reference, the first, from its Secret.
func (f *fixture) expectSecretReleased(db *dbv1alpha1.Database) {
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/ownerReferences/0/uid","value":%q},{"op":"remove","path":"/metadata/ownerReferences/0"}]`, db.UID)
	f.kubeactions = append(f.kubeactions, actiontest.Patch(actiontest.Secrets, db.Namespace, names.SecretName(db), types.JSONPatchType, []byte(patch)))
}

// The resources the pass writes, by the names the tests use.
var (
	secretsResource      = actiontest.Secrets
	servicesResource     = actiontest.Services
	statefulSetsResource = actiontest.StatefulSets
	podsResource         = actiontest.Pods
	budgetsResource      = actiontest.Budgets
	claimsResource       = actiontest.Claims
	backupsResource      = actiontest.DatabaseBackups
)

// The fixtures' Databases, children and statuses (package actiontest), by
// the names the tests use.
var (
	testNow            = actiontest.Now
	newDatabase        = actiontest.NewDatabase
	profile            = actiontest.Engine
	desired            = actiontest.Desired
	expectedSecret     = actiontest.Secret
	expectedHeadless   = actiontest.HeadlessService
	expectedService    = actiontest.Service
	rolledOut          = actiontest.RolledOut
	wantStatus         = actiontest.WantStatus
	keepTransitionTime = actiontest.KeepTransitionTime
)

const testPassword = actiontest.Password

func expectedStatefulSet(t *testing.T, db *dbv1alpha1.Database) *appsv1.StatefulSet {
	return actiontest.StatefulSet(t, db)
}

// createdStatefulSet is the StatefulSet desired, as the controller creates
// it: generation 1 of its spec written.
func createdStatefulSet(t *testing.T, desired *appsv1ac.StatefulSetApplyConfiguration) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{}
	if err := builder.Convert(statefulSetAdapter{}.withWrittenGeneration(desired, "1"), sts); err != nil {
		t.Fatal(err)
	}
	return sts
}

func desiredStatefulSet(t *testing.T, db *dbv1alpha1.Database) any {
	return desired(t, db).StatefulSet
}
