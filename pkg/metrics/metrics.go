// Package metrics exposes the controller's Prometheus metrics: syncs by
// result, Databases by phase and engine, the workqueue, and every request
// client-go makes to the API server.
package metrics

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"

	listers "github.com/dbcontroller/database-controller/pkg/generated/listers/dbcontroller/v1alpha1"
)

const namespace = "database_controller"

// Metrics holds the controller's own collectors.
type Metrics struct {
	// Registry holds every collector below plus the Go and process collectors.
	Registry *prometheus.Registry

	syncs        *prometheus.CounterVec
	syncDuration *prometheus.HistogramVec
	queued       *prometheus.CounterVec
	// primaryChanges counts the changes of each Database's primary
	// (state.go).
	primaryChanges primaryChanges
	// state writes the Databases' state when scraped (state.go); nil until
	// RegisterDatabaseState.
	state *stateWriter
	// serverDials counts the connections to the servers (servers.go).
	serverDials *prometheus.CounterVec
}

// New registers the controller's metrics, the workqueue provider and the
// client-go request adapters. client-go and the workqueue allow one global
// provider each, so New must be called once per process.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "reconcile_total",
			Help: "Syncs of a Database, by result: success, skipped (settled, and nothing it depends on changed) or error.",
		}, []string{"result"}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "reconcile_duration_seconds",
			Help:    "Duration of a Database sync, by result.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"result"}),
		queued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "queued_total",
			Help: "Why Databases were put on the work queue: a change (add, update, delete, resync) of an object of a kind (by), " +
				"or a timer of the controller's own (by=\"timer\"; change: retry, recheck, poll, backup schedule; counted when set). " +
				"A Database already queued is queued once, so there are at least as many of these as syncs.",
		}, []string{"by", "change"}),
	}
	reg.MustRegister(m.syncs, m.syncDuration, m.queued,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	workqueue.SetProvider(newWorkqueueProvider(reg))
	registerClientMetrics(reg)
	return m
}

// ObserveSync records one sync.
func (m *Metrics) ObserveSync(result string, d time.Duration) {
	m.syncs.WithLabelValues(result).Inc()
	m.syncDuration.WithLabelValues(result).Observe(d.Seconds())
}

// ObserveQueued records why a Database was put on the work queue.
func (m *Metrics) ObserveQueued(by, change string) {
	m.queued.WithLabelValues(by, change).Inc()
}

// RegisterDatabases exposes the count of Databases by phase and engine,
// read from the lister when scraped, so it costs nothing between scrapes.
func (m *Metrics) RegisterDatabases(lister listers.DatabaseLister) {
	m.Registry.MustRegister(&databaseCollector{lister: lister, desc: prometheus.NewDesc(
		namespace+"_databases", "Databases by phase and engine.", []string{"phase", "engine"}, nil)})
}

// RegisterCached exposes how many objects the controller's informer caches
// hold, by kind (caches, several caches of a kind summed), counted when
// scraped: what it keeps in memory, next to its RSS.
func (m *Metrics) RegisterCached(caches map[string][]cache.Store) {
	m.Registry.MustRegister(newCachedCollector(caches))
}

func newCachedCollector(caches map[string][]cache.Store) *cachedCollector {
	return &cachedCollector{caches: caches, desc: prometheus.NewDesc(namespace+"_cached_objects",
		"Objects held in the controller's informer caches, by kind.", []string{"kind"}, nil)}
}

type cachedCollector struct {
	caches map[string][]cache.Store
	desc   *prometheus.Desc
}

func (c *cachedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *cachedCollector) Collect(ch chan<- prometheus.Metric) {
	for kind, stores := range c.caches {
		n := 0
		for _, s := range stores {
			n += len(s.ListKeys())
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), kind)
	}
}

type databaseCollector struct {
	lister listers.DatabaseLister
	desc   *prometheus.Desc
}

func (c *databaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *databaseCollector) Collect(ch chan<- prometheus.Metric) {
	dbs, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	type key struct{ phase, engine string }
	counts := map[key]int{}
	for _, db := range dbs {
		phase := string(db.Status.Phase)
		if phase == "" {
			phase = "Pending"
		}
		counts[key{phase, string(db.Spec.Engine)}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.phase, k.engine)
	}
}

// workqueueProvider implements workqueue.MetricsProvider with Prometheus.
type workqueueProvider struct {
	adds, retries                   *prometheus.CounterVec
	depthGauge, unfinished, longest *prometheus.GaugeVec
	latency, workDuration           *prometheus.HistogramVec
}

func newWorkqueueProvider(reg prometheus.Registerer) *workqueueProvider {
	sub := "workqueue"
	p := &workqueueProvider{
		depthGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "depth",
			Help: "Current depth of the workqueue."}, []string{"name"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "adds_total",
			Help: "Adds handled by the workqueue."}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "retries_total",
			Help: "Retries handled by the workqueue."}, []string{"name"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "unfinished_work_seconds",
			Help: "Seconds of work in progress not yet observed by work_duration."}, []string{"name"}),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "longest_running_processor_seconds",
			Help: "Seconds the longest running processor has been running."}, []string{"name"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: sub, Name: "queue_duration_seconds",
			Help: "Seconds an item stays in the workqueue before being requested.", Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10)}, []string{"name"}),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: sub, Name: "work_duration_seconds",
			Help: "Seconds processing an item from the workqueue takes.", Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10)}, []string{"name"}),
	}
	reg.MustRegister(p.depthGauge, p.adds, p.retries, p.unfinished, p.longest, p.latency, p.workDuration)
	return p
}

func (p *workqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depthGauge.WithLabelValues(name)
}
func (p *workqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}
func (p *workqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}
func (p *workqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name)
}
func (p *workqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}
func (p *workqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name)
}
func (p *workqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}

// Client-go request metrics.

var (
	requestResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "HTTP requests to the API server, by status code, method and host.",
	}, []string{"code", "method", "host"})
	requestsByResource = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_by_resource_total",
		Help: "HTTP requests to the API server, by verb and resource (and subresource).",
	}, []string{"verb", "resource"})
	requestLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency to the API server, by verb.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"verb"})
	rateLimiterLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Time requests waited in the client-side rate limiter, by verb.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"verb"})
)

func registerClientMetrics(reg prometheus.Registerer) {
	reg.MustRegister(requestResults, requestsByResource, requestLatency, rateLimiterLatency)
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:      resultAdapter{},
		RequestLatency:     latencyAdapter{},
		RateLimiterLatency: rateLimiterAdapter{},
	})
}

type resultAdapter struct{}

func (resultAdapter) Increment(_ context.Context, code, method, host string) {
	requestResults.WithLabelValues(code, method, host).Inc()
}

type latencyAdapter struct{}

func (latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	requestLatency.WithLabelValues(verb).Observe(latency.Seconds())
	requestsByResource.WithLabelValues(verb, ResourceOf(u.Path)).Inc()
}

type rateLimiterAdapter struct{}

func (rateLimiterAdapter) Observe(_ context.Context, verb string, _ url.URL, latency time.Duration) {
	rateLimiterLatency.WithLabelValues(verb).Observe(latency.Seconds())
}

// ResourceOf extracts "resource" or "resource/subresource" from an API
// path: /api/v1/namespaces/ns/secrets/x -> secrets,
// /apis/g/v/namespaces/ns/databases/x/status -> databases/status.
func ResourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "other"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}
