package main

import (
	"context"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/cached"
	"github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/fake"
	informers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions"
	"github.com/dbcontroller/database-controller/pkg/metrics"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// The child informers list and watch only the objects this controller
// manages, and no Secret data ever enters a cache: "credentials never sit in
// the controller's memory".
func TestInformerFactoriesFilterAndStrip(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	managed := map[string]string{names.LabelManagedBy: names.ManagedBy}
	secret := func(name string, l map[string]string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: l,
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "someone"}}},
			Data:       map[string][]byte{"password": []byte("s3cret")},
			StringData: map[string]string{"token": "t"},
		}
	}
	kube := k8sfake.NewClientset(secret("orders-credentials", managed), secret("unrelated", nil))
	dbs := fake.NewSimpleClientset(&dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default"}})

	kubeFactory, dbFactory := newInformerFactories(kube, dbs, metav1.NamespaceAll, 0)
	secrets := kubeFactory.Core().V1().Secrets()
	databases := dbFactory.Dbcontroller().V1alpha1().Databases()
	secrets.Informer()
	databases.Informer()
	kubeFactory.Start(ctx.Done())
	dbFactory.Start(ctx.Done())
	for typ, ok := range kubeFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	dbFactory.WaitForCacheSync(ctx.Done())

	var listed []string
	for _, a := range kube.Actions() {
		if l, ok := a.(core.ListActionImpl); ok && a.GetResource().Resource == "secrets" {
			listed = append(listed, l.GetListRestrictions().Labels.String())
		}
	}
	if want := []string{"app.kubernetes.io/managed-by=database-controller"}; strings.Join(listed, "|") != strings.Join(want, "|") {
		t.Errorf("Secrets listed with label selectors %q, want %q", listed, want)
	}
	held := secrets.Informer().GetStore().List()
	if len(held) != 1 {
		t.Fatalf("cached Secrets = %v, want only orders-credentials", held)
	}
	// The cache holds Secrets in a form that has no field for data.
	if _, ok := held[0].(*cached.Secret); !ok {
		t.Errorf("the cache holds a %T, want a *cached.Secret", held[0])
	}
	if s, ok := cached.Whole(held[0]).(*corev1.Secret); !ok || s.Name != "orders-credentials" {
		t.Fatalf("cached Secret = %v, want orders-credentials", held[0])
	} else if s.Data != nil || s.StringData != nil || s.ManagedFields != nil {
		t.Errorf("cached Secret keeps data %v, stringData %v, managedFields %v; want none", s.Data, s.StringData, s.ManagedFields)
	}
	// Databases carry no such label: every one is cached.
	if got, _ := databases.Lister().List(labels.Everything()); len(got) != 1 {
		t.Errorf("cached Databases = %d, want 1", len(got))
	}
}

