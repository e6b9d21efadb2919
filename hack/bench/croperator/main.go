// Command croperator is the benchmark's comparison operator (issue 30): the
// same Database API reconciled by a plain controller-runtime operator,
// written the way a typical kubebuilder user writes one. It takes the
// manager's defaults (one client reading from default caches of every
// Database, Secret, Service and StatefulSet in the namespace, no label
// selectors, no transforms), calls controllerutil.CreateOrUpdate for each
// child, made by the project's own packages as hack/bench/floor.go makes
// them, and updates the status when it changed. On a child that exists it
// sets only what a user changes (replicas, images, a Service's selector),
// as the kubebuilder samples do: setting the whole spec would update every
// child at every pass, as the API server's defaults differ from it. It is deliberately untuned:
// it stands for what a user would pick instead of database-controller, and
// must stay that way for the comparison to mean anything.
//
// hack/bench runs it as it runs ./controller, with the same flags:
//
//	make bench-operator && BENCH_CONTROLLER=_output/bench/croperator make bench
//
// It is a module of its own, so that the product's go.mod never sees
// controller-runtime.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	clientmetrics "k8s.io/client-go/tools/metrics"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	dbmetrics "github.com/dbcontroller/database-controller/pkg/metrics"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(dbv1alpha1.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr, probeAddr, namespace string
		workers, burst                    int
		qps                               float64
		resync                            time.Duration
		profiling, showVersion            bool
	)
	// --kubeconfig is controller-runtime's own flag (ctrl.GetConfigOrDie).
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metrics endpoint binds to.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.StringVar(&namespace, "namespace", "", "Watch this namespace only; all namespaces when empty.")
	flag.IntVar(&workers, "workers", 4, "MaxConcurrentReconciles of the Database controller.")
	flag.Float64Var(&qps, "kube-api-qps", 50, "QPS of the client to the API server.")
	flag.IntVar(&burst, "kube-api-burst", 100, "Burst of the client to the API server.")
	flag.DurationVar(&resync, "resync-period", 10*time.Hour, "SyncPeriod of the caches.")
	flag.BoolVar(&profiling, "profiling", false, "Serve /debug/pprof/ on the metrics address.")
	flag.BoolVar(&showVersion, "version", false, "Print the version and exit.")
	// hack/bench gives the controller --server-access=direct by default
	// (BENCH_CONTROLLER_ARGS); this operator never reaches the servers.
	flag.String("server-access", "", "Ignored: accepted for hack/bench's default flags.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	if showVersion {
		fmt.Println(version())
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	// The benchmark's report counts requests by resource, as the product's
	// rest_client_requests_by_resource_total does; controller-runtime has
	// no such metric.
	metrics.Registry.MustRegister(requestsByResource)
	clientmetrics.RequestLatency = byResource{next: clientmetrics.RequestLatency}

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS = float32(qps)
	cfg.Burst = burst

	cacheOpts := cache.Options{SyncPeriod: &resync}
	if namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr}
	if profiling {
		metricsOpts.ExtraHandlers = map[string]http.Handler{
			"/debug/pprof/":        http.HandlerFunc(pprof.Index),
			"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
			"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
			"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
			"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOpts,
		HealthProbeBindAddress: probeAddr,
		Cache:                  cacheOpts,
	})
	if err != nil {
		setupLog.Error(err, "unable to create manager")
		os.Exit(1)
	}

	if err := (&DatabaseReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr, workers); err != nil {
		setupLog.Error(err, "unable to create controller", "controller", "Database")
		os.Exit(1)
	}
	cached, err := newCachedCollector(context.Background(), mgr.GetCache(), map[string]client.Object{
		"Database": &dbv1alpha1.Database{}, "Secret": &corev1.Secret{}, "Service": &corev1.Service{}, "StatefulSet": &appsv1.StatefulSet{}})
	if err != nil {
		setupLog.Error(err, "unable to count the cached objects")
		os.Exit(1)
	}
	metrics.Registry.MustRegister(newDatabaseCollector(mgr.GetCache()), cached)

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("caches", cachesSynced(mgr.GetCache(),
		&dbv1alpha1.Database{}, &corev1.Secret{}, &corev1.Service{}, &appsv1.StatefulSet{})); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("starting manager", "version", version(), "namespace", namespace, "workers", workers)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