// Each informer factory lists its own kind with its own selector, in the
// controller's namespace, and its informers keep only the indexes some
// reader reads: none by namespace (withoutNamespaceIndex) but the pods',
// which the backups' runner lists by namespace.
func TestInformersListTheirKindAndIndexWhatIsRead(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const ns = "shop"
	// A clientset per factory, whose actions are what that factory listed.
	managedClient, eventsClient, configMapsClient, tlsClient, nodesClient := k8sfake.NewClientset(), k8sfake.NewClientset(),
		k8sfake.NewClientset(), k8sfake.NewClientset(), k8sfake.NewClientset()
	dbs := fake.NewSimpleClientset()
	kubeFactory, dbFactory := newInformerFactories(managedClient, dbs, ns, 0)
	factories := []struct {
		name    string
		factory interface {
			Start(<-chan struct{})
			WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool
		}
		informerFor func(runtime.Object) cache.SharedIndexInformer
		client      *k8sfake.Clientset
		// listed is what the factory lists: resource, namespace, label
		// and field selectors.
		listed []string
	}{
		{name: "managed", factory: kubeFactory, client: managedClient, listed: []string{
			"jobs shop app.kubernetes.io/managed-by=database-controller ",
			"persistentvolumeclaims shop app.kubernetes.io/managed-by=database-controller ",
			"poddisruptionbudgets shop app.kubernetes.io/managed-by=database-controller ",
			"pods shop app.kubernetes.io/managed-by=database-controller ",
			"secrets shop app.kubernetes.io/managed-by=database-controller ",
			"services shop app.kubernetes.io/managed-by=database-controller ",
			"statefulsets shop app.kubernetes.io/managed-by=database-controller ",
		}},
		{name: "claim events", factory: newClaimEventInformerFactory(eventsClient, ns), client: eventsClient, listed: []string{
			"events shop  involvedObject.kind=PersistentVolumeClaim"}},
		{name: "parameters", factory: newLabelledInformerFactory(configMapsClient, ns, dbv1alpha1.LabelParameters, &corev1.ConfigMap{},
			coreinformers.NewFilteredConfigMapInformer), client: configMapsClient, listed: []string{"configmaps shop dbcontroller.io/parameters=true "}},
		{name: "TLS", factory: newLabelledInformerFactory(tlsClient, ns, dbv1alpha1.LabelTLS, &corev1.Secret{},
			coreinformers.NewFilteredSecretInformer), client: tlsClient, listed: []string{"secrets shop dbcontroller.io/tls=true "}},
		{name: "nodes", factory: newNodeInformerFactory(nodesClient), client: nodesClient, listed: []string{"nodes   "}},
		{name: "Databases", factory: dbFactory},
	}
	for i := range factories {
		switch f := factories[i].factory.(type) {
		case kubeinformers.SharedInformerFactory:
			factories[i].informerFor = func(obj runtime.Object) cache.SharedIndexInformer { return f.InformerFor(obj, nil) }
		case informers.SharedInformerFactory:
			factories[i].informerFor = func(obj runtime.Object) cache.SharedIndexInformer { return f.InformerFor(obj, nil) }
		}
	}
	if _, err := NewController(ctx, Config{KubeClient: managedClient, DBClient: dbs, KubeInformers: kubeFactory, DBInformers: dbFactory,
		ClaimEventInformers: factories[1].factory.(kubeinformers.SharedInformerFactory), ParametersConfigMapInformers: factories[2].factory.(kubeinformers.SharedInformerFactory),
		TLSSecretInformers: factories[3].factory.(kubeinformers.SharedInformerFactory), NodeInformers: factories[4].factory.(kubeinformers.SharedInformerFactory),
		Recorder: record.NewFakeRecorder(10)}); err != nil {
		t.Fatal(err)
	}
	started := 0
	for _, f := range factories {
		f.factory.Start(ctx.Done())
		for typ, ok := range f.factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				t.Fatalf("%s: %v did not sync", f.name, typ)
			}
			started++
			informer := f.informerFor(reflect.New(typ.Elem()).Interface().(runtime.Object))
			_, byNamespace := informer.GetIndexer().GetIndexers()[cache.NamespaceIndex]
			if want := typ == reflect.TypeFor[*corev1.Pod](); byNamespace != want {
				t.Errorf("%s: the informer of %v has an index by namespace: %v, want %v", f.name, typ, byNamespace, want)
			}
		}
		if f.client == nil {
			continue
		}
		var listed []string
		for _, a := range f.client.Actions() {
			if l, ok := a.(core.ListActionImpl); ok {
				r := l.GetListRestrictions()
				listed = append(listed, fmt.Sprintf("%s %s %s %s", a.GetResource().Resource, a.GetNamespace(), r.Labels, r.Fields))
			}
		}
		slices.Sort(listed)
		if !slices.Equal(listed, f.listed) {
			t.Errorf("%s: listed\n%s\nwant\n%s", f.name, strings.Join(listed, "\n"), strings.Join(f.listed, "\n"))
		}
	}
	// The managed kinds, claims' events, ConfigMaps, TLS Secrets, nodes,
	// Databases and their backups.
	if want := 7 + 1 + 1 + 1 + 1 + 2; started != want {
		t.Errorf("%d informers started, want %d", started, want)
	}
}

// newEmptyController is a controller over fake clientsets with no object,
// its informers as main makes them, not started.
func newEmptyController(ctx context.Context, t *testing.T) (*Controller, kubeinformers.SharedInformerFactory,
	informers.SharedInformerFactory, kubeinformers.SharedInformerFactory) {
	t.Helper()
	kube := k8sfake.NewClientset()
	dbs := fake.NewSimpleClientset()
	kubeFactory, dbFactory := newInformerFactories(kube, dbs, metav1.NamespaceAll, 0)
	eventFactory := newClaimEventInformerFactory(kube, metav1.NamespaceAll)
	c, err := NewController(ctx, Config{KubeClient: kube, DBClient: dbs, KubeInformers: kubeFactory, DBInformers: dbFactory,
		ClaimEventInformers: eventFactory, Recorder: record.NewFakeRecorder(10)})
	if err != nil {
		t.Fatal(err)
	}
	return c, kubeFactory, dbFactory, eventFactory
}

// /readyz fails until every informer cache has synced; /healthz does not
// wait for them.
func TestReadyzWaitsForTheCaches(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, kubeFactory, dbFactory, eventFactory := newEmptyController(ctx, t)
	srv := httptest.NewServer(healthHandler(c, nil))
	defer srv.Close()
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if code := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the caches synced = %d, want 503", code)
	}
	if code := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	kubeFactory.Start(ctx.Done())
	dbFactory.Start(ctx.Done())
	kubeFactory.WaitForCacheSync(ctx.Done())
	dbFactory.WaitForCacheSync(ctx.Done())
	if code := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the claims' events synced = %d, want 503", code)
	}
	eventFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.cachesSynced...) {
		t.Fatal("caches did not sync")
	}
	if code := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the caches synced = %d, want 200", code)
	}
}

// A stop asked for before the caches synced (an API server that does not
// answer, then SIGTERM) ends Run without an error: the controller stopped
// as told.
func TestStopBeforeTheCachesSynced(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	c, _, _, _ := newEmptyController(ctx, t)
	// The informers are never started: their caches never sync.
	cancel()
	if err := c.Run(ctx, 1, time.Second); err != nil {
		t.Errorf("Run stopped before the caches synced = %v, want nil", err)
	}
	if !c.workqueue.ShuttingDown() {
		t.Error("the work queue is not shut down")
	}
}

// The default --shutdown-timeout gives in-flight syncs time to finish.
func TestDefaultShutdownTimeout(t *testing.T) {
	var o options
	o.addFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	if o.drainTimeout != 30*time.Second {
		t.Fatalf("default --shutdown-timeout = %s, want 30s", o.drainTimeout)
	}
}

// The controller collects its garbage at GOGC 50 unless GOGC is in its
// environment, which then rules as the runtime read it.
func TestGCPercentIsFiftyUnlessGOGCIsSet(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    string
		inForce int
	}{
		{"GOGC not set", map[string]string{"GOMEMLIMIT": "1GiB"}, "50", 50},
		{"GOGC set", map[string]string{"GOGC": "200"}, "200", 100},
		{"GOGC set empty, the runtime's default", map[string]string{"GOGC": ""}, "", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100) // as the runtime starts without GOGC
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			if got := setGCPercent(lookup); got != tc.want {
				t.Errorf("setGCPercent = %q, want %q", got, tc.want)
			}
			if got := debug.SetGCPercent(100); got != tc.inForce {
				t.Errorf("GC percent in force = %d, want %d", got, tc.inForce)
			}
		})
	}
}