// cachesSynced is ready once the informers of the controller's kinds have
// synced. The manager's caches start empty, and the controller adds its
// informers only when it starts: the cache alone would say synced before
// any Database is known.
func cachesSynced(c cache.Cache, objs ...client.Object) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		for _, obj := range objs {
			informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
			if err != nil {
				return err
			}
			if !informer.HasSynced() {
				return fmt.Errorf("the %T informer has not synced", obj)
			}
		}
		return nil
	}
}

// version is one line: this program and the versions it is built with.
func version() string {
	v := "croperator"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, dep := range info.Deps {
		switch dep.Path {
		case "sigs.k8s.io/controller-runtime", "k8s.io/client-go":
			v += " " + dep.Path + "@" + dep.Version
		}
	}
	return v + " " + info.GoVersion
}

var requestsByResource = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "rest_client_requests_by_resource_total",
	Help: "HTTP requests to the API server, by verb and resource (and subresource).",
}, []string{"verb", "resource"})

// byResource counts each request client-go completes by verb and resource,
// where client-go reports its latency (as the product does), and passes
// the latency on to controller-runtime's own adapter.
type byResource struct{ next clientmetrics.LatencyMetric }

func (b byResource) Observe(ctx context.Context, verb string, u url.URL, latency time.Duration) {
	requestsByResource.WithLabelValues(verb, dbmetrics.ResourceOf(u.Path)).Inc()
	b.next.Observe(ctx, verb, u, latency)
}

// databaseCollector is database_controller_databases{phase,engine}, as the
// product exports it, read from the manager's cache when scraped.
type databaseCollector struct {
	reader client.Reader
	desc   *prometheus.Desc
}

func newDatabaseCollector(reader client.Reader) *databaseCollector {
	return &databaseCollector{reader: reader, desc: prometheus.NewDesc(
		"database_controller_databases", "Databases by phase and engine.", []string{"phase", "engine"}, nil)}
}

func (c *databaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *databaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var dbs dbv1alpha1.DatabaseList
	// No deep copy: the benchmark scrapes every second, and copying every
	// Database for a count would weigh on what it measures.
	if err := c.reader.List(ctx, &dbs, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	type key struct{ phase, engine string }
	counts := map[key]int{}
	for i := range dbs.Items {
		phase := string(dbs.Items[i].Status.Phase)
		if phase == "" {
			phase = "Pending"
		}
		counts[key{phase, string(dbs.Items[i].Spec.Engine)}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.phase, k.engine)
	}
}

// cachedCollector is database_controller_cached_objects{kind}, as the
// product exports it: how many objects the manager's cache holds of each
// kind the operator reads. The manager's informers of one namespace hide
// their stores (a multi-namespace informer), so each is counted by an
// event handler of its own, added and deleted, and read when scraped.
type cachedCollector struct {
	counts map[string]*atomic.Int64
	desc   *prometheus.Desc
}

type informerGetter interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

func newCachedCollector(ctx context.Context, informers informerGetter, kinds map[string]client.Object) (*cachedCollector, error) {
	c := &cachedCollector{counts: map[string]*atomic.Int64{}, desc: prometheus.NewDesc(
		"database_controller_cached_objects", "Objects held in the controller's informer caches, by kind.", []string{"kind"}, nil)}
	for kind, obj := range kinds {
		informer, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		n := &atomic.Int64{}
		c.counts[kind] = n
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { n.Add(1) },
			DeleteFunc: func(any) { n.Add(-1) },
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *cachedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *cachedCollector) Collect(ch chan<- prometheus.Metric) {
	for kind, n := range c.counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n.Load()), kind)
	}
}