// The clients ask the API server for gzip only with --kube-api-compression.
func TestKubeAPICompression(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--kube-api-compression"}, "gzip"},
	} {
		asked := make(chan string, 1)
		// TLS, as every API server: client-go gives a plain-HTTP config
		// Go's default transport, compression and all.
		server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case asked <- r.Header.Get("Accept-Encoding"):
			default:
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[]}`)
		}))
		var o options
		fs := flag.NewFlagSet("controller", flag.ContinueOnError)
		o.addFlags(fs)
		if err := fs.Parse(append([]string{"--master=" + server.URL}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		cfg, err := restConfig(o)
		if err != nil {
			t.Fatal(err)
		}
		cfg.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
		client, err := kubernetes.NewForConfig(protobufConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Secrets("ns").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := <-asked; got != tc.want {
			t.Errorf("%v: Accept-Encoding %q, want %q", tc.args, got, tc.want)
		}
		server.Close()
	}
}

// blockingAPIServer answers creates, holding the Secret's until release is
// closed. It records whether a held request was cancelled by its client.
type blockingAPIServer struct {
	entered   chan struct{}
	release   chan struct{}
	held      chan struct{} // closed when the held create has been answered or dropped
	once      sync.Once
	cancelled atomic.Bool
	creates   atomic.Int32
}

func (s *blockingAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost {
		http.Error(w, "unexpected "+r.Method, http.StatusBadRequest)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/secrets") {
		s.once.Do(func() { close(s.entered) })
		defer close(s.held)
		select {
		case <-s.release:
		case <-r.Context().Done():
			s.cancelled.Store(true)
			return
		}
	}
	s.creates.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

// runUntilShutdownDuringASync starts Run with drain, waits until a sync is
// inside the Secret's create, cancels Run's context, waits hold, then lets
// the create answer. It returns the server and whether Run returned before
// the create was answered.
func runUntilShutdownDuringASync(t *testing.T, drain, hold time.Duration) (*blockingAPIServer, bool) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	api := &blockingAPIServer{entered: make(chan struct{}), release: make(chan struct{}), held: make(chan struct{})}
	srv := httptest.NewServer(api)
	defer srv.Close()
	defer func() {
		select {
		case <-api.release:
		default:
			close(api.release)
		}
	}()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeJSON}})
	if err != nil {
		t.Fatal(err)
	}

	db := actiontest.NewDatabase("orders", "postgresql", "16", 1)
	dbs := fake.NewSimpleClientset(db)
	dbFactory := informers.NewSharedInformerFactory(dbs, 0)
	kubeFactory := kubeinformers.NewSharedInformerFactory(k8sfake.NewClientset(), 0)
	eventFactory := kubeinformers.NewSharedInformerFactory(k8sfake.NewClientset(), 0)
	c, err := NewController(ctx, Config{KubeClient: kube, DBClient: dbs, KubeInformers: kubeFactory, DBInformers: dbFactory,
		ClaimEventInformers: eventFactory, Recorder: record.NewFakeRecorder(100), Random: actiontest.PasswordSource()})
	if err != nil {
		t.Fatal(err)
	}
	kubeFactory.Start(ctx.Done())
	dbFactory.Start(ctx.Done())
	eventFactory.Start(ctx.Done())

	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1, drain) }()
	select {
	case <-api.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no sync reached the Secret's create")
	}
	cancel()
	returnedEarly := false
	select {
	case <-done:
		returnedEarly = true
	case <-time.After(hold):
	}
	if returnedEarly {
		// The server sees the client's cancellation on its own time.
		select {
		case <-api.held:
		case <-time.After(30 * time.Second):
		}
	}
	close(api.release)
	if !returnedEarly {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after the in-flight sync finished")
		}
	}
	return api, returnedEarly
}

// On shutdown, Run stops handing out work but lets a sync in flight finish
// its writes, within the drain timeout.
func TestShutdownLetsInFlightSyncsFinish(t *testing.T) {
	api, returnedEarly := runUntilShutdownDuringASync(t, 30*time.Second, 500*time.Millisecond)
	if returnedEarly {
		t.Fatal("Run returned while a sync was still writing")
	}
	if api.cancelled.Load() {
		t.Fatal("the in-flight create was cancelled by the shutdown")
	}
	// The Secret, both Services and the StatefulSet: the pass ran to its end.
	if n := api.creates.Load(); n != 4 {
		t.Fatalf("%d creates answered, want 4", n)
	}
}

// Past the drain timeout, in-flight syncs are cancelled so that the process
// can exit.
func TestShutdownCancelsSyncsPastTheDrainTimeout(t *testing.T) {
	api, returnedEarly := runUntilShutdownDuringASync(t, 100*time.Millisecond, 10*time.Second)
	if !returnedEarly {
		t.Fatal("Run waited past its drain timeout")
	}
	if !api.cancelled.Load() {
		t.Fatal("the in-flight create was not cancelled after the drain timeout")
	}
}

// Go's profiles are served beside /metrics only with --profiling, which is
// off by default.
func TestProfilingIsServedOnlyWhenAsked(t *testing.T) {
	var o options
	o.addFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	if o.profiling {
		t.Fatal("--profiling is on by default")
	}
	for _, tc := range []struct {
		profiling bool
		want      int
	}{{false, http.StatusNotFound}, {true, http.StatusOK}} {
		srv := httptest.NewServer(metricsHandler(metrics.New(), tc.profiling))
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("profiling %v: GET %s = %d, want %d", tc.profiling, path, resp.StatusCode, tc.want)
			}
		}
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("profiling %v: GET /metrics = %d, want 200", tc.profiling, resp.StatusCode)
		}
		srv.Close()
	}
}
